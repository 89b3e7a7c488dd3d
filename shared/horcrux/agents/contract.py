"""The brain contract: what a brain may offer beyond `name` and `decide`, as protocols.

Every brain is a `HarryBrain` or a `VoldemortBrain` (`horcrux.agents.base`): a `name` and
`decide(view, rng)`. What else the game's code uses is a capability, declared here as a
`typing.Protocol` and checked with `isinstance` (each is `@runtime_checkable`) where the
code must know: never by probing attributes with `getattr`, never by testing the class.

* `ViewSynced`: its whole state is a function of its seat's view (`sync(view)` folds the
  view in), so a fresh one decides exactly as one kept between turns would. The service
  stores no brain state: a brain is built afresh each turn, so a brain with state beyond
  its view cannot be seated (it would forget between turns).
* `Planner`: decides on a Bayes map it keeps in sync with the view (`belief`, `sync`,
  `choose`, `candidates`): what an LLM Harry's fallback must be for its candidate list,
  its baseline move and its L1 context.
* `MemoryAdopter`: plays what cross-game memory decided (`adopt_memory(models, params)`).
* `MemoryReader`: says which part of it cross-game memory plays through
  (`memory_planner()`: itself, the planner inside it, or None: this brain, as configured,
  plays without memory). Memory is read, written and routed only for these.
* `MemoryLineReader`: puts cross-game memory's line in its LLM context
  (`adopt_memory_line(line)`).
* `DecisionRecorder`: keeps a `DecisionRecord` per decision (`decisions`).
* `BeliefHolder`: exposes Harry's belief map (`belief`: `occupancy`, `entropy`, `top`).
* `StatsReporter`: summarises its game (`stats()`, printed by `horcrux simulate`).

`tests/test_contract.py` asserts which of these each built-in brain satisfies, so a
renamed method fails a test instead of silently disabling a feature.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from horcrux.agents.base import HarryBrain, HarryMove, VoldemortBrain
from horcrux.decisions import DecisionRecord
from horcrux.views import HarryView

if TYPE_CHECKING:  # the Bayes tables bring numpy: types only
    from horcrux.agents.planner import Choice, PlannerHarry
    from horcrux.belief.bayes import AdversaryModel, BayesBelief


@runtime_checkable
class Brain(Protocol):
    """Any seat's brain: `HarryBrain` or `VoldemortBrain` without the seat's types."""

    name: str

    def decide(self, view: Any, rng: random.Random) -> Any: ...


@runtime_checkable
class ViewSynced(Protocol):
    """A brain whose whole state is a pure function of its seat's view: `sync(view)` folds
    in what the view holds that it has not seen (`decide` does it). A fresh one decides as
    one restored from a snapshot would, so none is stored (`tests/test_service.py`)."""

    def sync(self, view: HarryView) -> None: ...


@runtime_checkable
class MemoryAdopter(Protocol):
    """A brain that plays what cross-game memory decided: the whole model set (priors
    included) and knob overrides (`horcrux.echo.use.memory_plan`; docs/ECHO.md)."""

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None: ...


@runtime_checkable
class Planner(Protocol):
    """A Harry who decides on a Bayes map he keeps in sync with the view (the planners):
    what an LLM Harry's fallback must be for its candidate list and baseline move
    (`candidates`, `choose`) and its L1 context (`belief`, `memory.working`)."""

    @property
    def belief(self) -> BayesBelief: ...

    def sync(self, view: HarryView) -> None: ...

    def choose(self, view: HarryView, rng: random.Random | None = None) -> Choice: ...

    def candidates(self, view: HarryView, limit: int) -> tuple[list[HarryMove], HarryMove]:
        """The moves worth offering on the synced map for `view`, and his own move."""
        ...


@runtime_checkable
class MemoryReader(Protocol):
    """A Harry whose play cross-game memory may set: `memory_planner()` is the planner it
    plays memory through (itself, or the one inside it), or None when this brain, as
    configured, plays without memory (a mode or a window memory was not measured with)."""

    def memory_planner(self) -> PlannerHarry | None: ...


@runtime_checkable
class MemoryLineReader(Protocol):
    """A brain whose LLM context carries cross-game memory's one line (`memory_line`)."""

    def adopt_memory_line(self, line: str) -> None: ...


@runtime_checkable
class DecisionRecorder(Protocol):
    """A brain that keeps one `DecisionRecord` per decision (the replay's notes, the
    decision statistics)."""

    decisions: list[DecisionRecord]


@runtime_checkable
class BeliefSummary(Protocol):
    """What the game's code reads of a belief map (`horcrux.belief.base.BeliefMap`)."""

    def occupancy(self) -> dict[str, float]: ...

    def entropy(self) -> float: ...

    def top(self, n: int = 3) -> list[tuple[str, float]]: ...


@runtime_checkable
class BeliefHolder(Protocol):
    """A brain that exposes its belief map (the belief history, the evaluation's
    calibration, a Voldemort's copy of Harry's brain)."""

    @property
    def belief(self) -> BeliefSummary: ...


@runtime_checkable
class StatsReporter(Protocol):
    """A brain that summarises the game it played (`horcrux simulate`'s figures)."""

    def stats(self) -> dict[str, Any]: ...


CAPABILITIES: tuple[type, ...] = (
    ViewSynced,
    Planner,
    MemoryAdopter,
    MemoryReader,
    MemoryLineReader,
    DecisionRecorder,
    BeliefHolder,
    StatsReporter,
)
"""Every capability protocol, in the order `capabilities` lists them."""


def capabilities(brain: object) -> frozenset[str]:
    """The names of the capability protocols `brain` satisfies."""
    return frozenset(p.__name__ for p in CAPABILITIES if isinstance(brain, p))


def belief_of(brain: object) -> BeliefSummary | None:
    """The brain's belief map, if it exposes one that answers `BeliefSummary`."""
    if isinstance(brain, BeliefHolder):
        belief = brain.belief
        if isinstance(belief, BeliefSummary):
            return belief
    return None


def decisions_of(brain: object) -> list[DecisionRecord]:
    """The brain's decision records (empty if it keeps none)."""
    return brain.decisions if isinstance(brain, DecisionRecorder) else []


__all__ = [
    "CAPABILITIES",
    "BeliefHolder",
    "BeliefSummary",
    "Brain",
    "DecisionRecorder",
    "HarryBrain",
    "MemoryAdopter",
    "MemoryLineReader",
    "MemoryReader",
    "Planner",
    "StatsReporter",
    "ViewSynced",
    "VoldemortBrain",
    "belief_of",
    "capabilities",
    "decisions_of",
]
