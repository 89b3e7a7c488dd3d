"""What the memory is for: the planner's adversary models and knobs, and one line of L1.

* `learned_rates`: per adversary subject, the rate the active belief states (an
  evidence belief, or an operator's correction belief), else None.
* `rate_models`: the rates as the `AdversaryModel`s of the learned opponent: a
  `trigger` model (prior max(0.1, P(relocates) x P(at once)), plant = P(decoy where the
  planting rule expects)) and a `static` one for the rest (its plant rate discounted by
  the share of late relocations), of whose prior a share `plant_blind` goes to a `greedy`
  one (never moves, plants at the top-evidence location whenever it can) once that rate
  is known and above 0. `adversary_models(memory)` is that on the memory's
  rates (None: nothing learned). The `counter` baseline feeds its rates to the same
  mapping.
* `memory_plan`: what one game's planner plays with (`PlannerHarry.adopt_memory`): the
  default mixture plus the learned models, every prior set by the `Style` posterior
  (which models fit this opponent across games, `echo.style`), and the `PlannerParams`
  overrides of the operator's preferences. `Layers` switches
  each layer off for the season's ablations.
* `memory_line`: the corrections and beliefs in one short line of plain data (the
  context cleans it, labels it as memory and fits it to the token budget).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.model import (
    ADVERSARY_SUBJECTS,
    PARAM_SUBJECTS,
    Belief,
    Correction,
    EchoMemory,
)
from horcrux.echo.recall import recall

if TYPE_CHECKING:  # numpy comes with the belief map: imported where models are built
    from horcrux.agents.particles import Prior
    from horcrux.belief.bayes import AdversaryModel

TRIGGER_FLOOR = 0.1
DEFAULT_RATES = {"relocates": 0.8, "immediate": 0.8, "plant_top": 0.8, "plant_blind": 0.0}
LINE_QUERY = "voldemort relocates horcrux after my positive decoy top location attack"
LEARNED_SHARE = 0.3
"""The learned models' share of the prior while no style posterior weighs them."""


def learned_rates(
    memory: EchoMemory, *, evidence: bool = True, corrections: bool = True
) -> dict[str, float | None]:
    """Per adversary subject, the active belief's mean (None: no belief). `evidence` /
    `corrections`: whether beliefs from the games / from an operator count."""
    beliefs = memory.active_beliefs()
    out: dict[str, float | None] = {}
    for subject in ADVERSARY_SUBJECTS:
        b = beliefs.get(subject)
        use = b is not None and (corrections if b.source == "correction" else evidence)
        out[subject] = b.mean if use and b is not None else None
    return out


def rate_models(rates: Mapping[str, float | None]) -> tuple[AdversaryModel, ...] | None:
    """Three learned rates as Bayes models (None: nothing learned, keep the defaults)."""
    from horcrux.belief.bayes import AdversaryModel

    if all(rates.get(k) is None for k in ADVERSARY_SUBJECTS):
        return None

    def rate(k: str) -> float:
        v = rates.get(k)
        return DEFAULT_RATES[k] if v is None else v

    r, t, plant = rate("relocates"), rate("immediate"), rate("plant_top")
    trigger_prior = round(min(1.0 - TRIGGER_FLOOR, max(TRIGGER_FLOOR, r * t)), 4)
    # relocations that do not follow a positive at once are not what either filter
    # expects; the static filter then trusts its decoy model less, in that proportion
    static_plant = round(plant * (1.0 - r * (1.0 - t)), 3)
    models = [
        AdversaryModel(
            "trigger", "trigger", trigger=1.0, plant=round(plant, 3), prior=trigger_prior
        ),
        AdversaryModel("static", "static", plant=static_plant, prior=round(1 - trigger_prior, 4)),
    ]
    blind = rates.get("plant_blind")
    if blind is not None and blind > 0.0:
        # decoys planted before any positive there: a share of the static prior goes to
        # a model that plants at the top-evidence location whenever it can
        share = min(1.0 - TRIGGER_FLOOR, blind)
        rest = models[1].prior
        models[1] = replace(models[1], prior=round(rest * (1.0 - share), 4))
        models.append(
            AdversaryModel(
                "greedy", "static", plant=1.0, placement="greedy", prior=round(rest * share, 4)
            )
        )
    return tuple(models)


def adversary_models(memory: EchoMemory | None) -> tuple[AdversaryModel, ...] | None:
    """The learned adversary as Bayes models (None: nothing learned, keep the defaults)."""
    return None if memory is None else rate_models(learned_rates(memory))


@dataclass(frozen=True)
class Layers:
    """Which layers reach the planner (all, in play; the season switches them off one by
    one). `beliefs`: the rate beliefs' learned models; `style`: the cross-game posterior
    over the models (their priors, thresholds included); `corrections`: the operator's
    corrections and preferences; `gate`: the memory gate (`echo.gate`)."""

    beliefs: bool = True
    style: bool = True
    corrections: bool = True
    gate: bool = True
    opponent: bool = True


ALL_LAYERS = Layers()


@dataclass(frozen=True)
class MemoryPlan:
    """One game's planner: its filter's whole model set (with priors; () for the
    default's) and knob overrides, and `opponent`, who memory says the opponent is
    (`echo.opponent.plan_prior`: the family's policies Harry plays against, None while
    "none of these" is as likely)."""

    models: tuple[AdversaryModel, ...]
    params: dict[str, float] = field(default_factory=dict)
    opponent: Prior | None = None


def joined_models(
    learned: tuple[AdversaryModel, ...] | None,
    scores: Mapping[str, float] | None = None,
) -> tuple[AdversaryModel, ...]:
    """The default mixture plus the learned models (renamed `learned-...`, outside the
    level-0 map, LEARNED_SHARE of the prior), every prior then reweighted by the style
    posterior `scores` (None: as they are)."""
    from horcrux.belief.bayes import DEFAULT_MODE, MODES
    from horcrux.echo import style

    own = MODES[DEFAULT_MODE]
    models = own
    if learned:
        total = sum(m.prior for m in own)
        learned_total = sum(m.prior for m in learned) or 1.0
        scale = LEARNED_SHARE / (1.0 - LEARNED_SHARE) * total / learned_total
        models = own + tuple(
            replace(m, name=f"learned-{m.name}", prior=m.prior * scale, level0=False)
            for m in learned
        )
    if not scores:
        return models
    default = style.units(models)
    q = style.posterior(scores, default, floor=style.FLOOR)
    total = sum(m.prior for m in models)
    return tuple(
        replace(m, prior=q[style.unit_of(m)] * (m.prior / total) / default[style.unit_of(m)])
        for m in models
    )


def memory_plan(memory: EchoMemory | None, layers: Layers = ALL_LAYERS) -> MemoryPlan | None:
    """What the planner plays with from this memory (None: nothing learned or the gate
    closed, its defaults): `models_plan` and who the opponent is (`echo.opponent`: its
    own gate, "none of these" against the family's policies)."""
    plan = models_plan(memory, layers)
    if memory is None or not layers.opponent:
        return plan
    from horcrux.echo.opponent import plan_prior

    corrections = [c for c in memory.items if isinstance(c, Correction)]
    prior = plan_prior(memory.opponent_fit(), corrections=corrections)
    if prior is None:
        return plan
    return replace(plan or MemoryPlan(()), opponent=prior)


def models_plan(memory: EchoMemory | None, layers: Layers = ALL_LAYERS) -> MemoryPlan | None:
    """The planner's models and knobs from this memory (None: nothing learned or the gate
    closed, its defaults): `full_plan` through the memory gate (`echo.gate`: the plan's
    prior mixed with the default's by w(S)), the operator's preferences outside it."""
    from horcrux.echo import gate

    plan = full_plan(memory, layers)
    if plan is None or not layers.gate:
        return plan
    assert memory is not None
    found = memory.style()
    w = gate.weight(found.gate if found else 0.0)
    if w >= 1.0:
        return plan
    from horcrux.belief.bayes import DEFAULT_MODE, MODES

    default = MODES[DEFAULT_MODE]
    if w <= 0.0:
        return MemoryPlan(default, plan.params) if plan.params else None
    return MemoryPlan(gate.mixed_models(plan.models, default, w), plan.params)


def full_plan(memory: EchoMemory | None, layers: Layers = ALL_LAYERS) -> MemoryPlan | None:
    """The memory's plan without the gate: the learned models, the style's priors, the
    corrections and preferences (None: nothing learned)."""
    from horcrux.echo import style

    if memory is None:
        return None
    learned = (
        rate_models(learned_rates(memory, evidence=layers.beliefs, corrections=layers.corrections))
        if layers.beliefs or layers.corrections
        else None
    )
    found = memory.style()
    scores: dict[str, float] = dict(found.scores) if found and layers.style else {}
    params: dict[str, float] = {}
    if layers.corrections:
        for c in memory.items:
            if not isinstance(c, Correction) or c.valid_to is not None or c.rate is None:
                continue
            if c.subject in PARAM_SUBJECTS:
                params[c.subject] = c.rate
            elif c.subject == "threshold":
                nearest = nearest_threshold(c.rate)
                for unit in (f"belief@{nearest:g}", f"belief@{nearest:g}/naive"):
                    scores[unit] = scores.get(unit, 0.0) + style.CORRECTION_NATS
    if learned is None and not scores and not params:
        return None
    return MemoryPlan(joined_models(learned, scores or None), params)


def nearest_threshold(rate: float) -> float:
    """The belief models' threshold nearest to an asserted one (the lowest of near-equally
    near ones: `ties`)."""
    from horcrux.belief import ties
    from horcrux.belief.bayes import BELIEF_THRESHOLDS

    listed = sorted(BELIEF_THRESHOLDS)
    return ties.first_best(listed, {t: -abs(t - rate) for t in listed})


def memory_line(memory: EchoMemory | None, config: EchoConfig | None = None) -> str | None:
    """At most one line for the L1 context: corrections, then beliefs, as data (never
    instructions), cut to `memory_line_chars` and cleaned."""
    if memory is None or not memory.items:
        return None
    cfg = config or default_config()
    ranked = recall(memory, LINE_QUERY, config=cfg)
    order: dict[type, int] = {Correction: 0, Belief: 1}
    # corrections first, each kind in recall's ranked order (best first, `ties`)
    picked = sorted((r for r in ranked if type(r.item) in order), key=lambda r: order[type(r.item)])
    found = memory.style()
    held = None
    if found is not None and full_plan(memory) is not None:
        from horcrux.echo import gate

        held = gate.line(found.gate)
    from horcrux.echo.opponent_words import line as opponent_line

    who = opponent_line(memory.opponent_fit())
    if not picked and held is None and who is None:
        return None
    parts = [p for p in (held, who) if p is not None]
    for r in picked:
        text = r.item.text
        if isinstance(r.item, Belief):
            text += f" (p={r.item.confidence:.2f})"
        parts.append(text)
    line = f"vs {memory.opponent}: " + "; ".join(parts)
    from horcrux.memory.context import clean_memory_line  # brings the belief map (numpy)

    return clean_memory_line(line[: cfg.memory_line_chars])
