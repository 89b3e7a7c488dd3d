"""The real-model experiment's section of docs/EVALUATION.md, and its two figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from horcrux_tools.evaluation.llm_experiment import CONTEXTS, GAME_CONTEXTS

DOCUMENTED_MODEL = {"tokens": 6000, "seconds": 25.0}
"""The latency model the rest of the report uses: a 6,000-token prompt takes about 25 s."""
ARTICLE_ZERO_TIER = 0.35
"""The share of decisions the design expects the zero tier to take (no tokens at all)."""

_CONTEXT_TEXT = {
    "compressed": "L1 compressed: the ~40-token working memory, the planner's candidate "
    "moves as the tool, a short system prompt (what ships)",
    "compressed-legal": "L1 compressed with every legal move in the tool and the long "
    "system prompt (the tool's ablation)",
    "full": "L1 full: a wider map, the last 12 signals, the board and the rules",
    "narrative": "narrative: the rules and every turn so far, re-sent each turn (the naive "
    "context-stuffing setup)",
}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, fmt: str = ".0f") -> str:
    return "-" if x is None else format(x, fmt)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def render_section(data: dict[str, Any], images: list[str]) -> list[str]:
    """The markdown lines of the real-model section."""
    meta = data["meta"]
    states = data["states"]
    games = data["games"]
    lat = data["latency"]
    price = meta["price"]
    free = price["input_per_mtok"] == 0 and price["output_per_mtok"] == 0
    lines = [
        "## A real model plays",
        "",
        f"Model `{meta['model']}` through the `{meta['backend']}` backend (the `anthropic` "
        "SDK, the production code path of the `llm` and `gated` brains); "
        f"{meta['workers']} worker(s), one single-threaded server each, on this 2-core "
        f"machine. The {meta['calls']} model calls took {_minutes(meta['call_seconds'])} "
        f"in all, about {_minutes(meta['call_seconds'] / max(1, meta['workers']))} of wall "
        "time. "
        + (
            "A local model has no price: its cost is 0 and no row below counts one."
            if free
            else f"Price {price['input_per_mtok']} / {price['output_per_mtok']} USD per Mtok."
        )
        + (f" {meta['note']}" if meta.get("note") else ""),
        "",
        f"### The same {meta['states']} decision states, each context",
        "",
        f"States: every turn Harry had to move in planner games against the `"
        f"{meta['voldemort']}` Voldemort (seeds from {meta['state_seed']}), drawn once; each "
        "context answers the same states (the ablation "
        f"`compressed-legal` the first {meta['legal_states']}). *Planner* is the share of "
        "answers equal to the planner's move in that state, *top* the share naming the "
        "likeliest location. Prompt tokens are the model's own count of the whole call "
        "(system prompt, tool schema, context), context tokens the project's estimate of "
        "the context alone.",
        "",
        "| context | states | planner (95% CI) | top | playable | unparsable | illegal "
        "| timeout | prompt tokens | context tokens | output tokens | latency median / p95 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for context in CONTEXTS:
        r = states.get(context)
        if r is None:
            continue
        o = r["outcomes"]
        lo, hi = r["agreement_ci"]
        lines.append(
            f"| `{context}` | {r['states']} | {_pct(r['agreement'])} ({_pct(lo)}-{_pct(hi)}) "
            f"| {_pct(r['top_location'])} | {_pct(o['llm'])} | {_pct(o['unparsable'])} "
            f"| {_pct(o['illegal'])} | {_pct(o['timeout'])} "
            f"| {_num(r['prompt_tokens_median'])} (max {r['prompt_tokens_max']}) "
            f"| {_num(r['context_tokens_median'])} | {_num(r['output_tokens_median'])} "
            f"| {_num(r['latency_s_median'], '.2f')} / {_num(r['latency_s_p95'], '.2f')} s |"
        )
    lines += ["", *[f"- `{c}`: {t}." for c, t in _CONTEXT_TEXT.items() if c in states], ""]
    uniform = (states.get("compressed") or {}).get("uniform_pick")
    if uniform:
        lines += [
            "Chance levels: a uniform pick among the compressed tool's offers would match "
            f"the planner {_pct(uniform['agreement'])} of the time and name the likeliest "
            f"location {_pct(uniform['top_location'])} of the time (the offers include an "
            "attack and a search there); with every legal move in the tool, a uniform "
            "location is the likeliest one 6.7% of the time.",
            "",
        ]
    lines += [
        f"### Whole games (seeds from {meta['seed']}, `{meta['voldemort']}` Voldemort; "
        "each row's games are its first seeds, so rows are paired on the seeds they share)",
        "",
        "| Harry | games | win rate (95% CI) | turns | destroyed | stale | retrieval | overload "
        "| decay | LLM calls | playable | prompt tokens | latency median / p95 | tiers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label in (*GAME_CONTEXTS, "gated"):
        r = games.get(label)
        if r is None:
            continue
        f = r["failures_per_game"]
        lo, hi = r["ci"]
        tiers = ", ".join(f"{t} {_pct(s)}" for t, s in r["tier_shares"].items())
        name = f"gated:{meta['backend']}" if label == "gated" else f"llm ({label})"
        lines.append(
            f"| `{name}` | {r['games']} | {_pct(r['win_rate'])} ({_pct(lo)}-{_pct(hi)}) "
            f"| {r['mean_turns']:.1f} | {r['mean_destroyed']:.2f} "
            f"| {f.get('stale', 0):.2f} | {f.get('retrieval', 0):.2f} "
            f"| {f.get('overload', 0):.2f} | {f.get('decay', 0):.2f} "
            f"| {r['llm_calls']} | {_pct(r['outcomes']['llm'])} "
            f"| {_num(r['prompt_tokens_median'])} "
            f"| {_num(r['latency_s_median'], '.2f')} / {_num(r['latency_s_p95'], '.2f')} s "
            f"| {tiers} |"
        )
    gated = games.get("gated")
    if gated is not None:
        zero = gated["tier_shares"].get("zero", 0.0)
        lines += [
            "",
            f"The gated brain's zero tier took {_pct(zero)} of its decisions (the design "
            f"expects about {_pct(ARTICLE_ZERO_TIER)}); the failure modes are counted per "
            "game, as in the offline rows above.",
        ]
    a, b = lat["a_s"], lat["b_s_per_token"]
    doc_b = DOCUMENTED_MODEL["seconds"] / DOCUMENTED_MODEL["tokens"]
    lines += [
        "",
        "### Latency against prompt tokens",
        "",
        f"Fitted on {lat['points']} measured calls (every call above and a sweep of "
        "prompts no cache could serve, up to "
        f"{lat['tokens_max']:.0f} tokens): seconds = {a:.2f} + {b * 1000:.2f} x "
        "(prompt tokens evaluated) / 1,000, where *evaluated* is the prompt less what the "
        "server's prompt cache served. It predicts "
        f"{lat['predict_s']['2000']:.1f} s at 2,000 tokens and "
        f"{lat['predict_s']['6000']:.1f} s at 6,000 tokens; the documented model "
        f"(6,000 tokens about {DOCUMENTED_MODEL['seconds']:.0f} s, {doc_b * 1000:.2f} s per "
        f"1,000) predicts {doc_b * 2000:.1f} s and {doc_b * 6000:.1f} s. The median call "
        f"also writes {_num(lat['output_tokens_median'])} output tokens.",
        "",
    ]
    for name in images:
        lines += [f"![{name}](img/{name})", ""]
    lines += [
        "### What a 135M model can and cannot show",
        "",
        "It can show the plumbing and the costs for real: every decision above went through "
        "the same code as a Claude decision (the `anthropic` SDK, a Messages API endpoint, "
        "the tool whose schema is the offered moves, validation, the fallback, the "
        "records), its replies are schema-valid tool calls, and its token counts and "
        "latencies are measured, not modelled. It shows what each context costs: the whole "
        "prompt, not the context alone, is what a call pays, and the fixed part (system "
        "prompt and tool schema) dominates a compressed call unless the tool is shrunk.",
        "",
        "It cannot show what a capable model does with good memory. A model this small "
        "reads a belief map barely better than chance, so its agreement with the planner "
        "and its win rates measure the model, not the memory; the offline rows above (the "
        "same contexts rendered and counted, the planner deciding) and the memory-window "
        "ablation are the project's evidence about memory itself. Whether the compressed "
        "context lets a real reasoner decide as well as the full one needs a real "
        "reasoner:",
        "",
        "```bash",
        "horcrux evaluate --llm anthropic --llm-games 20 --out docs   # Claude (needs "
        "ANTHROPIC_API_KEY; costs money)",
        "HORCRUX_LOCAL_MODEL=qwen2.5-7b horcrux evaluate --llm local "
        "--llm-url http://127.0.0.1:8080 --out docs",
        "```",
        "",
        "The second form points the same profile at any Anthropic-compatible server "
        "(a bigger model under llama-server, a proxy); docs/MEMORY.md lists the profile's "
        "settings.",
        "",
    ]
    return lines


def write_plots(data: dict[str, Any], out: Path) -> list[str]:
    """Agreement by context and latency against tokens, as PNGs in `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    states = data["states"]
    if states:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        labels = [c for c in CONTEXTS if c in states]
        xs = range(len(labels))
        ax.bar(
            [x - 0.2 for x in xs],
            [states[c]["agreement"] for c in labels],
            0.4,
            label="planner's move",
        )
        ax.bar(
            [x + 0.2 for x in xs],
            [states[c]["top_location"] for c in labels],
            0.4,
            label="likeliest location",
        )
        ax.set_xticks(list(xs), labels)
        ax.set_ylabel("share of states")
        ax.set_title(f"{data['meta']['model']}: same states, each context")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "llm-agreement.png", dpi=110)
        plt.close(fig)
        names.append("llm-agreement.png")
    points = [
        (a["tokens_in"] - a["tokens_cached"], a["latency_s"], a["context"]) for a in data["answers"]
    ]
    points += [(p[0] - p[1], p[3], "sweep") for p in data["sweep"]]
    if points:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for label in (*CONTEXTS, "sweep"):
            sel = [(x, y) for x, y, c in points if c == label]
            if sel:
                ax.scatter([x for x, _ in sel], [y for _, y in sel], s=8, label=label)
        lat = data["latency"]
        top = max(x for x, _, _ in points)
        ax.plot([0, top], [lat["a_s"], lat["a_s"] + lat["b_s_per_token"] * top], "k-", lw=1)
        ax.set_xlabel("prompt tokens evaluated (the model's count, less the cache)")
        ax.set_ylabel("seconds per decision")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "llm-latency.png", dpi=110)
        plt.close(fig)
        names.append("llm-latency.png")
    return names


__all__ = ["ARTICLE_ZERO_TIER", "DOCUMENTED_MODEL", "render_section", "write_plots"]
