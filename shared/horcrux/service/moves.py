"""A person's move: one read (done by the caller's authentication), checks, one transaction.

Nothing is written when a check fails (a spectator, the game over, a free seat, out of
turn, the other seat's action, an illegal action) or when another move committed first.

A move may carry preconditions: the game version its player last saw (`If-Match` or
`?expected_version=` at the API). They are checked first, against the snapshot read, and
the commit is conditional on that same version, so a double click applies at most one
turn: the second click fails its precondition (412 / 409), either at the check or, if
both clicks read the same version, when its commit loses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from horcrux import engine
from horcrux.errors import GameOver, NotYourTurn
from horcrux.models import AnyAction, Seat
from horcrux.service.errors import (
    MoveConflict,
    PreconditionFailed,
    ServiceError,
    StaleVersion,
    Unauthorized,
    WaitingForPlayer,
    WrongSeat,
)
from horcrux.service.models import Authenticated
from horcrux.service.projection import action_seat, game_view
from horcrux.store.port import Conflict, GameSnapshot, GameStore, TurnEvent


@dataclass(frozen=True)
class Moved:
    """A committed move: the seat that played it, its event and the snapshot after it."""

    seat: Seat
    event: TurnEvent
    snapshot: GameSnapshot


@dataclass(frozen=True)
class Precondition:
    """The versions a move may be played at: `If-Match` (`versions` None: `*`, any) or
    `?expected_version=` (one version)."""

    source: Literal["if_match", "expected_version"]
    versions: frozenset[int] | None

    def holds(self, version: int) -> bool:
        return self.versions is None or version in self.versions

    def refusal(self, current: GameSnapshot) -> ServiceError:
        """The error naming where the game is now (`version`, `turn`, `to_move`)."""
        state = current.state
        to_move = None if state.over else state.phase
        where = f"version {current.version}, turn {state.turn}, " + (
            f"{to_move} to move" if to_move else "over"
        )
        details = {"version": current.version, "turn": state.turn, "to_move": to_move}
        versions = sorted(self.versions or ())
        wanted = ", ".join(str(v) for v in versions)
        if self.source == "if_match":
            named = (
                f"names version {wanted}"
                if len(versions) == 1
                else f"names versions {wanted}"
                if versions
                else 'names no version the API issued (an ETag is the game\'s version, quoted: "7")'
            )
            return PreconditionFailed(
                f"If-Match {named}; the game is at {where}: reload it and "
                "play from there (your move was not applied)",
                **details,
            )
        return StaleVersion(
            f"expected_version is {wanted}; the game is at {where}: reload it and play "
            "from there (your move was not applied)",
            **details,
        )


def check_preconditions(snapshot: GameSnapshot, preconditions: Sequence[Precondition]) -> None:
    for precondition in preconditions:
        if not precondition.holds(snapshot.version):
            raise precondition.refusal(snapshot)


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


def play_move(
    store: GameStore,
    auth: Authenticated,
    action: AnyAction,
    preconditions: Sequence[Precondition] = (),
    *,
    write_id: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Moved:
    """Apply and commit the caller's move (PreconditionFailed, StaleVersion, IllegalAction,
    MoveConflict: nothing written).

    `write_id` names this request's write (the API derives it from the Idempotency-Key):
    when the move is refused because the game has moved on, and the move that moved it was
    this very write (its answer was lost: a 503 `outcome_unknown`), the committed move is
    returned instead, with the game as it is now. `clock` dates the refused move's view of
    the game (its status). An abandoned game is played like an active one: the move's
    commit refreshes its heartbeat, so it is active again (`GameStore.commit_turn`)."""
    try:
        if auth.seat is not None:  # a spectator is refused by `check_move` (401) first
            check_preconditions(auth.snapshot, preconditions)
        seat = check_move(auth, action)
    except (ServiceError, NotYourTurn, GameOver):
        written = _written_before(store, auth, write_id)
        if written is None:
            raise
        return written
    snapshot = auth.snapshot
    new_state, event = engine.apply(snapshot.state, action)
    after = snapshot.advanced(new_state)
    try:
        if write_id is None:  # (a store's wrappers need not know the keyword)
            committed = store.commit_turn(snapshot.version, after, event)
        else:
            committed = store.commit_turn(snapshot.version, after, event, write_id=write_id)
    except Conflict as exc:
        written = _written_before(store, auth, write_id)
        if written is not None:
            return written
        current = exc.current or store.load(snapshot.game_id)
        check_preconditions(current, preconditions)  # the version moved: a 412 / 409 if given
        raise MoveConflict(
            f"another move was committed first (game now at version {current.version}, "
            f"{current.phase} to move); yours was not applied",
            game=game_view(current, seat, now=clock()).as_json(),
        ) from None
    return Moved(seat, event, committed)


def _written_before(store: GameStore, auth: Authenticated, write_id: str | None) -> Moved | None:
    """The move this seat's write `write_id` committed earlier (among the game's latest
    events), with the game as it is now; None if there is none."""
    seat = auth.seat
    if write_id is None or seat is None:
        return None
    seq = store.find_write(auth.snapshot.game_id, write_id)
    if seq is None:
        return None
    page = store.events(auth.snapshot.game_id, after=seq - 1, limit=1)
    event = page.events[0] if page.events else None
    if not isinstance(event, TurnEvent) or event.seq != seq or action_seat(event.action) != seat:
        return None
    return Moved(seat, event, store.load(auth.snapshot.game_id))


__all__ = ["Moved", "Precondition", "check_move", "check_preconditions", "play_move"]
