"""The `llm` brains' default prompts: the system prompt of each seat, and a short
deterministic rendering of each seat's view (what the model reads when no other context
provider, such as the L1 working memory of `horcrux.memory`, is given).

Voldemort's rendering ranks the locations by the public evidence of Harry's searches
through `horcrux.belief.ties` (near-equal scores in board order), so the prompt is the
same bytes on every machine.
"""

from __future__ import annotations

from collections.abc import Callable

from horcrux.agents.voldemort import public_evidence
from horcrux.belief import ties
from horcrux.models import HarryRecord, Observation
from horcrux.rules import RuleSet
from horcrux.views import HarryView, VoldemortView

HarryContextProvider = Callable[[HarryView], str]
VoldemortContextProvider = Callable[[VoldemortView], str]


def obs_text(obs: Observation) -> str:
    who = "hermione " if obs.sensor == "hermione" else ""
    return f"{who}{obs.kind} {obs.location} {obs.outcome}"


def record_text(record: HarryRecord) -> str:
    action = record.action
    label = action.ally if action.type == "ally" else action.type
    obs = "; ".join(obs_text(o) for o in record.observations)
    return f"t{record.turn} {label}: {obs}"


def render_harry_view(view: HarryView, window: int = 8) -> str:
    """A short deterministic rendering of Harry's view: counters and his last turns."""
    allies = []
    for name, status in view.allies.items():
        state = "ready" if status.available else f"rests {status.rest}"
        if status.uses_left is not None:
            state += f", {status.uses_left} uses left"
        allies.append(f"{name} {state}")
    recent = [record_text(r) for r in view.history[-window:]] if window > 0 else []
    lines = [
        f"Turn {view.turn}/{view.rules.max_turns}. Attacks left {view.attacks_left}. "
        f"Horcruxes destroyed {view.horcruxes_destroyed}/{view.rules.horcruxes}.",
        "Allies: " + ("; ".join(allies) if allies else "none"),
        "Your last turns (oldest first): " + (" | ".join(recent) if recent else "none yet"),
        "Call make_move with one legal move.",
    ]
    return "\n".join(lines)


def render_voldemort_view(view: VoldemortView, top: int = 3) -> str:
    """A short deterministic rendering of Voldemort's view: the truth, charges, Harry's turn."""
    last = view.last_harry
    harry_now = record_text(last) if last is not None and last.turn == view.turn else "nothing"
    evidence = public_evidence(view.rules, view.history)
    locations = view.rules.locations
    scores = [evidence[loc] for loc in locations]
    # the locations whose score is above 0, best first, near-equals in board order
    ranked = [i for group in ties.tie_groups(scores, 0.0, 0.0) for i in group]
    hot = ", ".join(f"{locations[i]} {scores[i]:+.1f}" for i in ranked[:top]) or "none"
    lines = [
        f"Turn {view.turn}/{view.rules.max_turns}. Horcruxes at: "
        f"{', '.join(view.horcrux_locations) or 'none'}. "
        f"Decoys at: {', '.join(view.decoy_locations) or 'none'}.",
        f"Relocations left {view.relocations_left}, decoys left {view.decoys_left}.",
        f"Harry this turn: {harry_now}. Harry has {view.attacks_left} attacks left and has "
        f"destroyed {view.horcruxes_destroyed}/{view.rules.horcruxes}.",
        f"Where Harry's searches point (log-likelihood): {hot}.",
        "Call make_move with one legal move.",
    ]
    return "\n".join(lines)


def harry_system_prompt(rules: RuleSet) -> str:
    s = rules.sensor
    return (
        f"You are Harry Potter hunting {rules.horcruxes} Horcruxes hidden among "
        f"{len(rules.locations)} locations within {rules.max_turns} turns. A search says "
        f"positive with probability {s.d} where a Horcrux or a decoy is, {s.f} elsewhere. "
        "An attack destroys a Horcrux, removes a decoy, or is wasted; attacks are few. "
        "Voldemort sees everything you do: he may move a Horcrux after a positive search "
        "and plant decoys where your searches point. Answer only by calling make_move."
    )


def harry_short_system_prompt(rules: RuleSet) -> str:
    """The compressed tier's system prompt: what the working memory's lines mean, no more."""
    return (
        f"You are Harry, hunting {rules.horcruxes} Horcruxes. Likely: the chance a Horcrux "
        "is there. Searches are noisy; attacks are few and a miss wastes one. Pick one move."
    )


def voldemort_system_prompt(rules: RuleSet) -> str:
    return (
        f"You are Voldemort guarding {rules.horcruxes} Horcruxes among "
        f"{len(rules.locations)} locations. Harry searches with a noisy sensor and attacks; "
        f"you win if a Horcrux survives turn {rules.max_turns} or his attacks run out. "
        "You may relocate a Horcrux to a free location or plant a decoy at a free location "
        "(both with limited charges), or pass. Answer only by calling make_move."
    )


__all__ = [
    "HarryContextProvider",
    "VoldemortContextProvider",
    "harry_short_system_prompt",
    "harry_system_prompt",
    "record_text",
    "render_harry_view",
    "render_voldemort_view",
    "voldemort_system_prompt",
]
