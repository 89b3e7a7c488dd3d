"""What the memory is for: the Bayes filter's adversary parameters, and one line of L1.

* `learned_rates`: per adversary subject, the rate a skill (first) or an active belief
  states, else None.
* `adversary_models`: those rates as `AdversaryModel`s for `BayesBelief(models=...)`: a
  `trigger` model (trigger = P(a relocation comes at once after my positive), plant =
  P(a decoy is planted at my top location)), a `hazard` model for the relocations that
  come later, and a `static` one, weighted by P(relocates). None when nothing is learned
  yet: the caller keeps the filter's defaults.
* `memory_line`: the skills, corrections and beliefs in one short line of plain data (the
  context cleans it, labels it as memory and fits it to the token budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.model import ADVERSARY_SUBJECTS, Belief, Correction, EchoMemory, Skill
from horcrux.echo.recall import recall

if TYPE_CHECKING:  # numpy comes with the belief map: imported where models are built
    from horcrux.belief.bayes import AdversaryModel

TRIGGER_FLOOR = 0.1
DEFAULT_RATES = {"relocates": 0.8, "immediate": 0.8, "plant_top": 0.8}
LINE_QUERY = "voldemort relocates horcrux after my positive decoy top location attack"


def learned_rates(memory: EchoMemory) -> dict[str, float | None]:
    skills = memory.active_skills()
    beliefs = memory.active_beliefs()
    out: dict[str, float | None] = {}
    for subject in ADVERSARY_SUBJECTS:
        if subject in skills:
            out[subject] = skills[subject].rate
        elif subject in beliefs:
            out[subject] = beliefs[subject].mean
        else:
            out[subject] = None
    return out


def adversary_models(memory: EchoMemory | None) -> tuple[AdversaryModel, ...] | None:
    """The learned adversary as Bayes models (None: nothing learned, keep the defaults)."""
    from horcrux.belief.bayes import AdversaryModel

    if memory is None:
        return None
    rates = learned_rates(memory)
    if all(v is None for v in rates.values()):
        return None
    r = rates["relocates"] if rates["relocates"] is not None else DEFAULT_RATES["relocates"]
    t = rates["immediate"] if rates["immediate"] is not None else DEFAULT_RATES["immediate"]
    plant = rates["plant_top"] if rates["plant_top"] is not None else DEFAULT_RATES["plant_top"]
    trigger_prior = round(max(TRIGGER_FLOOR, r * t), 4)
    # relocations that do not follow a positive at once are not what either filter
    # expects; the static filter then trusts its decoy model less, in that proportion
    static_plant = round(plant * (1.0 - r * (1.0 - t)), 3)
    return (
        AdversaryModel(
            "trigger", "trigger", trigger=1.0, plant=round(plant, 3), prior=trigger_prior
        ),
        AdversaryModel("static", "static", plant=static_plant, prior=round(1 - trigger_prior, 4)),
    )


def memory_line(memory: EchoMemory | None, config: EchoConfig | None = None) -> str | None:
    """At most one line for the L1 context: skills, then corrections, then beliefs, as
    data (never instructions), cut to `memory_line_chars` and cleaned."""
    if memory is None or not memory.items:
        return None
    cfg = config or default_config()
    ranked = recall(memory, LINE_QUERY, config=cfg)
    order: dict[type, int] = {Skill: 0, Correction: 1, Belief: 2}
    picked = sorted(
        (r for r in ranked if type(r.item) in order),
        key=lambda r: (order[type(r.item)], -r.score),
    )
    if not picked:
        return None
    parts = []
    for r in picked:
        text = r.item.text
        if isinstance(r.item, Belief):
            text += f" (p={r.item.confidence:.2f})"
        parts.append(text)
    line = f"vs {memory.opponent}: " + "; ".join(parts)
    from horcrux.memory.context import clean_memory_line  # brings the belief map (numpy)

    return clean_memory_line(line[: cfg.memory_line_chars])
