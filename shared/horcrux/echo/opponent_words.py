"""Who the opponent is, in words (`echo.opponent`'s posterior, for the operator's and the
player's memory views and the memory line): the likeliest classes of behaviour, each policy
as a sentence of Voldemort and Harry, the item's summary, and the line's few words."""

from __future__ import annotations

from dataclasses import replace

from horcrux.agents.family import FamilyParams
from horcrux.belief import ties
from horcrux.echo.model import Opponent
from horcrux.echo.opponent import PLAY_BELOW, TOP, behaviours, p_none, plays


def classes(item: Opponent, n: int = 3) -> list[tuple[FamilyParams, float]]:
    """The `n` likeliest classes of behaviour (a behaviour without its trigger's
    parameter: the threshold, the gain or the delay), each with its weight in the family
    and, as its parameter, the weighted mean of its behaviours' (best first)."""
    groups: dict[FamilyParams, list[tuple[FamilyParams, float]]] = {}
    for p, w in behaviours(item, 4 * TOP):
        key = replace(p, delay=0, threshold=0.0, gain=0.0)
        groups.setdefault(key, []).append((p, w))
    out: list[tuple[FamilyParams, float]] = []
    for key, members in groups.items():
        total = sum(w for _, w in members)
        mean = replace(
            key,
            delay=round(sum(p.delay * w for p, w in members) / total) if total else 0,
            threshold=sum(p.threshold * w for p, w in members) / total if total else 0.0,
            gain=sum(p.gain * w for p, w in members) / total if total else 0.0,
        )
        out.append((mean, total))
    return out[:n]


def describe(params: FamilyParams) -> str:
    """One policy in words, of Voldemort and Harry (the operator's and the player's views;
    the memory line, which Harry reads, has `short`)."""
    reader = {
        "tally": "a count of Harry's recent searches",
        "bayes-static": "a map of Harry's evidence that assumes nothing moves",
        "bayes-moving": "a map of Harry's evidence that allows for relocations",
        "heuristic": "a simple tally of Harry's positives",
        "copy": "a copy of Harry's own play",
    }[params.observer]
    if params.trigger == "positive":
        after = "right" if params.delay == 0 else f"{params.delay} turns"
        when = f"relocates a Horcrux {after} after Harry finds it"
    elif params.trigger == "threshold":
        when = (
            f"relocates a Horcrux once {reader} puts Harry's confidence in it at about "
            f"{params.threshold:.2f}"
        )
    elif params.trigger == "predicted":
        when = f"relocates the Horcrux {reader} says Harry attacks next"
    elif params.trigger == "hazard":
        when = f"relocates more often the surer {reader} says Harry is (gain {params.gain:.2f})"
    else:
        when = "never relocates"
    where = {
        "uniform": "anywhere free",
        "least-likely": "where Harry least expects it",
        "far": "where Harry looked longest ago",
    }[params.destination]
    where_decoys = {
        "observer-top": f"where {reader} says Harry expects a Horcrux",
        "evidence-top": "where Harry's searches point",
        "blind-early": "where Harry's evidence is strongest",
    }
    when_decoys = {
        "early": "from the start",
        "spread": "spread over the game",
        "late": "from turn 25",
    }
    decoys = (
        "plants no decoys"
        if params.decoys == "never"
        else f"plants decoys {where_decoys[params.decoys]}, {when_decoys[params.timing]}"
    )
    if params.trigger == "never":
        return f"{when}; {decoys}"
    return f"{when}, to {where}; {decoys}"


def summary(item: Opponent, n: int = 3) -> dict[str, object]:
    """What memory knows of who the opponent is, for the operator's and the player's
    views: P(none of these), whether memory plays it (and why not), the `n` likeliest
    behaviours in words with their posterior probability (the family's share times the
    behaviour's weight in it) and the games they rest on, and one sentence of it."""
    none = p_none(item)
    found = classes(item, n)
    playing = plays(item)
    hypotheses = [
        {"words": describe(p), "policy": p.describe(), "p": round((1.0 - none) * w, 4)}
        for p, w in found
    ]
    if item.games == 0:
        why = "no game yet"
    elif playing:
        why = (
            "plays it: the family's policies explain his moves better than the default "
            f"(none of these: p {none:.2f})"
        )
    elif not ties.below(none, PLAY_BELOW):
        why = (
            "held back: no policy of the family explains his moves better than the "
            f"default (none of these: p {none:.2f})"
        )
    else:
        why = (
            "held back: what memory said of him before each game predicted it worse than "
            f"the default (edge {item.edge:.1f} nats): he changes, or none fits"
        )
    if item.contradicted:
        n_wrong = len(item.contradicted)
        why += (
            f"; his moves contradict {n_wrong} of your corrections"
            " (they no longer steer play: confirm or retire them)"
        )
    best = hypotheses[0] if hypotheses else None
    games = f"{item.games} game" + ("" if item.games == 1 else "s")
    if best is not None and playing:
        text = f"Voldemort {best['words']}: p {best['p']:.2f} over {games}"
    else:
        text = f"Voldemort plays like none of the family's policies: p {none:.2f} over {games}"
    return {
        "games": item.games,
        "none": round(none, 4),
        "plays": playing,
        "edge": item.edge,
        "why": why,
        "hypotheses": hypotheses,
        "contradicted": list(item.contradicted),
        "sentence": text,
    }


def short(params: FamilyParams) -> str:
    """What the policy does about the Horcruxes, in a few words (the memory line's)."""
    if params.trigger == "positive":
        after = "right" if params.delay == 0 else f"{params.delay} turns"
        return f"moves a Horcrux {after} after you find it"
    if params.trigger == "threshold":
        return f"moves a Horcrux once you look about {params.threshold:.2f} sure of it"
    if params.trigger == "predicted":
        return "moves the Horcrux you are about to attack"
    if params.trigger == "hazard":
        return "moves Horcruxes the surer you look"
    return "never moves a Horcrux"


def line(item: Opponent | None) -> str | None:
    """The memory line's part (L1, a few words): who he is, while memory plays it."""
    if item is None or not plays(item):
        return None
    best, weight = classes(item, 1)[0]
    p = (1.0 - p_none(item)) * weight
    return f"he {short(best)} (p={p:.2f}, {item.games} games)"


__all__ = ["classes", "describe", "line", "short", "summary"]
