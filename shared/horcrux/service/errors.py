"""The service's refusals: each a `HorcruxError` with a stable `code` (-> HTTP in `api`)."""

from __future__ import annotations

from typing import Any

from horcrux.errors import HorcruxError


class ServiceError(HorcruxError):
    """A request the service refuses; `details` are merged into the error body."""

    code = "service_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details


class Unauthorized(ServiceError):
    """No token, a malformed one, or one that matches no seat of the game (401)."""

    code = "unauthorized"


class WrongSeat(ServiceError):
    """A valid token playing an action of the other seat (403)."""

    code = "wrong_seat"


class BadRequest(ServiceError):
    """A malformed request header (e.g. an `If-Match` that is not a list of ETags: 400)."""

    code = "bad_request"


class InvalidRequest(ServiceError):
    """A well-formed request the service cannot accept (seats, brains: 422)."""

    code = "invalid_request"


class NotReached(ServiceError):
    """A game's view at a turn it has not reached yet (404: that view does not exist)."""

    code = "not_found"


class WaitingForPlayer(ServiceError):
    """A move while a human seat is still free (409)."""

    code = "waiting_for_player"


class SeatTaken(ServiceError):
    """Joining a seat that is an AI's or already taken (409)."""

    code = "seat_taken"


class MoveConflict(ServiceError):
    """Another move was committed first (409); `details["game"]` is the game as it is now."""

    code = "conflict"


class PreconditionFailed(ServiceError):
    """`If-Match` names a version the game is no longer at (412); the details name the
    current `version`, `turn` and `to_move`. Nothing was written."""

    code = "precondition_failed"


class StaleVersion(ServiceError):
    """`?expected_version=` names a version the game is no longer at (409); the details
    name the current `version`, `turn` and `to_move`. Nothing was written."""

    code = "stale_version"


class InviteRequired(ServiceError):
    """Joining a private game's seat without its invite code (403)."""

    code = "invite_required"


class WrongInvite(ServiceError):
    """Joining a private game's seat with a code that is not its invite (403)."""

    code = "wrong_invite"


class NotOver(ServiceError):
    """The replay is released only after the end (409)."""

    code = "not_over"


class DeadlineTooShort(ServiceError):
    """Too little time left to play an AI turn: the stream retries the record."""

    code = "deadline_too_short"


__all__ = [
    "BadRequest",
    "DeadlineTooShort",
    "InvalidRequest",
    "InviteRequired",
    "MoveConflict",
    "NotOver",
    "PreconditionFailed",
    "SeatTaken",
    "ServiceError",
    "StaleVersion",
    "Unauthorized",
    "WaitingForPlayer",
    "WrongInvite",
    "WrongSeat",
]
