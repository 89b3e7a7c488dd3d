"""ECHO's memory items: experiences, beliefs, the style, corrections (and preferences),
patterns and skills of older records, and one scope's memory. Pydantic, frozen,
JSON-encodable; no clock: every time is the scope's clock value (a game ordinal, or hours
when the config says so)."""

from __future__ import annotations

import hashlib
import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MEMORY_SCHEMA = 1
"""Bumped when the stored shape changes; a start-up that reads another one rebuilds."""

Subject = Literal[
    "relocates",
    "immediate",
    "plant_top",
    "plant_blind",
    "decoy_hit",
    "win",
    "note",
    "style",
    "threshold",
    "jitter",
    "near",
    "hesitate",
    "attack_near",
    "timing",
    "opponent",
]
ADVERSARY_SUBJECTS: tuple[Subject, ...] = ("relocates", "immediate", "plant_top", "plant_blind")
"""The rates that set the Bayes filter's adversary parameters."""
PARAM_SUBJECTS: tuple[Subject, ...] = ("jitter", "near", "hesitate", "attack_near", "timing")
"""The planner knobs (`PlannerParams` fields) a preference may set."""
ACTIONABLE_SUBJECTS: tuple[Subject, ...] = (*ADVERSARY_SUBJECTS, "threshold", *PARAM_SUBJECTS)
"""What a correction or preference may name: each reaches the planner's decision (a rate
of the learned models, the opponent's trigger threshold, a knob of the planner)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def item_id(*parts: object) -> str:
    """A deterministic short id (the same inputs give the same id on every run)."""
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12]


class _Item(_Frozen):
    id: str
    subject: Subject
    text: str = Field(max_length=300)
    created: float
    last_access: float
    life: float = Field(gt=0, description="the current half-life (clock units)")
    accesses: int = 0


class Experience(_Item):
    """One observation of one game, e.g. 'relocated 3 turns after my positive'."""

    level: Literal["experience"] = "experience"
    success: bool = Field(description="whether it confirms the subject's rate (a 1 or a 0)")
    game_id: str


class Pattern(_Item):
    """An older record only: k of n experiences of one subject. No layer makes patterns
    now (batching experiences changed no measured decision: docs/ECHO.md); one left in a
    record folds into its subject's belief at the next consolidation, as its k of n."""

    level: Literal["pattern"] = "pattern"
    successes: int
    trials: int

    @property
    def rate(self) -> float:
        return self.successes / self.trials if self.trials else 0.5


def beta_cdf(x: float, a: float, b: float, steps: int = 400) -> float:
    """P(rate <= x) under Beta(a, b), by the midpoint rule on the log density."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lognorm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)

    def dens(p: float) -> float:
        return math.exp(lognorm + (a - 1) * math.log(p) + (b - 1) * math.log1p(-p))

    h = 1.0 / steps
    total = below = 0.0
    for i in range(steps):
        p = (i + 0.5) * h
        d = dens(p) * h
        total += d
        if p <= x:
            below += d
    return below / total if total > 0 else 0.5


CORRECTION_TOLERANCE = 0.2
CORRECTION_MIN_TRIALS = 9


def correction_support(rate: float, successes: int, trials: int) -> float:
    """How much the evidence supports a corrected rate: P(|r - rate| <= 0.2) under the
    evidence's Beta(1 + s, 1 + f); 1.0 below `CORRECTION_MIN_TRIALS` observations."""
    if trials < CORRECTION_MIN_TRIALS:
        return 1.0
    a, b = 1.0 + successes, 1.0 + trials - successes
    hi = beta_cdf(min(1.0, rate + CORRECTION_TOLERANCE), a, b)
    lo = beta_cdf(max(0.0, rate - CORRECTION_TOLERANCE), a, b)
    return round(max(0.0, hi - lo), 4)


class Belief(_Item):
    """A rate the evidence supports, with its Beta posterior and validity interval.

    `alpha` / `beta` are the Beta posterior's parameters (1 + confirmations, 1 +
    disconfirmations) over the rate the belief describes; `confidence` is the posterior
    probability that the rate is on the side of 1/2 the mean is on, never a hand-set
    number. A superseded belief keeps its record with `valid_to` and `superseded_by`."""

    level: Literal["belief"] = "belief"
    alpha: float = Field(gt=0)
    beta: float = Field(gt=0)
    patterns: int = 0
    """The units of evidence folded in (experiences; an older record's patterns)."""
    valid_from: float
    valid_to: float | None = None
    superseded_by: str | None = None
    frozen: bool = False
    source: Literal["evidence", "correction"] = "evidence"
    challenge_successes: int = 0
    challenge_trials: int = 0
    challenge_patterns: int = 0
    """Contradicting units in a row (`supersede_after` of them supersede the belief)."""
    applied: int = 0
    applied_ok: int = 0
    evidence_successes: int = 0
    """A correction belief's evidence since it was asserted (or last confirmed)."""
    evidence_trials: int = 0
    corrected_rate: float | None = Field(default=None, ge=0, le=1)
    """The rate the operator asserted (a correction belief only)."""
    conflict: bool = False
    """A correction belief the evidence contradicts (its `confidence` fell below
    `conflict_below`): flagged for the operator (confirm or retire)."""

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def trials(self) -> float:
        return self.alpha + self.beta - 2

    @property
    def confidence(self) -> float:
        """Evidence: the posterior P(rate on the mean's side of 1/2). A correction: the
        evidence's posterior P(rate within `CORRECTION_TOLERANCE` of the corrected rate),
        1 until `CORRECTION_MIN_TRIALS` observations (the operator's word until then)."""
        if self.source == "correction" and self.corrected_rate is not None:
            return correction_support(
                self.corrected_rate, self.evidence_successes, self.evidence_trials
            )
        below = beta_cdf(0.5, self.alpha, self.beta)
        return round(1.0 - below if self.mean >= 0.5 else below, 4)

    @property
    def active(self) -> bool:
        return self.valid_to is None


class Skill(_Item):
    """A record from before: a skill restated a belief's rate (`rate`, `belief_id`), or set
    planner knobs (`params`). No layer makes skills any more (neither kind changed a
    measured decision: docs/ECHO.md); an active one is ended at the next consolidation
    and kept as history (`valid_to`), never read by the planner."""

    level: Literal["skill"] = "skill"
    rate: float = Field(default=0.0, ge=0, le=1)
    belief_id: str = ""
    rule: str
    params: dict[str, float] = Field(default_factory=dict)
    valid_from: float
    valid_to: float | None = None

    @property
    def active(self) -> bool:
        return self.valid_to is None


class Correction(_Item):
    """An operator's correction or preference (POST /memory/corrections). Protected.

    With `rate` set (and an adversary `subject`) it also asserts that rate: a frozen
    belief from the correction supersedes the evidence's."""

    level: Literal["correction"] = "correction"
    kind: Literal["correction", "preference"] = "correction"
    wrong: str = Field(default="", max_length=200)
    right: str = Field(default="", max_length=200)
    rate: float | None = Field(default=None, ge=0, le=1)
    valid_from: float
    valid_to: float | None = None
    """Set when the operator retires it (its belief, if any, ends with it)."""
    confirmed: int = 0
    """How many times the operator confirmed it against contradicting evidence."""
    evidence: dict[str, float] = Field(default_factory=dict)
    """A `threshold` correction's evidence since it was asserted (or last confirmed): per
    belief-reacting model unit (`belief@T`, `belief@T/naive`), the tempered sum of every
    game's factor (`Style`), never discounted (frozen: protected from decay, not from
    evidence)."""
    evidence_games: int = 0
    confidence: float = Field(default=1.0, ge=0, le=1)
    """A `threshold` correction: the evidence's posterior probability of the corrected
    threshold (`style.threshold_support`), 1 until `THRESHOLD_MIN_GAMES` games."""
    conflict: bool = False
    """A `threshold` correction the evidence contradicts (`confidence` below
    `conflict_below`): flagged for the operator (confirm or retire)."""


class Style(_Item):
    """Which of the planner's adversary models fit this opponent, across games: per model
    unit (the level-0 group, each belief-reacting model with its threshold, `rule`,
    `early`, the learned ones) a discounted, tempered sum of each game's factor (the
    log-likelihood of Voldemort's actual moves under the unit over that under the
    default mixture, `echo.gate`).
    One per scope; protected (it is rewritten every game). `gate`: the memory gate's
    score S (`echo.gate`: the discounted log-likelihood ratio of the opponent's moves
    under memory's plan over the default prior), `gate_last` the last game's ratio
    (both 0 on items stored before the gate)."""

    level: Literal["style"] = "style"
    scores: dict[str, float] = Field(default_factory=dict)
    games: int = 0
    gate: float = 0.0
    gate_last: float = 0.0


class Opponent(_Item):
    """Who the opponent is, across games (`echo.opponent`): the discounted log-likelihood
    tables of Voldemort's moves under the generated family's policies (`trigger[t][o]`,
    `destination[d][o]`, `decoys[c][o]`, on `agents.family_fit`'s grids) and under "none
    of these" (`none`: the default's own adversary mixture), after `games` games. One per
    scope; protected (it is rewritten every game)."""

    level: Literal["opponent"] = "opponent"
    trigger: tuple[tuple[float, ...], ...]
    destination: tuple[tuple[float, ...], ...]
    decoys: tuple[tuple[float, ...], ...]
    none: float = 0.0
    games: int = 0
    edge: float = 0.0
    """The discounted sum, over games, of how much better the posterior before each game
    predicted it than "none of these" (nats, each game's share at least -10)."""
    contradicted: tuple[str, ...] = ()
    """The operator's corrections his moves contradict (ids): they no longer steer play."""


AnyItem = Annotated[
    Experience | Pattern | Belief | Skill | Correction | Style | Opponent,
    Field(discriminator="level"),
]


class Quarantined(_Frozen):
    """An item a tripped leak guard kept out of the live memory instead of dropping it:
    for the operator to review (`restore` puts it back, `purge` drops it)."""

    item: AnyItem
    game_id: str
    reason: str
    clock: float


class EchoMemory(_Frozen):
    """One scope's memory: an AI Harry (`agent`) against one opponent.

    `version` moves by one per write (conditional writes); `last_game` is the id of the
    last game consolidated: a start-up compares it with the recent results' last."""

    schema_version: int = MEMORY_SCHEMA
    agent: str
    opponent: str
    version: int = 0
    games: int = 0
    last_game: str = ""
    clock: float = 0.0
    items: tuple[AnyItem, ...] = ()
    seen: tuple[str, ...] = Field(default=(), description="the last game ids consolidated")
    quarantine: tuple[Quarantined, ...] = ()
    counters: dict[str, int] = Field(
        default_factory=dict,
        description="what left the live memory and how, cumulative: `evicted:<level>` (the "
        "cap), `archived` (history beyond its bound), `quarantined`, `forgotten` (decay), "
        "`unrebuilt_games` (games a rebuild could not recover)",
    )

    def of_level(self, level: str) -> list[AnyItem]:
        return [i for i in self.items if i.level == level]

    def active_beliefs(self) -> dict[str, Belief]:
        out: dict[str, Belief] = {}
        for item in self.items:
            if isinstance(item, Belief) and item.active:
                out[item.subject] = item
        return out

    def active_skills(self) -> dict[str, Skill]:
        return {i.subject: i for i in self.items if isinstance(i, Skill) and i.active}

    def style(self) -> Style | None:
        return next((i for i in self.items if isinstance(i, Style)), None)

    def opponent_fit(self) -> Opponent | None:
        return next((i for i in self.items if isinstance(i, Opponent)), None)


def protected(item: AnyItem) -> bool:
    """Corrections, skills, frozen beliefs and superseded history survive every compaction."""
    if isinstance(item, Correction | Skill | Style | Opponent):
        return True
    if isinstance(item, Belief):
        return item.frozen or not item.active or item.source == "correction"
    return False
