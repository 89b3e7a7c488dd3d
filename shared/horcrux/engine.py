"""The rules engine: a pure transition `apply(state, action) -> (state, event)`.

Nothing here does I/O or keeps state between calls. Randomness is `rng.unit(seed, ...)`
keyed by turn and draw index, so the same seed and actions replay the same events.
"""

from __future__ import annotations

from typing import Any, overload

from horcrux import errors, rng
from horcrux.models import (
    Ally,
    AnyAction,
    Attack,
    GameStarted,
    GameState,
    HarryMoved,
    HarryRecord,
    Observation,
    Pass,
    PlantDecoy,
    Relocate,
    Search,
    VoldemortMoved,
)
from horcrux.rules import AllyName, RuleSet

HARRY_ACTIONS = (Search, Attack, Ally)
VOLDEMORT_ACTIONS = (Relocate, PlantDecoy, Pass)


def new_game(rules: RuleSet, seed: int) -> tuple[GameState, GameStarted]:
    """Place the Horcruxes uniformly at distinct locations, drawn from the seed."""
    placed = tuple(sorted(rng.stream(seed, "setup").sample(list(rules.locations), rules.horcruxes)))
    state = GameState(
        rules=rules,
        seed=seed,
        horcruxes=placed,
        attacks_left=rules.attacks,
        relocations_left=rules.relocations,
        decoys_left=rules.decoys,
        ally_uses_left={n: a.max_uses for n, a in rules.allies.items() if a.max_uses is not None},
    )
    return state, GameStarted(rules=rules, seed=seed, horcruxes=placed)


@overload
def apply(state: GameState, action: Search | Attack | Ally) -> tuple[GameState, HarryMoved]: ...
@overload
def apply(
    state: GameState, action: Relocate | PlantDecoy | Pass
) -> tuple[GameState, VoldemortMoved]: ...
@overload
def apply(state: GameState, action: AnyAction) -> tuple[GameState, HarryMoved | VoldemortMoved]: ...
def apply(state: GameState, action: AnyAction) -> tuple[GameState, HarryMoved | VoldemortMoved]:
    """Apply one seat's action; raise a typed `IllegalAction` and change nothing if illegal."""
    check(state, action)
    if isinstance(action, HARRY_ACTIONS):
        return _apply_harry(state, action)
    return _apply_voldemort(state, action)


def check(state: GameState, action: AnyAction) -> None:
    """Raise the `IllegalAction` that `action` would break in `state`, if any."""
    if state.over:
        raise errors.GameOver(f"the game is over: {state.winner} won ({state.end_reason})")
    seat = "harry" if isinstance(action, HARRY_ACTIONS) else "voldemort"
    if seat != state.phase:
        raise errors.NotYourTurn(
            f"it is {state.phase}'s turn (turn {state.turn}), not {seat}'s", expected=state.phase
        )
    if isinstance(action, Search | Attack | PlantDecoy):
        _known(state.rules, action.location)
    if isinstance(action, Attack) and state.attacks_left <= 0:
        raise errors.NoAttacksLeft("no attacks left")
    if isinstance(action, Ally):
        _check_ally(state, action)
    if isinstance(action, Relocate):
        if state.relocations_left <= 0:
            raise errors.NoChargesLeft("no relocation charges left")
        _known(state.rules, action.from_location)
        _known(state.rules, action.to_location)
        if action.from_location not in state.horcruxes:
            raise errors.InvalidRelocation(f"no Horcrux at {action.from_location} to relocate")
        _free(state, action.to_location)
    if isinstance(action, PlantDecoy):
        if state.decoys_left <= 0:
            raise errors.NoChargesLeft("no decoy charges left")
        _free(state, action.location)


def _known(rules: RuleSet, location: str) -> None:
    if location not in rules.locations:
        raise errors.UnknownLocation(
            f"unknown location {location!r}; known: {', '.join(rules.locations)}"
        )


def _free(state: GameState, location: str) -> None:
    if location in state.horcruxes:
        raise errors.OccupiedLocation(f"{location} already holds a Horcrux")
    if location in state.decoys:
        raise errors.OccupiedLocation(f"{location} already holds a decoy")


def _check_ally(state: GameState, action: Ally) -> None:
    name = action.ally
    if name not in state.rules.allies:
        raise errors.AllyUnavailable(f"{name} does not play under the {state.rules.name} rules")
    if state.ally_uses_left.get(name, 1) <= 0:
        raise errors.AllyUnavailable(f"{name} has no uses left this game")
    rest = state.ally_rest(name)
    if rest > 0:
        raise errors.AllyUnavailable(f"{name} is resting for {rest} more turn(s)")
    for loc in action.locations:
        _known(state.rules, loc)
    if len(set(action.locations)) != len(action.locations):
        raise errors.DuplicateLocation(f"{name} needs two different locations")


def _search(state: GameState, location: str, index: int, ally: AllyName | None) -> Observation:
    sensor = state.rules.sensor_of(ally)
    responds = location in state.horcruxes or location in state.decoys
    p_positive = sensor.d if responds else sensor.f
    positive = rng.unit(state.seed, "sensor", state.turn, index) < p_positive
    return Observation(
        location=location,
        kind="search",
        outcome="positive" if positive else "negative",
        sensor="hermione" if ally == "hermione" else "harry",
    )


def _apply_harry(state: GameState, action: Search | Attack | Ally) -> tuple[GameState, HarryMoved]:
    changes: dict[str, Any] = {}
    observations: tuple[Observation, ...]
    if isinstance(action, Search):
        observations = (_search(state, action.location, 0, None),)
    elif isinstance(action, Attack):
        loc = action.location
        changes["attacks_left"] = state.attacks_left - 1
        if loc in state.horcruxes:
            outcome = "destroyed"
            changes["horcruxes"] = tuple(h for h in state.horcruxes if h != loc)
            changes["destroyed"] = state.destroyed + 1
        elif loc in state.decoys:
            outcome = "decoy"
            changes["decoys"] = tuple(d for d in state.decoys if d != loc)
        else:
            outcome = "empty"
        observations = (Observation(location=loc, kind="attack", outcome=outcome),)
    else:
        name = action.ally
        if name == "dumbledore":
            loc = action.locations[0]
            reveal = (
                "horcrux" if loc in state.horcruxes else "decoy" if loc in state.decoys else "empty"
            )
            observations = (Observation(location=loc, kind="reveal", outcome=reveal),)
        else:
            observations = tuple(
                _search(state, loc, i, name) for i, loc in enumerate(action.locations)
            )
        changes["ally_ready_turn"] = {
            **state.ally_ready_turn,
            name: state.turn + state.rules.allies[name].rest + 1,
        }
        if name in state.ally_uses_left:
            changes["ally_uses_left"] = {
                **state.ally_uses_left,
                name: state.ally_uses_left[name] - 1,
            }
    record = HarryRecord(turn=state.turn, action=action, observations=observations)
    changes["history"] = (*state.history, record)
    changes["seq"] = state.seq + 1
    winner, reason = _harry_turn_end(
        state.rules,
        changes.get("destroyed", state.destroyed),
        changes.get("attacks_left", state.attacks_left),
        state.turn,
    )
    if winner is None:
        changes["phase"] = "voldemort"
    else:
        changes.update(phase="over", winner=winner, end_reason=reason)
    after = state.model_copy(update=changes)  # one copy: the state after Harry's turn
    event = HarryMoved(
        seq=after.seq,
        turn=state.turn,
        action=action,
        observations=observations,
        winner=winner,
        end_reason=reason,
    )
    return after, event


def _harry_turn_end(
    rules: RuleSet, destroyed: int, attacks_left: int, turn: int
) -> tuple[str | None, str | None]:
    """Who has won once Harry has acted, from the state after his turn (None: the game
    goes on to Voldemort)."""
    if rules.horcruxes - destroyed == 0:
        return "harry", "every Horcrux destroyed"
    if attacks_left <= 0:
        return "voldemort", "Harry has no attacks left and a Horcrux remains"
    if turn >= rules.max_turns:
        return "voldemort", f"turn {rules.max_turns} ended with a Horcrux left"
    return None, None


def _apply_voldemort(
    state: GameState, action: Relocate | PlantDecoy | Pass
) -> tuple[GameState, VoldemortMoved]:
    changes: dict[str, Any] = {"seq": state.seq + 1, "turn": state.turn + 1, "phase": "harry"}
    if isinstance(action, Relocate):
        changes["horcruxes"] = tuple(
            sorted(action.to_location if h == action.from_location else h for h in state.horcruxes)
        )
        changes["relocations_left"] = state.relocations_left - 1
    elif isinstance(action, PlantDecoy):
        changes["decoys"] = tuple(sorted((*state.decoys, action.location)))
        changes["decoys_left"] = state.decoys_left - 1
    after = state.model_copy(update=changes)
    return after, VoldemortMoved(seq=after.seq, turn=state.turn, action=action)


def replay(rules: RuleSet, seed: int, actions: list[AnyAction]) -> tuple[GameState, list[Any]]:
    """Rebuild a game from its seed and actions: the same events, in the same order."""
    state, started = new_game(rules, seed)
    events: list[Any] = [started]
    for action in actions:
        state, event = apply(state, action)
        events.append(event)
    return state, events
