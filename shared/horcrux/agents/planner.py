"""Zero-token planner brains on Layer 2 belief maps.

* `planner` (`planner:aware-copy|aware|trigger|hazard|static|mixture|robust`): the exact
  Bayes map (`horcrux.belief.bayes`, default `aware-copy` = model averaging) and the rule
  (docs/MEMORY.md): attack the most likely location when its occupancy reaches the
  threshold for the spare attacks left, when no more turns than Horcruxes remain, or (the
  endgame) when the attacks left cover every turn left; else take the action with
  the most expected information this turn: Harry's search, Hermione's sharper search,
  Ron's two searches or Dumbledore's exact reveal (allies as `view.allies` allows).
* `planner-window:W`: the trigger planner with the reference rule (no endgame)
  rebuilding his belief each turn from only his last W observations (the memory
  ablation; the rebuild's prior is explained on
  `WindowPlannerHarry`); `planner-window:full` is the same Harry remembering everything.

Among equally good locations every planner takes the first in a per-turn shuffled order
(`horcrux.belief.ties.tie_order`), not board order: see `WindowPlannerHarry`.

Every brain draws randomness only from the `rng` passed to `decide`, records one
`DecisionRecord` per decision (tier `zero`) and exposes `stats()` for the simulator.
The planner persists between Lambda invocations with `snapshot()` / `restore()`.
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import struct
import time
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from horcrux.agents.base import HARRY_BRAINS, BrainOptions, HarryMove, int_param
from horcrux.belief import policy
from horcrux.belief.bayes import (
    DEFAULT_MODE,
    MODES,
    AdversaryModel,
    BayesBelief,
    FloatArray,
    array_sum,
)
from horcrux.belief.policy import RANDOMISED, PlannerParams
from horcrux.belief.ties import above, argmax_first, at_least, at_least_array, at_most
from horcrux.belief.ties import tie_order as tie_order  # noqa: PLC0414 (re-exported)
from horcrux.decisions import DecisionRecord, Source
from horcrux.errors import UnknownBrain
from horcrux.models import Ally, Attack, Observation, Search
from horcrux.rules import RuleSet
from horcrux.views import HarryView


@dataclass(frozen=True)
class Choice:
    """A scored candidate action (for tests and explanations)."""

    move: HarryMove
    kind: str
    value: float


def _argmax(values: FloatArray, ties: FloatArray) -> int:
    """Index of the largest value; among (near-)equals, the lowest tie rank (the ranks
    are distinct). In Python floats: a handful of values, where numpy's calls cost more."""
    return argmax_first(values.tolist(), ties.tolist())


class PlannerHarry:
    """Information-gain searches and threshold attacks on the exact Bayes map."""

    name = "planner"

    def __init__(
        self,
        rules: RuleSet,
        mode: str = DEFAULT_MODE,
        params: PlannerParams | None = None,
        belief: BayesBelief | None = None,
    ) -> None:
        if mode not in MODES:
            raise UnknownBrain(f"unknown planner mode {mode!r}; known: {', '.join(MODES)}")
        self.rules = rules
        self.mode = mode
        self.params = params or MODE_PARAMS.get(mode) or PlannerParams()
        self.belief = belief or BayesBelief(rules, mode)
        self.name = "planner" if mode == DEFAULT_MODE else f"planner:{mode}"
        self.decisions: list[DecisionRecord] = []
        self.counts: Counter[str] = Counter()

    # ------------------------------------------------------------ the seat interface
    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        start = time.perf_counter()
        self.sync(view)
        choice = plan(self.belief, view, self.params, rng)
        self._record(view.turn, choice.kind, "planner", start)
        return choice.move

    def sync(self, view: HarryView) -> None:
        """Fold in every record of `view.history` not yet seen."""
        belief = self.belief
        seen = belief.turn
        for record in view.history:
            if record.turn > seen:
                belief.update(record)
                seen = belief.turn

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None:
        """Play what cross-game memory decided (`horcrux.echo.use.memory_plan`): a fresh
        map over `models` (the whole set, priors included) and the mode's knobs with
        `params` overridden (numeric `PlannerParams` fields: an operator's preferences)."""
        self.belief = BayesBelief(self.rules, self.mode, models=models)
        if params:
            self.params = memory_params(self.params, params)

    def candidates(self, view: HarryView, limit: int) -> tuple[list[HarryMove], HarryMove]:
        """The moves an LLM is offered on this planner's synced map, and his own move
        (`agents.candidates.planner_candidates`)."""
        from horcrux.agents.candidates import planner_candidates

        return planner_candidates(self, view, limit)

    def memory_planner(self) -> PlannerHarry | None:
        """Cross-game memory plays through this planner in the default mode, the one its
        models and knobs were measured with; another mode plays without memory."""
        return self if self.mode == DEFAULT_MODE else None

    def choose(self, view: HarryView, rng: random.Random | None = None) -> Choice:
        """The decision on the current belief (no side effects). Without `rng` the
        randomised pieces take their middle (no jitter, the best search)."""
        return plan(self.belief, view, self.params, rng)

    def _record(self, turn: int, kind: str, source: Source, start: float) -> None:
        self.counts[kind] += 1
        self.decisions.append(
            DecisionRecord(
                turn=turn,
                tier="zero",
                source=source,
                latency_ms=(time.perf_counter() - start) * 1000.0,
            )
        )

    def stats(self) -> dict[str, Any]:
        weights = self.belief.model_weights()
        return {
            "decisions": len(self.decisions),
            "actions": dict(sorted(self.counts.items())),
            "model_weights": {
                m.name: round(float(w), 4) for m, w in zip(self.belief.models, weights, strict=True)
            },
        }

    # ------------------------------------------------------------ persistence
    def snapshot(self) -> bytes:
        """Mode, parameters, counts and the belief's own snapshot (a few hundred bytes)."""
        head = json.dumps(
            {"mode": self.mode, "params": asdict(self.params), "counts": dict(self.counts)},
            separators=(",", ":"),
        ).encode()
        packed = zlib.compress(head, 9)
        return struct.pack("<H", len(packed)) + packed + self.belief.snapshot()

    @classmethod
    def restore(cls, rules: RuleSet, data: bytes) -> PlannerHarry:
        """The brain `snapshot()` wrote: exactly its own format (nothing stores one
        between turns: the service rebuilds a planner from the view, `ViewSynced`)."""
        (size,) = struct.unpack_from("<H", data, 0)
        head = json.loads(zlib.decompress(data[2 : 2 + size]))
        belief_data = data[2 + size :]
        saved = head["params"]
        tuples = {k: tuple(saved[k]) for k in ("thresholds", "exposed")}
        params = PlannerParams(**{**saved, **tuples})
        brain = cls(rules, head["mode"], params, BayesBelief.restore(rules, belief_data))
        brain.counts = Counter(head["counts"])
        return brain


def memory_params(params: PlannerParams, overrides: Mapping[str, float]) -> PlannerParams:
    """`params` with cross-game memory's overrides (`PlannerHarry.adopt_memory`); a name
    that is no numeric knob is a ValueError naming it."""
    update: dict[str, Any] = {}
    for name, value in overrides.items():
        current = getattr(params, name, None)
        if not isinstance(current, float):
            raise ValueError(f"memory names no numeric planner knob {name!r}")
        update[name] = float(value)
    return replace(params, **update)


def forced_attack(view: HarryView, params: PlannerParams) -> bool:
    """Whether the rule attacks whatever the map says: no more turns than Horcruxes left,
    or (the endgame) the attacks left cover every turn left."""
    return policy.forced_attack(
        view.turns_left, view.horcruxes_left, view.attacks_left, params.endgame
    )


def model_weight(belief: BayesBelief, motion: str) -> float:
    """Posterior weight of the belief's adversary models with this motion."""
    weights = belief.model_weights()
    return float(sum(w for m, w in zip(belief.models, weights, strict=True) if m.motion == motion))


EXPOSED_AT = 0.5
"""The weight of the own-map-reading models at which the `exposed` knobs apply in full."""


def exposed_params(belief: BayesBelief, params: PlannerParams) -> PlannerParams:
    """`params` with its randomisation raised toward `exposed`, in proportion to the
    posterior weight of the adversary models that read Harry's own map."""
    jitter, near, attack_near, hesitate = _exposed_knobs(belief, params)
    return replace(
        params, jitter=jitter, near=near, attack_near=attack_near, hesitate=hesitate, exposed=()
    )


def _exposed_knobs(belief: BayesBelief, params: PlannerParams) -> tuple[float, float, float, float]:
    """`exposed_params`'s (jitter, near, attack_near, hesitate), without building the params."""
    weight = belief.exposure()
    scale = min(1.0, weight / EXPOSED_AT)
    jitter, near, attack_near, hesitate = (tuple(params.exposed) + (0.0,) * 4)[:4]
    base_hesitate = params.hesitate if params.hesitate >= 0.0 else belief.hesitation()
    return (
        params.jitter + scale * (jitter - params.jitter),
        params.near + scale * (near - params.near),
        params.attack_near + scale * (attack_near - params.attack_near),
        base_hesitate + scale * (hesitate - base_hesitate),
    )


def trigger_aware(belief: BayesBelief, threshold: float, spare: int, margin: float) -> float:
    """The attack threshold moved below the belief-reacting adversaries' trigger, in
    proportion to their posterior weight: (1 - W) t + W min(t, T - margin)."""
    weights = belief.model_weights()
    total = 0.0
    level = 0.0
    for model, w in zip(belief.models, weights, strict=True):
        if model.motion != "belief":
            continue
        if model.reads == "rule":
            tau = policy.spare_threshold(model.rule or (threshold,), spare) - model.spread
        else:
            tau = model.threshold - model.spread
        total += float(w)
        level += float(w) * tau
    if total <= 0.0:
        return threshold
    return (1.0 - total) * threshold + total * min(threshold, level / total - margin)


SURE = 1.0
"""An occupancy at which Harry attacks even on a turn the race plan searches: one more
positive cannot raise it (it was the `cap_floor` of a capped attack, the only value any
mode used)."""


def _race_pick(race: FloatArray, rng: random.Random | None) -> int | None:
    """The location the race plan attacks, drawn from Harry's private stream (without
    one: its likeliest attack if that is at least 1/2), or None: search this turn."""
    if rng is None:
        top = argmax_first(race.tolist())
        return top if at_least(float(race[top]), 0.5) else None
    u = rng.random()
    acc = 0.0
    for j in np.flatnonzero(race > 0.0).tolist():
        acc += float(race[j])
        if u < acc:
            return int(j)
    return None


def plan(
    belief: BayesBelief,
    view: HarryView,
    params: PlannerParams,
    rng: random.Random | None = None,
) -> Choice:
    """The planner's rule on a Bayes map: threshold attack, else most informative action.

    `rng` is Harry's private per-turn stream: it draws the attack threshold's jitter and
    one of the near-equal searches, so that running this code on Harry's view does not
    tell an adversary what Harry does next (without it: no jitter, the best search)."""
    rules = view.rules
    locs = rules.locations
    m = belief.marginals()
    k = view.horcruxes_left
    ties = (
        tie_order(len(locs), view.turn)
        if params.ties == "shuffle"
        else np.arange(len(locs), dtype=np.float64)
    )
    best = _argmax(m, ties)
    spare = view.attacks_left - k
    race = belief.race_plan() if params.race and view.attacks_left > 0 else None
    if race is not None:
        target = _race_pick(race, rng)
        if target is not None:
            return Choice(Attack(location=locs[target]), "race", float(m[target]))
    if params.exposed:
        jitter, near, near_attack, hesitate = _exposed_knobs(belief, params)
    else:
        jitter, near, near_attack = params.jitter, params.near, params.attack_near
        hesitate = params.hesitate if params.hesitate >= 0.0 else belief.hesitation()
    threshold = params.threshold(spare)
    if params.timing >= 0.0:
        threshold = trigger_aware(belief, threshold, spare, params.timing)
    if jitter > 0.0 and rng is not None:
        threshold -= jitter * rng.random()
    if near_attack > 0.0 and rng is not None:
        # in Python floats: numpy's sum (`array_sum`), cumulative sum and left search
        # on these few values, the same doubles and the same index
        seen = m.tolist()
        cut = seen[best] - near_attack
        close = [i for i, v in enumerate(seen) if at_least(v, cut)]
        if len(close) > 1:
            values = [seen[i] for i in close]
            pick = rng.random() * array_sum(values)
            running = list(itertools.accumulate(values))
            best = close[min(len(close) - 1, bisect.bisect_left(running, pick))]
    if forced_attack(view, params):
        return Choice(Attack(location=locs[best]), "attack", float(m[best]))
    ready = race is None and view.attacks_left > 0 and at_least(m[best], threshold)
    kind = "attack"
    if not ready and view.attacks_left > 0 and at_least(m[best], SURE):
        ready, kind = True, "capped"  # the race chose to search, but nothing is left to learn
    if ready and not (hesitate > 0.0 and rng is not None and rng.random() < hesitate):
        return Choice(Attack(location=locs[best]), kind, float(m[best]))
    if (
        race is None
        and view.attacks_left > 0
        and spare >= params.probe_spare
        and view.turn >= params.probe_after
        and at_least(m[best], params.probe_min)
        and at_most(model_weight(belief, "trigger"), params.probe_weight)
    ):
        return Choice(Attack(location=locs[best]), "probe", float(m[best]))

    info_of = (
        belief.horcrux_information if params.info_target == "horcrux" else belief.search_information
    )
    info = info_of(rules.sensor)
    j = _argmax(info, ties)
    if near > 0.0 and rng is not None:
        rated = info.tolist()
        cut = rated[j] * (1.0 - near)
        close = [i for i, v in enumerate(rated) if at_least(v, cut)]
        if len(close) > 1:
            j = close[rng.randrange(len(close))]
    options = [Choice(Search(location=locs[j]), "search", float(info[j]))]
    allies = view.allies
    if "hermione" in allies and allies["hermione"].available:
        her = info_of(rules.sensor_of("hermione"))
        h = _argmax(her, ties)
        options.append(
            Choice(Ally(ally="hermione", locations=(locs[h],)), "hermione", float(her[h]))
        )
    if "ron" in allies and allies["ron"].available:
        a = j
        b = _argmax(np.where(np.arange(len(locs)) == a, -np.inf, info), ties)
        options.append(
            Choice(Ally(ally="ron", locations=(locs[a], locs[b])), "ron", float(info[a] + info[b]))
        )
    if "dumbledore" in allies and allies["dumbledore"].available:
        reveal = belief.reveal_information() * params.dumbledore_weight
        reveal = np.where(at_least_array(m, params.dumbledore_min), reveal, -1.0)
        d = _argmax(reveal, ties)
        if above(reveal[d], 0.0):
            options.append(
                Choice(
                    Ally(ally="dumbledore", locations=(locs[d],)), "dumbledore", float(reveal[d])
                )
            )
    return options[argmax_first([c.value for c in options])]  # first: his own search


MODE_PARAMS: dict[str, PlannerParams] = {
    "robust": PlannerParams(thresholds=(0.80, 0.60, 0.45, 0.35)),
    "aware": RANDOMISED,
    "aware-copy": RANDOMISED,
}
"""Knobs that go with a belief mode. `robust` adds an adversary who spends his budgets
early and at random, whose decoys no sensor can tell from a Horcrux: with spare attacks,
probing a likely location by attacking it is cheaper than waiting for certainty that
never comes."""


REFERENCE_RULE = PlannerParams(endgame=False)
"""The reference rule (thresholds, no endgame; docs/MEMORY.md restates it): the rule of
the reference Bayes Harry, which the memory-window ablation reproduces."""


REFERENCE_TRUST = 2.0 / 3.0
"""The default rebuild's trust in the forecast of the forgotten turns: two parts forecast
to one part ignorance. The specification's reference figures do not say what their
ablation assumed there; this one number is fitted to the W = 8 figure (docs/MEMORY.md),
W = 16 and 32 follow."""

REBUILD_PRIORS: dict[str, float | None] = {
    "reference": REFERENCE_TRUST,
    "forecast": 1.0,
    "hedged": 0.5,
    "uniform": 0.0,
    "fresh": None,
}
"""How a memory-window rebuild fills in Voldemort's budgets for the turns it forgot: the
trust in each adversary model's forecast (`forgotten_budgets`) against ignorance, or
`None` for the game's start."""


def rebuild_trust(prior: str | float) -> float | None:
    """The trust a rebuild prior stands for: a name of `REBUILD_PRIORS`, or a number in [0, 1]."""
    if isinstance(prior, str) and prior in REBUILD_PRIORS:
        return REBUILD_PRIORS[prior]
    try:
        trust = float(prior)
    except ValueError:
        raise ValueError(
            f"a rebuild prior is one of {', '.join(REBUILD_PRIORS)} or a trust in [0, 1], "
            f"got {prior!r}"
        ) from None
    if not 0.0 <= trust <= 1.0:
        raise ValueError(f"a rebuild prior's trust must be in [0, 1], got {prior!r}")
    return trust


class WindowPlannerHarry(PlannerHarry):
    """The planner, but rebuilding its belief each turn from its last W observations only.

    Same reasoning, different memory: the reference Bayes Harry of the specification's
    memory ablation (an exact Bayes filter with a relocation model, information-gain
    searches, attack thresholds): by default the trigger model (it is also three times
    cheaper to rebuild than the mixture) and the reference rule (`REFERENCE_RULE`:
    thresholds, no endgame); only the
    record the belief is rebuilt from is cut to the last W observations ("events": one
    per search or attack, Ron's use counting two; in the classic preset, turns). While
    the whole game fits in the window the belief is folded in turn by turn, exactly the
    full planner's; `window=None` (`planner-window:full`) never forgets, the ablation's
    full-memory point.

    The rebuild starts at the first turn t0 he remembers. Where the Horcruxes are: uniform
    over the sets of k0 = Horcruxes left + those destroyed inside the window (he forgot
    every search that located them; by symmetry nothing else holds). What he must also
    assume is how much of Voldemort's budgets the t0 - 1 forgotten turns used, and the
    result hangs on it (docs/MEMORY.md has the measured spread). The prior is each
    adversary model's forecast for that many turns of a searcher who recalls nothing
    (`horcrux.belief.bayes.forgotten_budgets`), weighed against ignorance (every count
    of charges left and decoys planted equally likely) by a trust in [0, 1]. `prior`
    names the trust, or gives it as a number:

    * `reference` (default): 2/3, fitted to the W = 8 reference figure (`REFERENCE_TRUST`);
    * `forecast`: 1, the forecast alone (as well calibrated as the default, and stronger);
    * `hedged`: 1/2, equal odds; `uniform`: 0, ignorance;
    * `fresh`: no forecast: the Harry who takes the oldest turn he recalls for the
      game's first (all charges left, no decoy planted).

    `params` default to `REFERENCE_RULE`; other values serve experiments.

    Decoy positions are not modelled (c_j starts at 0, as at turn 1): the planting rule
    follows the public evidence of the whole game, which he forgot. The predictive step
    runs after every remembered turn, as in the full filter. Equal locations are broken
    by the per-turn shuffle of `plan`: a fixed board order makes a W < N Harry cycle
    through the same few locations he keeps forgetting.
    """

    def __init__(
        self,
        rules: RuleSet,
        window: int | None,
        mode: str = "trigger",
        prior: str | float = "reference",
        params: PlannerParams | None = None,
    ) -> None:
        self.trust = rebuild_trust(prior)
        if window is not None and window < 1:
            raise ValueError(f"a memory window holds at least 1 observation, got {window}")
        super().__init__(rules, mode, params or REFERENCE_RULE)
        self.window = window
        self.prior = prior if isinstance(prior, str) else f"{prior:g}"
        suffix = "" if self.prior == "reference" else f":{self.prior}"
        self.name = f"planner-window:{'full' if window is None else window}{suffix}"

    def memory_planner(self) -> PlannerHarry | None:
        """None: a Harry who forgets plays without cross-game memory (its models and knobs
        were measured with the full planner)."""
        return None

    def rebuild_prior(self, first_turn: int, horcruxes: int) -> dict[str, Any]:
        """The keyword arguments of the rebuild's `BayesBelief` (see the class doc)."""
        forgotten = max(0, first_turn - 1)
        if forgotten == 0 or self.trust is None:
            return {"horcruxes": horcruxes}
        return {"horcruxes": horcruxes, "forgotten": forgotten, "trust": self.trust}

    def sync(self, view: HarryView) -> None:
        flat = [(r.turn, obs) for r in view.history for obs in r.observations]
        if self.window is None or len(flat) <= self.window:  # he remembers everything:
            super().sync(view)  # the full planner's belief, folded in turn by turn
            return
        recent = flat[-self.window :]
        destroyed = sum(1 for _, obs in recent if obs.outcome == "destroyed")
        k0 = min(self.rules.horcruxes, view.horcruxes_left + destroyed)
        first_turn = recent[0][0]
        belief = BayesBelief(self.rules, self.mode, **self.rebuild_prior(first_turn, k0))
        groups: list[tuple[int, list[Observation]]] = []
        for turn, obs in recent:
            if groups and groups[-1][0] == turn:
                groups[-1][1].append(obs)
            else:
                groups.append((turn, [obs]))
        for i, (turn, observations) in enumerate(groups, start=1 - len(groups)):
            belief.update_observations(turn, tuple(observations), track=i == 0)
        self.belief = belief


# ---------------------------------------------------------------- registration
@HARRY_BRAINS.register(
    "planner",
    description=(
        "exact Bayes map, information-gain searches, threshold attacks and the endgame, "
        "built for an adversary who reads Harry's map or code (:MODE, default aware-copy; "
        "aware is the default before it; trigger|hazard|static|mixture|robust)"
    ),
)
def _planner(options: BrainOptions) -> PlannerHarry:
    return PlannerHarry(options.rules, options.param or DEFAULT_MODE)


@HARRY_BRAINS.register(
    "planner-window",
    description=(
        "the reference ablation's trigger planner recalling only its last W observations "
        "(:W|full[:reference|forecast|hedged|uniform|fresh|TRUST])"
    ),
)
def _planner_window(options: BrainOptions) -> WindowPlannerHarry:
    window, _, prior = (options.param or "").partition(":")
    sized = replace(options, param=window or None)
    prior = prior or "reference"
    try:
        rebuild_trust(prior)
    except ValueError as exc:
        raise UnknownBrain(f"planner-window: {exc}") from None
    if window == "full":
        return WindowPlannerHarry(options.rules, None, prior=prior)
    if window and not window.lstrip("+-").isdigit():
        raise UnknownBrain(f"planner-window's memory is a whole number or 'full', got {window!r}")
    return WindowPlannerHarry(
        options.rules, int_param(sized, 16, "planner-window's memory"), prior=prior
    )


__all__ = [
    "EXPOSED_AT",
    "MODE_PARAMS",
    "RANDOMISED",
    "REBUILD_PRIORS",
    "REFERENCE_RULE",
    "REFERENCE_TRUST",
    "Choice",
    "PlannerHarry",
    "PlannerParams",
    "WindowPlannerHarry",
    "exposed_params",
    "forced_attack",
    "model_weight",
    "plan",
    "rebuild_trust",
    "trigger_aware",
]
