"""The store's port: domain types, errors and the `GameStore` protocol (Layer 3 + hot path).

Two adapters implement it with the same semantics: `MemoryStore` (unit tests, local play)
and `DynamoDbStore` (the only module that touches boto3). A turn is one `load` (one read
of the snapshot, never of the log) and one `commit_turn` (one atomic write of the event
and the new snapshot, conditioned on the event not existing and the version not moving).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from horcrux.decisions import DecisionNote
from horcrux.errors import HorcruxError
from horcrux.models import Event, GameStarted, GameState, HarryMoved, Seat, VoldemortMoved
from horcrux.settings import ABANDONED_AFTER_S, HEARTBEAT_S, store_settings
from horcrux.store.results import RESULTS_MAX, GameSummary, Item, RecentResults

AnyEvent = GameStarted | HarryMoved | VoldemortMoved
TurnEvent = HarryMoved | VoldemortMoved
EVENT_ADAPTER: TypeAdapter[AnyEvent] = TypeAdapter(Event)

SEATS: tuple[Seat, ...] = ("harry", "voldemort")
Status = Literal["open", "active", "over"]
"""The status a snapshot item stores (and the lobby index is keyed by)."""
GameStatus = Literal["open", "active", "abandoned", "over"]
"""The status a reader is told: `abandoned` is an `active` game whose heartbeat is older
than `live_since(now)` (derived on every read, never stored)."""

DEFAULT_TTL_DAYS = 30
BELIEF_HISTORY_MAX = 50
"""The belief history keeps the last this-many points (a classic game has 50 turns)."""
SNAPSHOT_BUDGET_BYTES = 16 * 1024
"""The hot-path budget for one snapshot item (4 strongly consistent read units)."""
MAX_ITEM_BYTES = 400 * 1024
"""DynamoDB's hard item limit; both adapters refuse larger items the same way."""


# ---------------------------------------------------------------- errors
class StoreError(HorcruxError):
    code = "store_error"


class NotFound(StoreError):
    """No such game, or it has expired (TTL deletion is lazy: reads filter expired items)."""

    code = "not_found"


ConflictReason = Literal["version", "duplicate_event", "exists", "seat_taken", "busy"]


class Conflict(StoreError):
    """A conditional write lost: `current` is the snapshot as it is now (None if unknown).

    `reason`: `version` (the snapshot moved since it was read), `duplicate_event` (that
    event seq is already stored), `exists` (the game id is taken), `seat_taken` (the seat
    is not a free human seat), `busy` (a concurrent transaction held the item; retry).
    """

    code = "conflict"

    def __init__(
        self, message: str, *, reason: ConflictReason, current: GameSnapshot | None = None
    ) -> None:
        super().__init__(message)
        self.reason: ConflictReason = reason
        self.current = current


class ItemTooLarge(StoreError):
    code = "item_too_large"


UnavailableReason = Literal[
    "unreachable", "timeout", "tables_missing", "server_error", "outcome_unknown"
]


class StoreUnavailable(StoreError):
    """The database could not answer (after the client's bounded retries): it is down, too
    slow, lost its tables, or failed on its side. Nothing the caller sent is wrong and
    nothing was written by this call; retry after `retry_after_s` (the API: 503 with
    `Retry-After`; a turn function: the stream retries the record)."""

    code = "store_unavailable"

    def __init__(self, message: str, *, reason: UnavailableReason, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.reason: UnavailableReason = reason
        self.retry_after_s = retry_after_s


# ---------------------------------------------------------------- domain types
class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SeatInfo(_Frozen):
    """Who plays a seat: a person (identified by the hash of their token) or an AI brain."""

    kind: Literal["human", "ai"]
    brain: str | None = Field(default=None, description="brain spec (`naive:8`) of an AI seat")
    token_hash: str | None = Field(default=None, description="sha256 of the player's token")
    name: str | None = Field(default=None, max_length=32, description="a person's display name")
    player: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{16}$",
        description="a person's stable player id (16 hex digits of the SHA-256 of the "
        "player key they chose at create/join): their identity across games",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SeatInfo:
        if self.kind == "ai" and not self.brain:
            raise ValueError("an AI seat needs a brain spec")
        if self.kind == "ai" and self.token_hash is not None:
            raise ValueError("an AI seat has no token")
        if self.kind == "human" and self.brain is not None:
            raise ValueError("a human seat has no brain")
        if self.name is not None and (self.kind == "ai" or self.token_hash is None):
            raise ValueError("only a taken human seat has a name")
        if self.player is not None and (self.kind == "ai" or self.token_hash is None):
            raise ValueError("only a taken human seat has a player id")
        return self

    @property
    def free(self) -> bool:
        """A human seat nobody has joined yet."""
        return self.kind == "human" and self.token_hash is None


class BeliefPoint(_Frozen):
    """One point of a belief history (mirrors `horcrux.belief.base.BeliefPoint`).

    Values are rounded to 4 decimals on the way in, so a stored point reads back equal."""

    turn: int
    entropy: float
    top: tuple[tuple[str, float], ...] = Field(max_length=3)

    @field_validator("entropy")
    @classmethod
    def _round_entropy(cls, value: float) -> float:
        return round(value, 4)

    @field_validator("top")
    @classmethod
    def _round_top(cls, value: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        return tuple((loc, round(p, 4)) for loc, p in value)


class GameSnapshot(_Frozen):
    """Everything a turn needs, in one item: the hot path. The log is never read to play.

    `state` is the whole truth (secret: only the server reads it); `beliefs` holds the
    Layer-2 snapshot of an AI seat whose brain cannot be rebuilt from its view, as opaque
    bytes; `belief_history` is bounded. A store keeps each point in the event of its turn
    and only the latest in the snapshot item, so a loaded snapshot (and what `commit_turn`
    returns) holds the latest point only; the whole history is read from the log
    (`EventPage.belief_history`, `read_log`).
    """

    game_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    version: int = Field(default=0, ge=0)
    seats: dict[Seat, SeatInfo]
    state: GameState
    beliefs: dict[str, bytes] = Field(default_factory=dict)
    belief_history: tuple[BeliefPoint, ...] = Field(default=(), max_length=BELIEF_HISTORY_MAX)
    created_at: float
    expires_at: int = Field(description="epoch seconds; the game's every item expires then")
    invite_hash: str | None = Field(
        default=None,
        description="sha256 of a private game's invite code (None: a public game); a "
        "private game is never listed (`list_games`)",
    )
    active_at: int | None = Field(
        default=None,
        ge=0,
        description="the heartbeat: epoch seconds of the last write that refreshed it (a "
        "turn or a join, at most once per `HEARTBEAT_S`; None: never, the game's creation "
        "stands for it)",
    )

    @field_validator("seats")
    @classmethod
    def _both_seats(cls, seats: dict[Seat, SeatInfo]) -> dict[Seat, SeatInfo]:
        if set(seats) != set(SEATS):
            raise ValueError("a game has exactly the seats harry and voldemort")
        return seats

    @property
    def turn(self) -> int:
        return self.state.turn

    @property
    def phase(self) -> str:
        return self.state.phase

    @property
    def rules_name(self) -> str:
        return self.state.rules.name

    @property
    def private(self) -> bool:
        """Unlisted: its seats are joined with the invite code only."""
        return self.invite_hash is not None

    @property
    def open_seats(self) -> tuple[Seat, ...]:
        return tuple(s for s in SEATS if self.seats[s].free)

    @property
    def status(self) -> Status:
        """`over` once the game ended, `open` while a human seat is free, else `active`."""
        if self.state.over:
            return "over"
        return "open" if self.open_seats else "active"

    @property
    def heartbeat(self) -> int:
        """Epoch seconds of the game's last refreshed activity (`active_at`, else its creation)."""
        return int(self.created_at) if self.active_at is None else self.active_at

    def status_at(self, now: float) -> GameStatus:
        """The status a reader is told at `now`: `abandoned` for an `active` game whose
        heartbeat is older than `live_since(now)`, else the stored `status`."""
        status = self.status
        if status == "active" and self.heartbeat < live_since(now):
            return "abandoned"
        return status

    def beating(self, now: float) -> GameSnapshot:
        """The snapshot with its heartbeat set to `now` if it is at least `HEARTBEAT_S`
        old (itself otherwise): what every turn and join writes, so the heartbeat, and the
        lobby key of an active game with it, changes at most once per `HEARTBEAT_S`."""
        if int(now) - self.heartbeat < HEARTBEAT_S:
            return self
        return self.model_copy(update={"active_at": int(now)})

    def expired(self, now: float) -> bool:
        return self.expires_at <= now

    def advanced(
        self,
        state: GameState,
        *,
        beliefs: dict[str, bytes] | None = None,
        belief_point: Any | None = None,
    ) -> GameSnapshot:
        """The next snapshot: `state` after one move, version + 1, optional belief update.

        `belief_point` is anything with `turn`, `entropy` and `top` (a Layer-2
        `BeliefPoint`); the history keeps the last `BELIEF_HISTORY_MAX` points.
        """
        history = self.belief_history
        if belief_point is not None:
            point = BeliefPoint(
                turn=belief_point.turn,
                entropy=belief_point.entropy,
                top=tuple((str(loc), float(p)) for loc, p in belief_point.top)[:3],
            )
            history = (*history, point)[-BELIEF_HISTORY_MAX:]
        return self.model_copy(
            update={
                "state": state,
                "version": self.version + 1,
                "beliefs": {**self.beliefs, **(beliefs or {})},
                "belief_history": history,
            }
        )


class EventPage(_Frozen):
    """Events with seq > `after`, in order; `next_after` is None when there are no more.

    `belief_history`: the belief points the page's events carry (one per move an AI Harry
    made with a belief: the belief it acted on), in order. The log is where the belief
    history lives; the snapshot keeps only the latest point."""

    events: list[AnyEvent]
    next_after: int | None
    belief_history: tuple[BeliefPoint, ...] = ()
    decisions: tuple[DecisionNote, ...] = ()
    """The decision notes the page's events carry (one per AI seat's move: its tier, the
    context its model saw, its move), in order: secret while the game runs (a Voldemort's
    note reads the truth); the service releases them with the replay only."""


class LobbyEntry(_Frozen):
    game_id: str
    rules_name: str
    open_seats: tuple[Seat, ...]
    created_at: float
    names: dict[Seat, str] = Field(default_factory=dict)


class LobbyPage(_Frozen):
    """Open games, oldest first; pass `cursor` back to get the next page (None: no more)."""

    games: list[LobbyEntry]
    cursor: str | None


# ---------------------------------------------------------------- the port
@runtime_checkable
class GameStore(Protocol):
    """Layer 3 and the hot path. Every method is one or two round trips at most."""

    def create_game(self, snapshot: GameSnapshot, started: GameStarted) -> GameSnapshot:
        """Store a new game (snapshot version 0 and its `game_started` event, seq 0).

        Conflict(`exists`) if the id is taken."""
        ...

    def load(self, game_id: str) -> GameSnapshot:
        """One strongly consistent read of the snapshot; NotFound if missing or expired."""
        ...

    def commit_turn(
        self,
        expected_version: int,
        snapshot: GameSnapshot,
        event: TurnEvent,
        decision: DecisionNote | None = None,
        *,
        write_id: str | None = None,
    ) -> GameSnapshot:
        """One transaction: put the event (if its seq is new) and the snapshot (if the
        stored version is still `expected_version`). `snapshot.version` must be
        `expected_version + 1` and `event.seq` must be `snapshot.state.seq`. `decision`
        (an AI seat's move) is kept on the event's item (`EventPage.decisions`).
        `write_id` (1-64 visible characters; a random one if None) is kept on the event's
        item too: `find_write` finds a write by it.

        The store refreshes the snapshot's heartbeat at its clock (`GameSnapshot.beating`)
        in that same write and returns the snapshot as stored.

        Conflict(`version` | `duplicate_event` | `busy`) carrying the current snapshot;
        nothing is written then. If the database stops answering after the transaction
        was sent, the store finds out whether it was applied (it returns then, or raises
        what refused it); StoreUnavailable(`outcome_unknown`) if it cannot tell."""
        ...

    def find_write(self, game_id: str, write_id: str) -> int | None:
        """The seq of the game's event written with `write_id`, among its last
        `RECENT_WRITES` events (None: not among them)."""
        ...

    def events(self, game_id: str, after: int = -1, limit: int = 100) -> EventPage:
        """The game's events with seq > `after`, at most `limit`, expired ones skipped."""
        ...

    def list_open_games(self, limit: int = 20, cursor: str | None = None) -> LobbyPage:
        """Games with a free human seat, oldest first (expired ones skipped)."""
        ...

    def list_games(
        self, status: GameStatus, limit: int = 20, cursor: str | None = None
    ) -> LobbyPage:
        """Public games with this status (`open`, `active`, `abandoned`, `over`) at the
        store's clock, expired and private ones skipped: the lobby and the game history.
        `open` and `over` come oldest first; `active` (being played: heartbeat at or after
        `live_since(now)`) and `abandoned` (older) by heartbeat, oldest first, each read
        by a key condition on the index (no abandoned game is read to list the active
        ones). `list_open_games` is `list_games("open")`."""
        ...

    def join_seat(
        self,
        game_id: str,
        seat: Seat,
        token_hash: str,
        name: str | None = None,
        player: str | None = None,
    ) -> GameSnapshot:
        """Take a free human seat (version + 1, the heartbeat refreshed at the store's
        clock), under the display `name` and the stable `player` id if given.
        Conflict(`seat_taken`) if it is not free; NotFound if the game is missing or expired."""
        ...


@runtime_checkable
class ResultStore(GameStore, Protocol):
    """The game store plus what the compaction Lambda writes and a Harry start-up reads
    (docs/COMPACTION.md). Both adapters implement it; `GameStore` itself is unchanged."""

    def put_result(
        self,
        summary: GameSummary,
        *,
        belief_history: tuple[BeliefPoint, ...] = (),
        keep: int = RESULTS_MAX,
    ) -> bool:
        """Write the end-of-game record at `GAME#<id>`/`RESULT` and, for an AI Harry,
        append it to its scope's recent results (bounded to `keep`), in one transaction
        conditioned on the RESULT not existing and the scope's version not moving.

        True if written; False if this game's record was already stored (a stream retry:
        nothing is written). Retries a moved scope version up to 3 times, then
        Conflict(`busy`)."""
        ...

    def result(self, game_id: str) -> GameSummary:
        """The game's end-of-game record; NotFound if there is none."""
        ...

    def recent_results(self, agent: str, opponent: str) -> RecentResults:
        """One strongly consistent read of a scope's recent results (empty, version 0,
        if none): what an AI Harry reads at the start of its next game."""
        ...

    def repair_snapshot(self, expected_version: int, snapshot: GameSnapshot) -> GameSnapshot:
        """Overwrite the snapshot (e.g. rebuilt from the events) if the stored version is
        still `expected_version`; `snapshot.version` must be `expected_version + 1`.

        Conflict(`version`, current=...) if it moved; NotFound if missing or expired."""
        ...


@runtime_checkable
class ScopeStore(ResultStore, Protocol):
    """The result store plus the per-scope `AGENT#...` items ECHO keeps (horcrux.echo)."""

    def scope_item(self, key: Item) -> Item | None:
        """One strongly consistent read of an `AGENT#...` item (None: absent)."""
        ...

    def put_scope_item(self, item: Item, expected_version: int) -> None:
        """Put it if the stored `v` is `expected_version` (0: absent), else
        Conflict(`version`)."""
        ...

    def delete_scope_items(self, *keys: Item) -> int:
        """Delete items; how many existed."""
        ...


# ---------------------------------------------------------------- helpers
def live_since(now: float) -> int:
    """The oldest heartbeat a running game may have at `now` and still be being played:
    `ABANDONED_AFTER_S + HEARTBEAT_S` back, so a game is abandoned only when nobody has
    moved for `ABANDONED_AFTER_S` (30 minutes), and at most `HEARTBEAT_S` later than that."""
    return int(now) - ABANDONED_AFTER_S - HEARTBEAT_S


def ttl_seconds_from_env() -> int:
    """The games' time to live when a caller gives none: the store settings'
    (`HORCRUX_TTL_DAYS`, default 30 days; `horcrux.settings` reads and checks it)."""
    return store_settings().ttl_seconds


def hash_token(token: str) -> str:
    """What a seat stores instead of a player's token."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_snapshot(
    game_id: str,
    state: GameState,
    seats: dict[Seat, SeatInfo],
    *,
    now: float | None = None,
    ttl_seconds: int | None = None,
    invite_hash: str | None = None,
) -> GameSnapshot:
    """The version-0 snapshot of a new game, expiring `ttl_seconds` after `now` (private
    if `invite_hash` is given: `hash_token(invite)`)."""
    created = time.time() if now is None else now
    ttl = ttl_seconds_from_env() if ttl_seconds is None else ttl_seconds
    return GameSnapshot(
        game_id=game_id,
        seats=seats,
        state=state,
        created_at=created,
        expires_at=int(created) + ttl,
        invite_hash=invite_hash,
    )


def check_commit(expected_version: int, snapshot: GameSnapshot, event: TurnEvent) -> None:
    """The caller-side invariants of `commit_turn` (a ValueError is a bug, not a race)."""
    if snapshot.version != expected_version + 1:
        raise ValueError(
            f"snapshot version {snapshot.version} must be expected_version + 1 "
            f"({expected_version + 1})"
        )
    if event.seq != snapshot.state.seq:
        raise ValueError(f"event seq {event.seq} != snapshot state seq {snapshot.state.seq}")
    if event.seq < 1:
        raise ValueError("turn events have seq >= 1 (seq 0 is game_started)")


def check_create(snapshot: GameSnapshot, started: GameStarted) -> None:
    if snapshot.version != 0 or snapshot.state.seq != 0 or started.seq != 0:
        raise ValueError("a new game has version 0, state seq 0 and a game_started seq 0")


def joined(
    current: GameSnapshot,
    seat: Seat,
    token_hash: str,
    name: str | None = None,
    player: str | None = None,
    *,
    now: float | None = None,
) -> GameSnapshot:
    """The snapshot with `seat` taken by `token_hash` (its heartbeat refreshed at `now`, if
    given: `GameSnapshot.beating`); Conflict if the seat is not free."""
    if not token_hash:
        raise ValueError("token_hash must not be empty")
    info = current.seats[seat]
    if not info.free:
        who = "an AI" if info.kind == "ai" else "another player"
        raise Conflict(f"the {seat} seat is taken by {who}", reason="seat_taken", current=current)
    taken = SeatInfo(kind="human", token_hash=token_hash, name=name, player=player)
    seats = {**current.seats, seat: taken}
    after = current.model_copy(update={"seats": seats, "version": current.version + 1})
    return after if now is None else after.beating(now)


def check_repair(expected_version: int, snapshot: GameSnapshot) -> None:
    if snapshot.version != expected_version + 1:
        raise ValueError(
            f"snapshot version {snapshot.version} must be expected_version + 1 "
            f"({expected_version + 1})"
        )


def read_log(
    store: GameStore, game_id: str, *, page: int = 1000
) -> tuple[list[AnyEvent], tuple[BeliefPoint, ...]]:
    """A game's whole log and the belief history its events carry (one Query per `page`
    events)."""
    whole = read_whole_log(store, game_id, page=page)
    return whole.events, whole.belief_history


def read_whole_log(store: GameStore, game_id: str, *, page: int = 1000) -> EventPage:
    """A game's whole log as one page: its events, the belief history and the decision
    notes they carry (one Query per `page` events)."""
    events: list[AnyEvent] = []
    points: list[BeliefPoint] = []
    notes: list[DecisionNote] = []
    after = -1
    while True:
        got = store.events(game_id, after=after, limit=page)
        events.extend(got.events)
        points.extend(got.belief_history)
        notes.extend(got.decisions)
        if got.next_after is None:
            return EventPage(
                events=events,
                next_after=None,
                belief_history=tuple(points),
                decisions=tuple(notes),
            )
        after = got.next_after


def merge_history(*parts: Sequence[BeliefPoint]) -> tuple[BeliefPoint, ...]:
    """Belief points from several sources (the log's, a snapshot's), one per turn (the
    later source wins), in turn order."""
    by_turn: dict[int, BeliefPoint] = {}
    for part in parts:
        for point in part:
            by_turn[point.turn] = point
    return tuple(by_turn[t] for t in sorted(by_turn))


def check_limit(limit: int) -> None:
    if not 1 <= limit <= 1000:
        raise ValueError(f"limit must be in 1..1000, got {limit}")
