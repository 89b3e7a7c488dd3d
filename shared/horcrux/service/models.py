"""The service's requests and typed responses (pydantic): what the API returns as is.

Responses are strict (`extra="forbid"`): a field the service does not declare cannot
appear in an answer. Views and events stay loosely typed (`dict`) on purpose: what a seat
may see is decided by `horcrux.views` / `project_event`, and a response model must never
add or drop a field of a view. The models are also the OpenAPI document's schemas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from horcrux.agents.base import DEFAULT_HARRY
from horcrux.decisions import DecisionNote
from horcrux.models import Seat
from horcrux.store.port import GameSnapshot

RulesName = Literal["classic", "standard"]
DEFAULT_RULES: RulesName = "standard"
DEFAULT_HARRY_BRAIN = DEFAULT_HARRY
DEFAULT_VOLDEMORT_BRAIN = "reference"
TOKEN_BYTES = 32
INVITE_BYTES = 16
"""A private game's invite code: `secrets.token_urlsafe(16)` (128 bits), shown once."""
MAX_TOKEN_CHARS = 256
MAX_SEED = 2**53 - 1
"""The largest seed: an integer JSON (and JavaScript) renders exactly."""
VERSION_MAX = 10**6
"""The largest game version a request may name (`?expected_version=`); a game's version
moves once per move or join, so a few hundred at most."""
EVENTS_AFTER_MAX = 10**6
"""The largest `after` of an events page (a game has at most a few hundred events)."""
EVENTS_PAGE_MAX = 200
REPLAY_PAGE = 1000
DEADLINE_FLOOR_S = 0.5
"""An AI turn needs at least this much time left to start (else it is retried)."""
LobbyStatus = Literal["open", "active", "abandoned", "over"]
"""A game's status as the API tells it: `open` (a human seat is free), `active` (being
played), `abandoned` (active, but nobody has moved for `ABANDONED_AFTER_S`, 30 minutes; a
seated player's move makes it active again), `over`."""

Payload = dict[str, Any]


# ---------------------------------------------------------------- requests
NAME_MAX_CHARS = 32
NAME_PUNCTUATION = " -_.'"
NAME_RULE = (
    f"a name is 1-{NAME_MAX_CHARS} characters (after trimming spaces): letters, digits, "
    "spaces and - _ . '"
)


_NAME_CHAR = r"(?:[^\W\d_]|[0-9_.'-])"
"""A name's character but the space: a letter of any script (a word character that is
not a decimal digit or `_`; this takes in the few numerals such as `²` that are word
characters too), an ASCII digit, or one of - _ . '."""
NAME_PATTERN = rf"^\s*{_NAME_CHAR}(?:{_NAME_CHAR}| ){{0,{NAME_MAX_CHARS - 1}}}\s*$"
"""`checked_name` as a pattern (the OpenAPI document states it): 1-32 characters after
trimming, each a name's character or a space."""
_NAME_CHAR_RE = re.compile(_NAME_CHAR)


def checked_name(value: str) -> str:
    """A player's display name, trimmed; ValueError naming the rule (and the first bad
    character) otherwise. Letters are any script's letters; nothing else is markup-capable."""
    name = value.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise ValueError(f"{NAME_RULE}; got {len(name)} characters")
    bad = next((c for c in name if c != " " and not _NAME_CHAR_RE.fullmatch(c)), None)
    if bad is not None:
        raise ValueError(f"{NAME_RULE}; {bad!r} is not allowed")
    return name


PlayerName = Annotated[
    str,
    Field(max_length=256, description=NAME_RULE, json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(checked_name),
]


PLAYER_KEY_RULE = "a player key is 22-128 characters: letters, digits, - and _"
PlayerKey = Annotated[
    str,
    Field(
        min_length=22,
        max_length=128,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="your stable player key (" + PLAYER_KEY_RULE + "): send the one a "
        "create or join response gave you, so that an AI learns about you across games; "
        "omit it and a new one is drawn",
    ),
]


def player_id(key: str) -> str:
    """The public player id of a player key: 16 hex digits of its SHA-256."""
    import hashlib

    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


class SeatRequest(BaseModel):
    """Who plays a seat: a person, or an AI brain by spec (`planner`, `naive:16`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["human", "ai"]
    brain: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="an AI seat's brain spec; default planner (Harry) / reference (Voldemort)",
    )
    name: PlayerName | None = Field(
        default=None, description="the creator's display name (the seat the creator takes)"
    )
    player_key: PlayerKey | None = None


class JoinRequest(BaseModel):
    """`POST /games/{id}/seats/{seat}`'s optional body: the joining player's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: PlayerName | None = None
    player_key: PlayerKey | None = None


@dataclass(frozen=True)
class TurnRequest:
    """One AI turn to play, as read from an event's stream record."""

    game_id: str
    seq: int
    seat: Seat


@dataclass(frozen=True)
class TurnOutcome:
    """What `play_ai_turn` did: `played`, or why it did nothing."""

    game_id: str
    seat: Seat
    status: Literal["played", "skipped", "lost_race", "gone"]
    reason: str = ""
    seq: int | None = None
    version: int | None = None
    action: Payload | None = None
    seconds: float = 0.0
    memory: str | None = None
    """What this turn did with cross-game memory. An AI Harry's first turn: `read` (a good
    read), `rebuilt:<why>` (the start-up check's mismatch, rebuilt), `error` (unavailable).
    Any AI turn: `pin-unreadable` (the memory pinned in the snapshot did not decode: the
    turn plays without it, the pin is kept). A Voldemort running a copy of Harry's brain:
    `copied` (the copy adopted the pin). None: memory was not read."""
    replaced: str | None = None
    """The seat's stored brain spec when this runtime no longer builds it: the seat's
    default brain played this turn instead (logged; metric `AiBrainReplaced`, alarmed).
    None: the stored spec played."""

    def as_dict(self) -> Payload:
        return {
            "game_id": self.game_id,
            "seat": self.seat,
            "status": self.status,
            "reason": self.reason,
            "seq": self.seq,
            "version": self.version,
            "action": self.action,
            "seconds": round(self.seconds, 4),
            "memory": self.memory,
            "replaced": self.replaced,
        }


@dataclass(frozen=True)
class Authenticated:
    """A loaded snapshot and the seat its caller holds (None: a spectator)."""

    snapshot: GameSnapshot
    seat: Seat | None


# ---------------------------------------------------------------- responses
class ServiceResponse(BaseModel):
    """A typed answer. `response["field"]` reads a field like `response.field` (for callers
    written against the dict answers the service used to return)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __getitem__(self, name: str) -> Any:
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in type(self).model_fields else default

    def as_json(self) -> Payload:
        """The JSON the API answers with (field order as declared)."""
        return self.model_dump(mode="json")


class SeatPublic(ServiceResponse):
    kind: Literal["human", "ai"]
    taken: bool
    brain: str | None = None
    brain_used: str | None = Field(
        default=None,
        description="the brain that plays this seat when `brain` names a retired spec "
        "(a stored seat of a removed planner mode plays the default planner); None: `brain`",
    )
    name: str | None = Field(default=None, description="a person's display name, if given")


class GameResponse(ServiceResponse):
    game_id: str
    version: int
    status: LobbyStatus = Field(
        description="open (a human seat is free), active, abandoned (no move for 30 "
        "minutes; a seated player's move makes it active again) or over"
    )
    rules: str
    turn: int
    phase: Literal["harry", "voldemort", "over"]
    to_move: Seat | None
    your_seat: Seat | None
    seats: dict[str, SeatPublic]
    winner: Seat | None = None
    end_reason: str | None = None
    private: bool = Field(
        default=False, description="unlisted; a seat is joined with the invite code only"
    )
    view: dict[str, Any] = Field(description="horcrux.views.view_for(state, your_seat)")
    legal: dict[str, Any] | None = Field(
        default=None, description="your legal action set, when it is your turn"
    )


class CreatedResponse(ServiceResponse):
    game_id: str
    seat: Seat | None = Field(description="the seat the creator holds (None: AI vs AI)")
    token: str | None = Field(description="the seat's bearer token, shown only this once")
    player: str | None = Field(
        default=None, description="the creator's stable player id (`player:<16 hex>`)"
    )
    player_key: str | None = Field(
        default=None,
        description="the creator's player key (the one sent, or a new one): keep it and "
        "send it at your next create or join",
    )
    game: GameResponse
    invite: str | None = Field(
        default=None,
        description="a private game's invite code (pass it as ?invite= to join a seat), "
        "shown only this once; absent for a public game",
    )

    def as_json(self) -> Payload:
        """A public game's answer has no `invite` key (it is unchanged by private games)."""
        data = super().as_json()
        for key in ("invite", "player", "player_key"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class JoinedResponse(ServiceResponse):
    game_id: str
    seat: Seat = Field(description="the seat joined")
    token: str = Field(description="the seat's bearer token, shown only this once")
    player: str = Field(description="your stable player id (`player:<16 hex>`)")
    player_key: str = Field(
        description="your player key (the one sent, or a new one): keep it and send it at "
        "your next create or join"
    )
    game: GameResponse


class LobbyGame(ServiceResponse):
    game_id: str
    rules: str
    status: LobbyStatus = Field(
        description="open (a human seat is free), active (being played), abandoned (no "
        "move for 30 minutes; a seated player's move makes it active again) or over"
    )
    open_seats: list[Seat]
    created_at: float
    names: dict[str, str] = Field(default_factory=dict, description="seat -> display name")


class LobbyResponse(ServiceResponse):
    games: list[LobbyGame]
    cursor: str | None = Field(description="pass back as ?cursor= for the next page")


class MoveResponse(ServiceResponse):
    game_id: str
    seat: Seat
    event: dict[str, Any] | None = Field(description="your move's event, as you may see it")
    game: GameResponse


class EventsResponse(ServiceResponse):
    game_id: str
    your_seat: Seat | None
    events: list[dict[str, Any]]
    next_after: int | None = Field(description="pass back as ?after= (None: no more events)")


class BeliefTop(ServiceResponse):
    location: str
    p: float


class BeliefPointResponse(ServiceResponse):
    turn: int
    entropy: float = Field(description="bits")
    top: list[BeliefTop]


class BeliefResponse(ServiceResponse):
    """`GET /games/{id}/belief`: the map an AI Harry (the default planner) holds on Harry's
    public evidence now: a function of Harry's view alone, so it tells no one anything
    Harry could not compute himself."""

    game_id: str
    version: int
    turn: int
    brain: str = Field(description="the Harry brain whose belief this is")
    entropy: float = Field(description="bits")
    occupancy: dict[str, float] = Field(
        description="each location's probability of holding a real Horcrux"
    )


class ReplayResponse(ServiceResponse):
    game_id: str
    replay: dict[str, Any] = Field(description="horcrux.views.Replay: every event + the truth")
    belief_history: list[BeliefPointResponse] = Field(
        description="AI Harry's belief per turn: entropy (bits) and the top-3 locations"
    )
    decisions: list[DecisionNote] = Field(
        default_factory=list,
        description="every AI seat's decision, in order: its gate tier, who chose (planner, "
        "llm, fallback, rule), the move, and for a model call the context the model saw, "
        "its reply, tokens and latency",
    )


__all__ = [
    "DEFAULT_HARRY_BRAIN",
    "DEFAULT_RULES",
    "DEFAULT_VOLDEMORT_BRAIN",
    "EVENTS_AFTER_MAX",
    "EVENTS_PAGE_MAX",
    "INVITE_BYTES",
    "MAX_SEED",
    "VERSION_MAX",
    "Authenticated",
    "BeliefPointResponse",
    "BeliefTop",
    "CreatedResponse",
    "EventsResponse",
    "GameResponse",
    "JoinRequest",
    "JoinedResponse",
    "LobbyGame",
    "LobbyResponse",
    "LobbyStatus",
    "MoveResponse",
    "ReplayResponse",
    "SeatPublic",
    "SeatRequest",
    "ServiceResponse",
    "TurnOutcome",
    "TurnRequest",
]
