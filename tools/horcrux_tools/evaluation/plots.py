"""The report's figures (matplotlib, Agg backend, imported lazily: the Lambda layer never
needs matplotlib). Each function writes one PNG and returns its file name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from horcrux_tools.evaluation.report import (
    REFERENCE_FIGURES,
    in_adversary_order,
    in_architecture_order,
)
from horcrux_tools.evaluation.runner import WINDOW_FULL_MEMORY, image_name

PLANNER_WINDOWS = (8, 16, 32)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def entropy_race(report: dict[str, Any], out: Path, voldemort: str = "reference") -> str | None:
    race = report["entropy_race"].get(voldemort, {})
    if not race:
        return None
    plt = _pyplot()
    fig, (ax, ex) = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True)
    colours = {"planner": "tab:blue", "planner-window:8": "tab:orange", "seed-heuristic": "tab:red"}
    for h, colour in colours.items():
        data = race.get(h)
        if data is None:
            continue
        turns = [t + 1 for t, v in enumerate(data["median"]) if v is not None]
        med = [v for v in data["median"] if v is not None]
        q1 = [v for v in data["q1"] if v is not None]
        q3 = [v for v in data["q3"] if v is not None]
        ax.plot(turns, med, color=colour, label=f"{h} (median)")
        ax.fill_between(turns, q1, q3, color=colour, alpha=0.2)
    base = race.get("planner") or next(iter(race.values()))
    twin = ax.twinx()
    t_axis = list(range(1, len(base["relocations_per_game"]) + 1))
    twin.bar(
        t_axis,
        base["relocations_per_game"],
        color="black",
        alpha=0.35,
        width=0.4,
        label="relocations per game",
    )
    twin.bar(
        [t + 0.4 for t in t_axis],
        base["decoys_per_game"],
        color="purple",
        alpha=0.35,
        width=0.4,
        label="decoys per game",
    )
    twin.set_ylabel("Voldemort's moves per game (vs planner)")
    ax.set_ylabel("Harry's map entropy (bits)")
    ax.set_title(f"The entropy race against `{voldemort}`: median and quartiles over games")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper right", fontsize=8)
    example = base.get("example")
    if example:
        ts = list(range(1, len(example["entropy"]) + 1))
        ex.plot(ts, example["entropy"], color="tab:blue", marker=".")
        for t in example["relocations"]:
            ex.axvline(t + 0.5, color="black", linestyle="--", alpha=0.7)
            ex.annotate(
                "relocation", (t + 0.5, max(example["entropy"])), rotation=90, fontsize=7, va="top"
            )
        for t in example["decoys"]:
            ex.axvline(t + 0.5, color="purple", linestyle=":", alpha=0.7)
            ex.annotate(
                "decoy",
                (t + 0.5, min(example["entropy"])),
                rotation=90,
                fontsize=7,
                va="bottom",
                color="purple",
            )
        outcome = "won" if example["win"] else "lost"
        ex.set_title(
            f"One game (planner, seed {example['seed']}, {outcome}): Voldemort's "
            "moves (after Harry's turn) push the entropy back up",
            fontsize=9,
        )
    ex.set_xlabel("turn")
    ex.set_ylabel("entropy (bits)")
    fig.tight_layout()
    name = image_name("entropy-race", voldemort)
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def _legend_outside(ax: Any) -> None:
    """The legend right of the axes, where it hides no bar or point (one entry per
    adversary: eight of them fill the plot's corner)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def win_rates(report: dict[str, Any], out: Path) -> str:
    plt = _pyplot()
    voldemorts = in_adversary_order(report)  # the run's order, also from the sorted JSON
    harrys = list(in_architecture_order(report["results"][voldemorts[0]]))
    fig, ax = plt.subplots(figsize=(11.5, 4.8))
    width = 0.8 / max(1, len(voldemorts))
    for i, v in enumerate(voldemorts):
        rows = report["results"][v]
        xs = [j + i * width for j, h in enumerate(harrys) if h in rows]
        rates = [100 * rows[h]["win_rate"] for h in harrys if h in rows]
        lo = [
            max(0.0, 100 * (rows[h]["win_rate"] - rows[h]["ci_low"])) for h in harrys if h in rows
        ]
        hi = [
            max(0.0, 100 * (rows[h]["ci_high"] - rows[h]["win_rate"])) for h in harrys if h in rows
        ]
        ax.bar(xs, rates, width, yerr=[lo, hi], capsize=2, label=f"vs {v}")
    ax.set_xticks([j + width * (len(voldemorts) - 1) / 2 for j in range(len(harrys))])
    ax.set_xticklabels(harrys, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("win rate (%), 95% Wilson CI")
    ax.set_ylim(0, 105)
    ax.set_title(f"Win rate by architecture ({report['meta']['games']} paired games each)")
    _legend_outside(ax)
    fig.tight_layout()
    name = "win-rates.png"
    fig.savefig(out / name, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def window_curve(rows: dict[str, Any], full_at: int = 50) -> list[tuple[int, Any]]:
    """(W, row) for each default `planner-window:W` row, plus the same brain with full
    memory (`planner-window:full`) at W = `full_at`; sorted by W."""
    points = []
    for h, r in rows.items():
        m = re.fullmatch(r"planner-window:(\d+)", h)
        if m:
            points.append((int(m.group(1)), r))
    if WINDOW_FULL_MEMORY in rows:
        points.append((full_at, rows[WINDOW_FULL_MEMORY]))
    return sorted(points, key=lambda p: p[0])


def memory_window(report: dict[str, Any], out: Path) -> str | None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drew = False
    for v in in_adversary_order(report):
        points = window_curve(report["results"][v])
        if len(points) < 2:
            continue
        xs = [p[0] for p in points]
        ys = [100 * p[1]["win_rate"] for p in points]
        err = [
            [max(0.0, 100 * (p[1]["win_rate"] - p[1]["ci_low"])) for p in points],
            [max(0.0, 100 * (p[1]["ci_high"] - p[1]["win_rate"])) for p in points],
        ]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"vs {v}")
        drew = True
    if not drew:
        plt.close(fig)
        return None
    if report["meta"].get("rules") == "classic":
        ref = [
            (int(h.rsplit(":", 1)[1]), v)
            for h, v in REFERENCE_FIGURES.items()
            if re.fullmatch(r"planner-window:\d+", h)
        ]
        ref.append((50, REFERENCE_FIGURES[WINDOW_FULL_MEMORY]))
        ax.plot(
            [w for w, _ in ref],
            [100 * v for _, v in ref],
            "x",
            color="grey",
            markersize=8,
            label="reference figure",
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks([8, 16, 32, 50])
    ax.set_xticklabels(["8", "16", "32", "full (50)"])
    ax.set_xlabel("events Harry remembers (W)")
    ax.set_ylabel("win rate (%)")
    ax.set_title("Same reasoning, different memory: the planner with a memory window")
    _legend_outside(ax)
    fig.tight_layout()
    name = "memory-window.png"
    fig.savefig(out / name, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def tokens_by_tier(report: dict[str, Any], out: Path, voldemort: str = "reference") -> str | None:
    ctx = report["contexts_by_turn"].get(voldemort)
    if not ctx:
        return None
    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for tier, colour in (
        ("compressed", "tab:green"),
        ("full", "tab:blue"),
        ("narrative", "tab:red"),
    ):
        vals = ctx["by_turn"][tier]
        ts = [t + 1 for t, v in enumerate(vals) if v is not None]
        ax.plot(ts, [v for v in vals if v is not None], color=colour, label=tier)
    ax.set_yscale("log")
    ax.set_xlabel("turn")
    ax.set_ylabel("estimated context tokens (median)")
    ax.set_title("Context tokens by turn")
    ax.legend()
    gated = report["results"][voldemort].get("gated")
    if gated and gated["decisions"]:
        tiers = gated["decisions"]["tiers"]
        names = list(tiers)
        med = [tiers[t]["tokens_median"] or 0 for t in names]
        p95 = [tiers[t]["tokens_p95"] or 0 for t in names]
        xs = range(len(names))
        bx.bar([x - 0.2 for x in xs], med, 0.4, label="median")
        bx.bar([x + 0.2 for x in xs], p95, 0.4, label="p95")
        bx.set_xticks(list(xs))
        bx.set_xticklabels([f"{t}\n{100 * tiers[t]['share']:.0f}% of decisions" for t in names])
        nm = ctx["narrative_modelled"]
        bx.axhline(
            nm["tokens_median"],
            color="tab:red",
            linestyle="--",
            label=f"narrative median {nm['tokens_median']:.0f}",
        )
        bx.set_ylabel("tokens per decision")
        bx.set_title("gated: tokens per decision by tier")
        bx.legend(fontsize=8)
    fig.tight_layout()
    name = "tokens-by-tier.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def write_all(report: dict[str, Any], out: Path) -> list[str]:
    """Every figure the report has data for; returns the file names written."""
    out.mkdir(parents=True, exist_ok=True)
    names: list[str | None] = [entropy_race(report, out, v) for v in report["entropy_race"]]
    names += [win_rates(report, out), memory_window(report, out)]
    names.append(tokens_by_tier(report, out))
    return [n for n in names if n]


__all__ = [
    "entropy_race",
    "memory_window",
    "tokens_by_tier",
    "win_rates",
    "window_curve",
    "write_all",
]
