"""What each seat may see (docs/RULES.md, "Who sees what").

Harry's view and the spectator's view are built from public fields only: never the true
positions, the decoys, Voldemort's actions or the seed (which would let anyone recompute
the placement and the sensor's dice). Voldemort sees the truth, but not the seed either.
The full record is released only as a `Replay`, once the game is over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from horcrux import engine
from horcrux.errors import IllegalAction
from horcrux.models import (
    GameStarted,
    GameState,
    HarryMoved,
    HarryRecord,
    Phase,
    Seat,
    VoldemortMoved,
)
from horcrux.rules import AllyName, RuleSet


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class AllyStatus(_View):
    rest: int
    uses_left: int | None
    available: bool


class HarryView(_View):
    """Harry's knowledge: his own actions and results, and public counters."""

    seat: Literal["harry", "spectator"] = "harry"
    rules: RuleSet
    turn: int
    phase: Phase
    attacks_left: int
    horcruxes_destroyed: int
    horcruxes_left: int
    allies: dict[AllyName, AllyStatus]
    history: tuple[HarryRecord, ...]
    winner: Seat | None = None
    end_reason: str | None = None

    @property
    def over(self) -> bool:
        return self.phase == "over"

    @property
    def turns_left(self) -> int:
        """Harry's actions still to come, this turn's included."""
        return self.rules.max_turns - self.turn + 1


class VoldemortView(HarryView):
    """Everything Harry knows, plus the truth and Voldemort's own charges."""

    seat: Literal["voldemort"] = "voldemort"  # type: ignore[assignment]
    horcrux_locations: tuple[str, ...]
    decoy_locations: tuple[str, ...]
    relocations_left: int
    decoys_left: int

    @property
    def last_harry(self) -> HarryRecord | None:
        """Harry's action of this turn and its result (Voldemort acts right after it)."""
        return self.history[-1] if self.history else None

    def free_locations(self) -> list[str]:
        """Locations holding neither a Horcrux nor a decoy, in board order."""
        taken = set(self.horcrux_locations) | set(self.decoy_locations)
        return [loc for loc in self.rules.locations if loc not in taken]


def _public(state: GameState) -> dict[str, Any]:
    allies = {
        name: AllyStatus(
            rest=state.ally_rest(name),
            uses_left=state.ally_uses_left.get(name),
            available=state.ally_rest(name) == 0 and state.ally_uses_left.get(name, 1) > 0,
        )
        for name in state.rules.allies
    }
    return {
        "rules": state.rules,
        "turn": state.turn,
        "phase": state.phase,
        "attacks_left": state.attacks_left,
        "horcruxes_destroyed": state.destroyed,
        "horcruxes_left": state.horcruxes_left,
        "allies": allies,
        "history": state.history,
        "winner": state.winner,
        "end_reason": state.end_reason,
    }


def harry_view(state: GameState) -> HarryView:
    return HarryView(**_public(state))


def spectator_view(state: GameState) -> HarryView:
    """A spectator sees what Harry sees; the full record comes as a `Replay` at the end."""
    return HarryView(seat="spectator", **_public(state))


def voldemort_view(state: GameState) -> VoldemortView:
    return VoldemortView(
        **_public(state),
        horcrux_locations=state.horcruxes,
        decoy_locations=state.decoys,
        relocations_left=state.relocations_left,
        decoys_left=state.decoys_left,
    )


def view_for(state: GameState, seat: Seat | None) -> HarryView:
    """The view a seat (None: a spectator) is entitled to."""
    if seat == "harry":
        return harry_view(state)
    if seat == "voldemort":
        return voldemort_view(state)
    return spectator_view(state)


class ReplayTurn(_View):
    """One event with the truth right after it."""

    seq: int
    turn: int
    actor: Literal["setup", "harry", "voldemort"]
    action: dict[str, Any] | None
    observations: list[dict[str, Any]]
    horcruxes: tuple[str, ...]
    decoys: tuple[str, ...]
    destroyed: int
    attacks_left: int


class Replay(_View):
    """The whole game, released only after it ends: seed, every event, truth per step."""

    rules: RuleSet
    seed: int
    winner: Seat | None
    end_reason: str | None
    steps: list[ReplayTurn]


def build_replay(events: list[GameStarted | HarryMoved | VoldemortMoved]) -> Replay:
    """Re-run the events through the engine (checking each) and record the truth per step."""
    started = events[0]
    if not isinstance(started, GameStarted):
        raise IllegalAction("a replay starts with the game_started event")
    state, _ = engine.new_game(started.rules, started.seed)
    steps = [_step(state, 0, 0, "setup", None, [])]
    for event in events[1:]:
        assert not isinstance(event, GameStarted)
        state, _ = engine.apply(state, event.action)
        observations = (
            [o.model_dump() for o in event.observations] if isinstance(event, HarryMoved) else []
        )
        actor: Literal["harry", "voldemort"] = (
            "harry" if isinstance(event, HarryMoved) else "voldemort"
        )
        steps.append(
            _step(state, event.seq, event.turn, actor, event.action.model_dump(), observations)
        )
    if not state.over:
        raise IllegalAction("the replay is released only after the game is over")
    return Replay(
        rules=started.rules,
        seed=started.seed,
        winner=state.winner,
        end_reason=state.end_reason,
        steps=steps,
    )


def _step(
    state: GameState,
    seq: int,
    turn: int,
    actor: Literal["setup", "harry", "voldemort"],
    action: dict[str, Any] | None,
    observations: list[dict[str, Any]],
) -> ReplayTurn:
    return ReplayTurn(
        seq=seq,
        turn=turn,
        actor=actor,
        action=action,
        observations=observations,
        horcruxes=state.horcruxes,
        decoys=state.decoys,
        destroyed=state.destroyed,
        attacks_left=state.attacks_left,
    )


def public_view(view: HarryView, history: Sequence[HarryRecord]) -> VoldemortView:
    """Voldemort's view right after Harry's turn `history[-1]`, without the truth: the
    public counters of that moment (recounted from the record), the allies as Harry sees
    them now (the same rest count both seats see between two of Harry's turns)."""
    record = history[-1]
    attacks = sum(1 for r in history for o in r.observations if o.kind == "attack")
    destroyed = sum(1 for r in history for o in r.observations if o.outcome == "destroyed")
    rules = view.rules
    return VoldemortView.model_construct(
        seat="voldemort",
        rules=rules,
        turn=record.turn,
        phase="voldemort",
        attacks_left=rules.attacks - attacks,
        horcruxes_destroyed=destroyed,
        horcruxes_left=rules.horcruxes - destroyed,
        allies=view.allies,
        history=tuple(history),
        winner=None,
        end_reason=None,
        horcrux_locations=(),
        decoy_locations=(),
        relocations_left=0,
        decoys_left=0,
    )
