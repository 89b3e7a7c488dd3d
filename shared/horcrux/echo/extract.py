"""ECHO's extraction, pure: the experiences of one finished game, from its summary and
(when given) its events, and where each decoy went against the filter's planting rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.model import Experience, Subject, item_id
from horcrux.engine import apply, new_game
from horcrux.models import GameStarted, PlantDecoy, VoldemortMoved
from horcrux.store.port import AnyEvent
from horcrux.store.results import GameSummary
from horcrux.views import voldemort_view


class Planted(NamedTuple):
    """One decoy as the filter's planting rules read it."""

    location: str
    rule_top: bool
    """At the free location with the highest public evidence, that evidence above 0:
    where the planting rule (`placement = "evidence"`) expects it (`plant_top`)."""
    blind: bool
    """At the free location with the highest public evidence while that evidence was not
    above 0: planted whenever he can, before any positive there (`placement = "greedy"`,
    `plant_blind`)."""


def decoy_placements(events: Sequence[AnyEvent]) -> list[Planted]:
    """Per decoy planted, in order: where it went against the filter's planting rules."""
    from horcrux.agents.voldemort import public_evidence
    from horcrux.belief import ties

    if not events or not isinstance(events[0], GameStarted):
        return []
    state, _ = new_game(events[0].rules, events[0].seed)
    out: list[Planted] = []
    for event in events[1:]:
        if isinstance(event, GameStarted):
            return out
        if isinstance(event, VoldemortMoved) and isinstance(event.action, PlantDecoy):
            view = voldemort_view(state)
            evidence = public_evidence(state.rules, view.history)
            free = view.free_locations()
            best = ties.first_best(free, evidence) if free else None  # as the reference
            at = event.action.location
            top = best == at
            positive = ties.above(evidence[at], 0.0)
            out.append(Planted(at, top and positive, top and not positive))
        state, _ = apply(state, event.action)
    return out


def extract(
    summary: GameSummary,
    clock: float,
    config: EchoConfig | None = None,
    events: Sequence[AnyEvent] | None = None,
) -> list[Experience]:
    """The experiences of one finished game, deterministically from its summary (and,
    when given, its events: whether each decoy followed the filter's planting rule; else
    the summary's `at_harry_top`)."""
    cfg = config or default_config()
    out: list[Experience] = []

    def add(subject: Subject, success: bool, text: str) -> None:
        out.append(
            Experience(
                id=item_id(summary.game_id, len(out), subject),
                subject=subject,
                text=text[:300],
                created=clock,
                last_access=clock,
                life=cfg.half_life,
                success=success,
                game_id=summary.game_id,
            )
        )

    opp = summary.voldemort
    n = len(summary.relocations)
    add(
        "relocates",
        n > 0,
        f"{opp} relocated {n} horcrux times this game" if n else f"{opp} never relocated a horcrux",
    )
    for r in summary.relocations:
        if r.turns_since_positive is None:
            add("immediate", False, f"relocated from {r.from_location} without a positive of mine")
        elif r.turns_since_positive == 0:
            add("immediate", True, f"relocated at once after my positive at {r.from_location}")
        else:
            add(
                "immediate",
                False,
                f"relocated {r.turns_since_positive} turns after my positive at {r.from_location}",
            )
    placed = decoy_placements(events) if events else []
    for i, d in enumerate(summary.decoys):
        # one definition of `plant_top` and one of `plant_blind`: the filter's planting
        # rules, from the record (set by compaction) or the events; never Harry's belief
        # top (another rate)
        known = placed[i] if i < len(placed) else None
        hit = d.at_rule_top if d.at_rule_top is not None else (known.rule_top if known else None)
        blind = d.at_blind_top if d.at_blind_top is not None else (known.blind if known else None)
        if hit is not None:
            where = "at" if hit else "away from"
            add("plant_top", hit, f"decoy {where} my top evidence location {d.location}")
        if blind is not None:
            if blind:
                text = f"decoy at {d.location} before any positive of mine there"
            else:
                text = f"decoy at {d.location} not planted blind"
            add("plant_blind", blind, text)
        if d.attacked_turn is not None:
            add("decoy_hit", True, f"attack wasted on a decoy at {d.location}")
        else:
            add("decoy_hit", False, f"decoy at {d.location} spotted, never attacked")
    if summary.winner == "harry":
        add("win", True, f"won against {opp} in {summary.turns} turns")
    else:
        add("win", False, f"lost against {opp}: {summary.end_reason or 'time'}")
    return out


__all__ = ["Planted", "decoy_placements", "extract"]
