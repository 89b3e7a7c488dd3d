"""Harry's policy knobs (`PlannerParams`) and the default Harry's play (`RANDOMISED`): one
source for the planner (`horcrux.agents.planner`) and for the filter's copy of Harry's own
rule (the `rule` adversary model, `horcrux.belief.catalogue`), which must follow it: the
threshold by spare attacks (`spare_threshold`) and the forced attack (`forced_attack`) are
written here once, for both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def spare_threshold(thresholds: Sequence[float], spare: int) -> float:
    """The attack threshold with `spare` spare attacks (attacks left - Horcruxes left):
    `thresholds[spare]`, the first entry below 0 spare and the last for more than listed."""
    return thresholds[max(0, min(spare, len(thresholds) - 1))]


def forced_attack(turns_left: int, horcruxes_left: int, attacks_left: int, endgame: bool) -> bool:
    """Whether the rule attacks whatever the map says: an attack left and no more turns
    than Horcruxes left, or (the `endgame`) the attacks left cover every turn left."""
    if attacks_left <= 0:
        return False
    return turns_left <= horcruxes_left or (endgame and turns_left <= attacks_left)


@dataclass(frozen=True)
class PlannerParams:
    """The planner's knobs (the reference rule's values are the hand-set starting points).

    `thresholds[s]`: attack the top location when its occupancy is at least this with s
    spare attacks (attacks left - Horcruxes left), the last entry for s or more.
    `dumbledore_min`: consult Dumbledore only about a location at least this likely.
    `dumbledore_weight`: his reveal's information is multiplied by this (he helps twice).
    `endgame`: attack the likeliest location whenever the attacks left cover every turn
    left. An attack reveals its location exactly (a perfect search) and destroys what it
    finds; its one cost is an attack, and once attacks can no longer run out before the
    turns do, that cost is nil: an unused attack is worth nothing at the end. The
    reference rule (thresholds only) is `endgame=False`.
    """

    thresholds: tuple[float, ...] = (0.90, 0.75, 0.60, 0.50)
    dumbledore_min: float = 0.30
    dumbledore_weight: float = 1.0
    info_target: str = "horcrux"  # "horcrux" (decoys are noise) or "responds" (the I_j)
    ties: str = "shuffle"  # among equal locations: "shuffle" (per-turn order) or "board"
    endgame: bool = True
    # robustness to an adversary who knows the algorithm (docs/MEMORY.md, "The policy");
    # the defaults are the rule before it
    jitter: float = 0.0  # each turn's attack threshold is lowered by U(0, jitter), drawn
    # from Harry's private per-turn stream
    near: float = 0.0  # searches within this share of the best information are near-equal:
    # one is drawn from the private stream (0: the best, ties by `ties`)
    probe_min: float = 1.0  # probe: attack the top location at this occupancy or more ...
    probe_spare: int = 99  # ... while at least this many spare attacks remain ...
    probe_after: int = 99  # ... from this turn on ...
    probe_weight: float = 1.0  # ... when the models of an adversary who reacts to a
    # positive at once (`trigger`, the reference's style) weigh at most this
    hesitate: float = 0.0  # P(search instead of a threshold attack), drawn from the
    # private stream: an adversary running this code cannot know which turn he attacks
    # (negative: the belief's own `hesitation()`, its `rule` model's weight times the
    # hesitation that model assumes)
    timing: float = -1.0  # attack before the trigger: with W the posterior weight of the
    # belief-reacting models and T their weighted threshold, the attack threshold becomes
    # (1 - W) t + W min(t, T - timing) (negative: off)
    exposed: tuple[float, ...] = ()  # (jitter, near, attack_near, hesitate) when the models
    # of an adversary who reads Harry's own map (`own`, `rule`) carry weight E: each knob
    # moves from its value above toward this one by min(1, E / EXPOSED_AT)
    attack_near: float = 0.0  # attack one of the locations within this much of the top
    # occupancy, drawn in proportion to it from the private stream (0: the top one)
    race: bool = True  # when the belief's `rule` model plays the one-turn race
    # (`BayesBelief.race_plan`, the `aware-copy` models), attack as that plan says: the
    # adversary model then predicts Harry's mixed strategy exactly

    def threshold(self, spare: int) -> float:
        """The attack threshold with `spare` spare attacks (`spare_threshold`)."""
        return spare_threshold(self.thresholds, spare)


RANDOMISED = PlannerParams(jitter=0.1, near=0.1, hesitate=-1.0, exposed=(0.3, 0.3, 0.25, 0.5))
"""The default Harry's play: the rule's attack threshold lowered by U(0, 0.1) and one of
the searches within 10% of the best information, both drawn from his private stream;
as the models of an adversary who reads his own map gain weight, up to U(0, 0.3), 30%,
an attack on any location within 0.25 of the top one (drawn in proportion to its
occupancy) and a hesitation of 1/2 before a threshold attack."""


__all__ = ["RANDOMISED", "PlannerParams", "forced_attack", "spare_threshold"]
