"""Typed domain errors. Each carries a stable `code`; the API maps codes to HTTP status."""

from __future__ import annotations


class HorcruxError(Exception):
    """Base of every domain error; `code` is stable, the message names what is wrong."""

    code = "horcrux_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IllegalAction(HorcruxError):
    """The action breaks a rule of the game (a 409/422 at the API)."""

    code = "illegal_action"


class UnknownLocation(IllegalAction):
    code = "unknown_location"


class NotYourTurn(IllegalAction):
    code = "not_your_turn"

    def __init__(self, message: str, *, expected: str) -> None:
        super().__init__(message)
        self.expected = expected


class GameOver(IllegalAction):
    code = "game_over"


class NoAttacksLeft(IllegalAction):
    code = "no_attacks_left"


class AllyUnavailable(IllegalAction):
    """Ally not in these rules, resting, or used up."""

    code = "ally_unavailable"


class DuplicateLocation(IllegalAction):
    code = "duplicate_location"


class InvalidRelocation(IllegalAction):
    code = "invalid_relocation"


class OccupiedLocation(IllegalAction):
    code = "occupied_location"


class NoChargesLeft(IllegalAction):
    code = "no_charges_left"


class UnknownBrain(HorcruxError):
    code = "unknown_brain"
