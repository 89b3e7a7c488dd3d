"""The game service: what the HTTP API and the AI-turn Lambdas do, over the `GameStore` port.

Pure logic (no HTTP, no AWS): the handlers parse a request, call one method here and
render the typed response it returns. Every call reads at most one snapshot and writes at
most one transaction, so a failed precondition (a bad token, a move out of turn, an illegal
action) writes nothing. One module per job:

* `horcrux.service.games`: creating and joining games, the lobby;
* `horcrux.service.moves`: a person's move;
* `horcrux.service.projection`: authentication, views and the events projection, replays;
* `horcrux.service.ai`: AI turns (`make_brain` returns the brain with its memory pin);
* `horcrux.service.models` / `.errors`: requests, typed responses, refusals.

Stream records are parsed in `horcrux.api.stream_handler` (`turn_request`). `GameService` below is
a thin facade holding what every call needs (the store, the clock, the brain settings),
and nothing per call.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from horcrux.models import AnyAction, Seat
from horcrux.service import ai, games, moves, projection
from horcrux.service.ai import ECHO_KEY, MadeBrain, MemoryRead, make_brain
from horcrux.service.errors import (
    BadRequest,
    DeadlineTooShort,
    InvalidRequest,
    InviteRequired,
    MoveConflict,
    NotOver,
    PreconditionFailed,
    SeatTaken,
    ServiceError,
    StaleVersion,
    Unauthorized,
    WaitingForPlayer,
    WrongInvite,
    WrongSeat,
)
from horcrux.service.games import Seated, default_harry_brain
from horcrux.service.models import (
    DEFAULT_HARRY_BRAIN,
    DEFAULT_RULES,
    DEFAULT_VOLDEMORT_BRAIN,
    EVENTS_PAGE_MAX,
    Authenticated,
    BeliefResponse,
    CreatedResponse,
    EventsResponse,
    GameResponse,
    JoinedResponse,
    LobbyResponse,
    LobbyStatus,
    MoveResponse,
    ReplayResponse,
    SeatRequest,
    ServiceResponse,
    TurnOutcome,
    TurnRequest,
)
from horcrux.service.moves import Precondition
from horcrux.service.projection import action_seat, legal_moves, project_event
from horcrux.store.port import GameSnapshot, GameStore, ScopeStore

BrainSettings = Callable[[], Mapping[str, Any]]
"""Called once per create / AI turn: the settings every brain is built with (`api_key`,
`model`, `gate`, ...). A callable, so a rotated secret reaches a warm function."""


class GameService:
    """The domain service over one `GameStore`.

    `inline_ai=True` (local play, unit tests) runs pending AI turns in process right after
    every write (`dispatch`); in AWS it is False and the events table's stream drives them.
    `brain_settings` gives the brains their settings (the Anthropic key as `api_key`).
    """

    def __init__(
        self,
        store: GameStore,
        *,
        clock: Callable[[], float] = time.time,
        inline_ai: bool = False,
        ttl_seconds: int | None = None,
        harry_default: str | None = None,
        brain_settings: BrainSettings | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.inline_ai = inline_ai
        self.ttl_seconds = ttl_seconds
        self.harry_default = harry_default
        self.brain_settings: BrainSettings = brain_settings or dict
        self.memory_counts: Counter[str] = Counter()
        """Running totals: `read`, `rebuilt:<why>` (the start-up check's mismatches),
        `error`, `applied`, `pin-unreadable` (a pin that did not decode), `copied` (a
        Voldemort's copy of Harry's brain adopted the pin)."""

    @property
    def scope_store(self) -> ScopeStore | None:
        """The store, if it keeps cross-game memory (the `ScopeStore` port)."""
        return self.store if isinstance(self.store, ScopeStore) else None

    # ------------------------------------------------------------ auth and views
    seat_of = staticmethod(projection.seat_of)

    def authenticate(self, game_id: str, token: str | None) -> Authenticated:
        """One read of the snapshot and the caller's seat (NotFound, Unauthorized)."""
        return projection.authenticate(self.store, game_id, token)

    def game_payload(self, snapshot: GameSnapshot, seat: Seat | None) -> GameResponse:
        """The game as `seat` (None: a spectator) sees it now (`self.clock`)."""
        return projection.game_view(snapshot, seat, now=self.clock())

    def game(self, game_id: str, token: str | None) -> GameResponse:
        auth = self.authenticate(game_id, token)
        return self.game_payload(auth.snapshot, auth.seat)

    def events(
        self, game_id: str, token: str | None, *, after: int = -1, limit: int = 50
    ) -> EventsResponse:
        return projection.events(self.store, game_id, token, after=after, limit=limit)

    def belief(self, game_id: str, token: str | None, turn: int | None = None) -> BeliefResponse:
        """The default AI Harry's belief on Harry's public evidence (any seat, spectators);
        with `turn`, on his records before that turn (a replay's step)."""
        auth = self.authenticate(game_id, token)
        return projection.harry_belief(auth.snapshot, turn)

    def replay(self, game_id: str) -> ReplayResponse:
        return projection.replay(self.store, game_id)

    # ------------------------------------------------------------ create / lobby / join
    def create_game(
        self,
        harry: SeatRequest,
        voldemort: SeatRequest,
        *,
        rules: str = DEFAULT_RULES,
        seed: int | None = None,
        private: bool = False,
    ) -> CreatedResponse:
        """A new game; the creator takes the first human seat and gets its token, once (a
        `private` game: and its invite code, once; it is never listed)."""
        seated = games.create_game(
            self.store,
            harry,
            voldemort,
            rules=rules,
            seed=seed,
            clock=self.clock,
            ttl_seconds=self.ttl_seconds,
            harry_default=self.harry_default,
            brain_settings=self.brain_settings(),
            private=private,
        )
        return CreatedResponse(**self._seated(seated), invite=seated.invite)

    def lobby(
        self, limit: int = 20, cursor: str | None = None, *, status: LobbyStatus = "open"
    ) -> LobbyResponse:
        return games.lobby(self.store, limit=limit, cursor=cursor, status=status)

    def join(
        self,
        game_id: str,
        seat: Seat,
        *,
        invite: str | None = None,
        name: str | None = None,
        player_key: str | None = None,
    ) -> JoinedResponse:
        """Take a free human seat (a private game's with its `invite` code), under `name`
        and the stable player id of `player_key` (a new key drawn if None)."""
        seated = games.join(self.store, game_id, seat, invite, name=name, player_key=player_key)
        return JoinedResponse(**self._seated(seated))

    def _seated(self, seated: Seated) -> dict[str, Any]:
        """The game as the seat taken sees it, after the AI seats have played when they
        play in process."""
        snapshot = seated.snapshot
        if self.inline_ai:
            self.dispatch(seated.game_id)
            snapshot = self.store.load(seated.game_id)
        return {
            "game_id": seated.game_id,
            "seat": seated.seat,
            "token": seated.token,
            "player": seated.player,
            "player_key": seated.player_key,
            "game": self.game_payload(snapshot, seated.seat),
        }

    # ------------------------------------------------------------ a person's move
    def move(
        self,
        game_id: str,
        token: str | None,
        action: AnyAction,
        preconditions: Sequence[Precondition] = (),
    ) -> MoveResponse:
        """The caller's move: one read, checks, one transaction (nothing written on error).

        `preconditions`: the versions it may be played at (`moves.Precondition`)."""
        return self.move_as(self.authenticate(game_id, token), action, preconditions)

    def move_as(
        self,
        auth: Authenticated,
        action: AnyAction,
        preconditions: Sequence[Precondition] = (),
        *,
        write_id: str | None = None,
    ) -> MoveResponse:
        """`move` for an already authenticated caller (the API's idempotent path);
        `write_id`: `moves.play_move`'s (a retried write whose answer was lost)."""
        moved = moves.play_move(
            self.store, auth, action, preconditions, write_id=write_id, clock=self.clock
        )
        committed = moved.snapshot
        if self.inline_ai:
            self.dispatch(committed.game_id)
            committed = self.store.load(committed.game_id)
        return MoveResponse(
            game_id=committed.game_id,
            seat=moved.seat,
            event=project_event(moved.event, moved.seat, over=committed.state.over),
            game=self.game_payload(committed, moved.seat),
        )

    # ------------------------------------------------------------ AI turns
    def make_brain(self, snapshot: GameSnapshot, seat: Seat) -> MadeBrain:
        """The seat's brain for a turn now, with its memory pin (`ai.make_brain`)."""
        return make_brain(
            self.store,
            snapshot,
            seat,
            settings=self.brain_settings(),
            counts=self.memory_counts,
        )

    def play_ai_turn(
        self, game_id: str, seat: Seat, after_seq: int, *, deadline_s: float | None = None
    ) -> TurnOutcome:
        """`horcrux.service.ai.play_ai_turn` with this service's store and settings."""
        return ai.play_ai_turn(
            self.store,
            game_id,
            seat,
            after_seq,
            deadline_s=deadline_s,
            settings=self.brain_settings(),
            counts=self.memory_counts,
        )

    def pending_ai(self, game_id: str) -> TurnRequest | None:
        return ai.pending_ai(self.store, game_id)

    def dispatch(self, game_id: str, *, max_turns: int = 1000) -> list[TurnOutcome]:
        """Run pending AI turns in process until a person must move or the game ends."""
        return ai.dispatch(
            self.store,
            game_id,
            max_turns=max_turns,
            settings=self.brain_settings(),
            counts=self.memory_counts,
        )


__all__ = [
    "DEFAULT_HARRY_BRAIN",
    "DEFAULT_RULES",
    "DEFAULT_VOLDEMORT_BRAIN",
    "ECHO_KEY",
    "EVENTS_PAGE_MAX",
    "Authenticated",
    "BadRequest",
    "BrainSettings",
    "CreatedResponse",
    "DeadlineTooShort",
    "EventsResponse",
    "GameResponse",
    "GameService",
    "InvalidRequest",
    "InviteRequired",
    "JoinedResponse",
    "LobbyResponse",
    "MadeBrain",
    "MemoryRead",
    "MoveConflict",
    "MoveResponse",
    "NotOver",
    "Precondition",
    "PreconditionFailed",
    "ReplayResponse",
    "SeatRequest",
    "SeatTaken",
    "ServiceError",
    "ServiceResponse",
    "StaleVersion",
    "TurnOutcome",
    "TurnRequest",
    "Unauthorized",
    "WaitingForPlayer",
    "WrongInvite",
    "WrongSeat",
    "action_seat",
    "default_harry_brain",
    "legal_moves",
    "make_brain",
    "project_event",
]
