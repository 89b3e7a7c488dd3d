"""The two seat interfaces and a registry of brains by name, open to third parties.

A brain is made fresh for each game by its factory and then asked `decide(view, rng)`
once per turn. Specs are `name` or `name:param` (`planner-window:8`). Third-party brains
register with `HARRY_BRAINS.register(...)` or through the entry-point groups
`horcrux.harry_brains` / `horcrux.voldemort_brains` (a factory taking `BrainOptions`).

The built-in brains (`BUILTIN_MODULES`, both seats' and the season's Voldemort styles in
`horcrux.agents.opponents`) register when a registry is first asked for a name, whatever was
imported before: not when `horcrux.agents` is imported (the planner brings numpy and the
Bayes tables, which a Lambda serving only reads and human moves never needs at cold start),
and never through entry points, which a Lambda layer (a folder on `sys.path`) need not carry.
The entry-point groups are for third-party brains only.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, Generic, Protocol, TypeVar

from horcrux.errors import UnknownBrain
from horcrux.models import Ally, Attack, GameState, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import RuleSet
from horcrux.views import HarryView, VoldemortView

HarryMove = Search | Attack | Ally
VoldemortMove = Relocate | PlantDecoy | Pass


class HarryBrain(Protocol):
    name: str

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove: ...


class VoldemortBrain(Protocol):
    name: str

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove: ...


@dataclass(frozen=True)
class BrainOptions:
    """What a factory gets: the rules, the spec's parameter, and (simulation only) the truth."""

    rules: RuleSet
    param: str | None = None
    truth: Callable[[], GameState] | None = None
    settings: dict[str, Any] = field(default_factory=dict)


B = TypeVar("B")

DEFAULT_HARRY = "planner"
"""The one default AI Harry: the API's, `horcrux simulate`'s, `replay`'s and `make demo`'s."""
DEFAULT_VOLDEMORT = "reference"

RETIRED_PLANNER_MODES = (
    "aware-exact",
    "aware-fixed",
    "aware-timing",
    "aware-probe",
    "aware-race",
    "aware-models",
    "aware-charge",
    "aware-lag",
)
"""Planner modes that were once seat specs (`planner:MODE`) and are no longer: a stored
seat naming one plays the default planner; a new seat naming one is refused."""
RETIRED_HARRY: dict[str, str] = {f"planner:{mode}": DEFAULT_HARRY for mode in RETIRED_PLANNER_MODES}
"""Retired Harry specs and the spec a stored seat naming one plays."""

BUILTIN_MODULES = (
    "horcrux.agents.voldemort",
    "horcrux.agents.harry_baselines",
    "horcrux.agents.planner",
    "horcrux.agents.llm",
    "horcrux.agents.gated",
    "horcrux.agents.adversaries",
    "horcrux.agents.opponents",
    "horcrux.agents.family",
    "horcrux.agents.particle_harry",
)
"""The modules whose import registers the built-in brains of both seats (every one of them,
imported on a registry's first lookup: a built-in never depends on what else was imported)."""
_builtins = {"loaded": False, "loading": False}
_builtins_lock = threading.RLock()
"""Held while the built-ins load: a thread that looks a brain up meanwhile (the local
server's request threads) waits for every module instead of finding half a registry."""


def load_builtin_brains() -> None:
    """Import `BUILTIN_MODULES` once. A name registered before keeps its factory."""
    if _builtins["loaded"]:
        return
    with _builtins_lock:
        if _builtins["loaded"] or _builtins["loading"]:  # done, or this thread's own import
            return
        _builtins["loading"] = True
        try:
            for module in BUILTIN_MODULES:
                import_module(module)
            _builtins["loaded"] = True
        finally:
            _builtins["loading"] = False


@dataclass(frozen=True)
class BrainEntry(Generic[B]):
    name: str
    factory: Callable[[BrainOptions], B]
    description: str
    seat_allowed: bool


class Registry(Generic[B]):
    """Brains of one seat by name. `seat_allowed=False` marks evaluation-only brains."""

    def __init__(
        self, seat: str, entry_point_group: str, retired: dict[str, str] | None = None
    ) -> None:
        self.seat = seat
        self._group = entry_point_group
        self._retired = dict(retired or {})
        self._entries: dict[str, BrainEntry[B]] = {}
        self._plugins_loaded = False

    def register(
        self, name: str, *, description: str = "", seat_allowed: bool = True
    ) -> Callable[[Callable[[BrainOptions], B]], Callable[[BrainOptions], B]]:
        def add(factory: Callable[[BrainOptions], B]) -> Callable[[BrainOptions], B]:
            if not (_builtins["loading"] and name in self._entries):
                self._entries[name] = BrainEntry(name, factory, description, seat_allowed)
            return factory

        return add

    def _load_plugins(self) -> None:
        load_builtin_brains()
        with _builtins_lock:  # uncontended after the first lookup
            if self._plugins_loaded:
                return
            for ep in entry_points(group=self._group):
                if ep.name not in self._entries:
                    self._entries[ep.name] = BrainEntry(ep.name, ep.load(), "plugin", True)
            self._plugins_loaded = True

    def names(self, *, seat_only: bool = False) -> list[str]:
        self._load_plugins()
        return sorted(n for n, e in self._entries.items() if e.seat_allowed or not seat_only)

    def entry(self, spec: str, *, for_seat: bool = False) -> tuple[BrainEntry[B], str | None]:
        self._load_plugins()
        name, _, param = spec.partition(":")
        found = self._entries.get(name)
        if found is None or (for_seat and not found.seat_allowed):
            known = ", ".join(self.names(seat_only=for_seat))
            raise UnknownBrain(f"unknown {self.seat} brain {spec!r}; known: {known}")
        return found, (param or None)

    def resolve(self, spec: str) -> str:
        """The spec a stored seat naming `spec` plays: `spec`, or the replacement of a
        retired spec (`RETIRED_HARRY`). No brain module is imported."""
        return self._retired.get(spec, spec)

    def create(
        self,
        spec: str,
        rules: RuleSet,
        *,
        truth: Callable[[], GameState] | None = None,
        for_seat: bool = False,
        settings: dict[str, Any] | None = None,
        stored: bool = False,
    ) -> B:
        """A fresh brain for one game. `for_seat=True` refuses evaluation-only brains;
        `stored=True` (a seat already stored) plays a retired spec's replacement, which a
        new seat naming it is refused (`UnknownBrain`, by the brain's own factory)."""
        if stored:
            spec = self.resolve(spec)
        found, param = self.entry(spec, for_seat=for_seat)
        options = BrainOptions(rules=rules, param=param, truth=truth, settings=settings or {})
        return found.factory(options)


HARRY_BRAINS: Registry[HarryBrain] = Registry("harry", "horcrux.harry_brains", RETIRED_HARRY)
VOLDEMORT_BRAINS: Registry[VoldemortBrain] = Registry("voldemort", "horcrux.voldemort_brains")


def int_param(options: BrainOptions, default: int, what: str) -> int:
    """Parse a brain's integer parameter (`naive:16`), naming the problem if it is bad."""
    if options.param is None:
        return default
    try:
        value = int(options.param)
    except ValueError:
        raise UnknownBrain(f"{what} must be a whole number, got {options.param!r}") from None
    if value < 1:
        raise UnknownBrain(f"{what} must be at least 1, got {value}")
    return value
