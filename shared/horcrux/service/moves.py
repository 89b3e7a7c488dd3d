"""A person's move: one read (done by the caller's authentication), checks, one transaction.

Nothing is written when a check fails (a spectator, the game over, a free seat, out of
turn, the other seat's action, an illegal action) or when another move committed first.
"""

from __future__ import annotations

from dataclasses import dataclass

from horcrux import engine
from horcrux.errors import GameOver, NotYourTurn
from horcrux.models import AnyAction, Seat
from horcrux.service.errors import MoveConflict, Unauthorized, WaitingForPlayer, WrongSeat
from horcrux.service.models import Authenticated
from horcrux.service.projection import action_seat, game_view
from horcrux.store.port import Conflict, GameSnapshot, GameStore, TurnEvent


@dataclass(frozen=True)
class Moved:
    """A committed move: the seat that played it, its event and the snapshot after it."""

    seat: Seat
    event: TurnEvent
    snapshot: GameSnapshot


def check_move(auth: Authenticated, action: AnyAction) -> Seat:
    """The mover's seat if `action` may be played now; the refusal otherwise."""
    snapshot, seat = auth.snapshot, auth.seat
    state = snapshot.state
    if seat is None:
        raise Unauthorized("a move needs 'Authorization: Bearer <token>' of a seat")
    if state.over:
        raise GameOver(f"the game is over: {state.winner} won ({state.end_reason})")
    if snapshot.open_seats:
        raise WaitingForPlayer(
            f"the {', '.join(snapshot.open_seats)} seat is still free: wait for a player"
        )
    if state.phase != seat:
        raise NotYourTurn(
            f"it is {state.phase}'s turn (turn {state.turn}), not {seat}'s",
            expected=state.phase,
        )
    if action_seat(action) != seat:
        raise WrongSeat(
            f"{action.type!r} is a {action_seat(action)} action; you hold the {seat} seat"
        )
    return seat


def play_move(store: GameStore, auth: Authenticated, action: AnyAction) -> Moved:
    """Apply and commit the caller's move (IllegalAction, MoveConflict: nothing written)."""
    seat = check_move(auth, action)
    snapshot = auth.snapshot
    new_state, event = engine.apply(snapshot.state, action)
    after = snapshot.advanced(new_state)
    try:
        committed = store.commit_turn(snapshot.version, after, event)
    except Conflict as exc:
        current = exc.current or store.load(snapshot.game_id)
        raise MoveConflict(
            f"another move was committed first (game now at version {current.version}, "
            f"{current.phase} to move); yours was not applied",
            game=game_view(current, seat).as_json(),
        ) from None
    return Moved(seat, event, committed)


__all__ = ["Moved", "check_move", "play_move"]
