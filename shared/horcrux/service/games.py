"""Creating and joining games, and the lobby.

Each function reads at most one snapshot and writes at most one item or transaction, so a
refused request (an unknown brain, a taken seat) writes nothing. A new seat's token is
`secrets.token_urlsafe(32)`, returned once; the store keeps only its SHA-256. So does a
private game's invite code (`secrets.token_urlsafe(16)`): its SHA-256 is stored, the code
is shown once, and joining one of its seats needs it.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from horcrux import engine
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.errors import HorcruxError, UnknownBrain
from horcrux.models import Seat
from horcrux.rules import PRESETS
from horcrux.service.errors import (
    InvalidRequest,
    InviteRequired,
    MoveConflict,
    SeatTaken,
    WrongInvite,
)
from horcrux.service.models import (
    DEFAULT_HARRY_BRAIN,
    DEFAULT_RULES,
    DEFAULT_VOLDEMORT_BRAIN,
    INVITE_BYTES,
    MAX_SEED,
    TOKEN_BYTES,
    LobbyGame,
    LobbyResponse,
    LobbyStatus,
    SeatRequest,
    player_id,
)
from horcrux.store.port import (
    SEATS,
    Conflict,
    GameSnapshot,
    GameStore,
    SeatInfo,
    hash_token,
    new_snapshot,
)

PLAYER_KEY_BYTES = 24


@dataclass(frozen=True)
class Seated:
    """A game just created or joined: the seat taken (None: AI vs AI) and its token, once."""

    game_id: str
    seat: Seat | None
    token: str | None
    snapshot: GameSnapshot
    invite: str | None = None
    """A private game's invite code (create only), shown once."""
    player_key: str | None = None
    """The seat's player key (the one sent, or a new one): its stable player id's source."""

    @property
    def player(self) -> str | None:
        """The seat's public player id (`player:<16 hex>`), None for AI vs AI."""
        return f"player:{player_id(self.player_key)}" if self.player_key else None


def new_player_key() -> str:
    """A fresh player key (a person who sent none): 32 URL-safe characters."""
    return secrets.token_urlsafe(PLAYER_KEY_BYTES)


def default_harry_brain() -> str:
    """The brain an AI Harry plays with when the request names none."""
    return DEFAULT_HARRY_BRAIN


def seat_info(
    seat: Seat,
    request: SeatRequest,
    rules_name: str,
    *,
    harry_default: str | None = None,
    brain_settings: Mapping[str, Any] | None = None,
) -> SeatInfo:
    """The stored seat for a request; an AI seat's brain is built once to check it."""
    if request.kind == "human":
        if request.brain is not None:
            raise InvalidRequest(f"the {seat} seat is human: it takes no brain", seat=seat)
        return SeatInfo(kind="human")
    if request.name is not None:
        raise InvalidRequest(f"the {seat} seat is an AI's: it takes no name", seat=seat)
    if request.player_key is not None:
        raise InvalidRequest(f"the {seat} seat is an AI's: it takes no player_key", seat=seat)
    registry = HARRY_BRAINS if seat == "harry" else VOLDEMORT_BRAINS
    default = (
        (harry_default or default_harry_brain()) if seat == "harry" else DEFAULT_VOLDEMORT_BRAIN
    )
    spec = request.brain or default
    try:  # build it once: an unknown name, a bad parameter or a missing key fails here
        registry.create(
            spec, PRESETS[rules_name], for_seat=True, settings=dict(brain_settings or {})
        )
    except UnknownBrain as exc:
        raise UnknownBrain(f"{exc.message} (seat {seat})") from None
    except HorcruxError:
        raise
    except Exception as exc:
        raise InvalidRequest(f"the {seat} brain {spec!r} cannot be built: {exc}") from None
    return SeatInfo(kind="ai", brain=spec)


def create_game(
    store: GameStore,
    harry: SeatRequest,
    voldemort: SeatRequest,
    *,
    rules: str = DEFAULT_RULES,
    seed: int | None = None,
    clock: Callable[[], float],
    ttl_seconds: int | None = None,
    harry_default: str | None = None,
    brain_settings: Mapping[str, Any] | None = None,
    private: bool = False,
) -> Seated:
    """A new game; the creator takes the first human seat and gets its token, once (and,
    for a `private` game, its invite code, once)."""
    if rules not in PRESETS:
        raise InvalidRequest(f"unknown rules {rules!r}; known: {', '.join(PRESETS)}")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InvalidRequest(f"seed must be in 0..{MAX_SEED}")
    requests: dict[Seat, SeatRequest] = {"harry": harry, "voldemort": voldemort}
    seats = {
        s: seat_info(
            s, requests[s], rules, harry_default=harry_default, brain_settings=brain_settings
        )
        for s in SEATS
    }
    creator = next((s for s in SEATS if seats[s].kind == "human"), None)
    for s in SEATS:
        if s != creator and requests[s].kind == "human" and requests[s].name is not None:
            raise InvalidRequest(
                f"the {s} seat is free: its name is given by the player who joins it", seat=s
            )
        if s != creator and requests[s].kind == "human" and requests[s].player_key is not None:
            raise InvalidRequest(
                f"the {s} seat is free: its player_key is given by the player who joins it",
                seat=s,
            )
    token: str | None = None
    key: str | None = None
    if creator is not None:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        name = requests[creator].name
        key = requests[creator].player_key or new_player_key()
        seats[creator] = SeatInfo(
            kind="human", token_hash=hash_token(token), name=name, player=player_id(key)
        )
    invite = secrets.token_urlsafe(INVITE_BYTES) if private else None
    invite_hash = hash_token(invite) if invite is not None else None
    drawn = secrets.randbelow(MAX_SEED + 1) if seed is None else seed
    state, started = engine.new_game(PRESETS[rules], drawn)
    for _ in range(3):  # a 96-bit id collides only by a miracle; retry anyway
        game_id = secrets.token_urlsafe(12)
        snapshot = new_snapshot(
            game_id,
            state,
            seats,
            now=clock(),
            ttl_seconds=ttl_seconds,
            invite_hash=invite_hash,
        )
        try:
            store.create_game(snapshot, started)
            break
        except Conflict as exc:
            if exc.reason != "exists":
                raise
    else:  # pragma: no cover
        raise RuntimeError("could not draw a free game id")
    return Seated(game_id, creator, token, snapshot, invite, key)


def lobby(
    store: GameStore, limit: int = 20, cursor: str | None = None, status: LobbyStatus = "open"
) -> LobbyResponse:
    """Games by status, oldest first: `open` (a free human seat: the lobby), `active`,
    `over` (the game history). Pass `cursor` back for the next page."""
    page = store.list_games(status, limit=limit, cursor=cursor)
    return LobbyResponse(
        games=[
            LobbyGame(
                game_id=g.game_id,
                rules=g.rules_name,
                status=status,
                open_seats=list(g.open_seats),
                created_at=g.created_at,
                names=dict(g.names),
            )
            for g in page.games
        ],
        cursor=page.cursor,
    )


def check_invite(snapshot: GameSnapshot, invite: str | None) -> None:
    """A private game's seat needs its invite code (InviteRequired, WrongInvite); a public
    game's needs nothing (a code given is ignored)."""
    if snapshot.invite_hash is None:
        return
    if invite is None or not invite:
        raise InviteRequired(
            f"game {snapshot.game_id} is private: join with ?invite=<the creator's code>"
        )
    if len(invite) > 256 or not hmac.compare_digest(snapshot.invite_hash, hash_token(invite)):
        raise WrongInvite(f"that is not the invite code of game {snapshot.game_id}")


def join(
    store: GameStore,
    game_id: str,
    seat: Seat,
    invite: str | None = None,
    *,
    name: str | None = None,
    player_key: str | None = None,
) -> Seated:
    """Take a free human seat (of a private game: with its invite code), under a display
    name (checked by `JoinRequest`); its token is shown once. The invite is checked on a
    read first (it never changes), the seat is taken by the store's conditional write."""
    check_invite(store.load(game_id), invite)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    key = player_key or new_player_key()
    try:
        snapshot = store.join_seat(game_id, seat, hash_token(token), name, player_id(key))
    except Conflict as exc:
        if exc.reason != "seat_taken":
            raise MoveConflict(exc.message) from None
        raise SeatTaken(exc.message, seat=seat) from None
    return Seated(game_id, seat, token, snapshot, player_key=key)


__all__ = [
    "Seated",
    "check_invite",
    "create_game",
    "default_harry_brain",
    "join",
    "lobby",
    "seat_info",
]
