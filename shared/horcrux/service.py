"""The game service: what the HTTP API and the AI-turn Lambdas do, over the `GameStore` port.

Pure logic (no HTTP, no AWS): the handlers parse a request, call one method here and
render what it returns. Every method reads at most one snapshot and writes at most one
transaction, so a failed precondition (a bad token, a move out of turn, an illegal action)
writes nothing.

* Seats: a person holds a seat by a bearer token (`secrets.token_urlsafe(32)`, shown once);
  the store keeps only its SHA-256, compared with `hmac.compare_digest`.
* Views: a seat sees `horcrux.views.view_for(state, seat)`; without a token, the spectator's.
* Events: projected per seat (`project_event`): while the game runs Harry and spectators get
  Harry's events only (and `game_started` without the seed and the positions), Voldemort
  gets everything but the seed; after the end everyone may read everything.
* AI turns: `play_ai_turn(game_id, seat, after_seq)` is the ONE function that plays an AI
  seat's move; the stream-driven Lambdas call it per record and `dispatch` calls it in
  process, so both paths have the same semantics (docs/API.md, "AI turns").
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.legal import legal_harry_actions, legal_voldemort_actions
from horcrux.errors import GameOver, HorcruxError, IllegalAction, NotYourTurn, UnknownBrain
from horcrux.models import AnyAction, GameStarted, GameState, HarryMoved, Pass, Seat
from horcrux.rules import PRESETS
from horcrux.store import codec
from horcrux.store.port import (
    SEATS,
    AnyEvent,
    BeliefPoint,
    Conflict,
    GameSnapshot,
    GameStore,
    NotFound,
    SeatInfo,
    hash_token,
    merge_history,
    new_snapshot,
    read_log,
)
from horcrux.views import build_replay, harry_view, view_for, voldemort_view

if TYPE_CHECKING:  # the brains bring numpy: imported where a brain is built, not at start-up
    from horcrux.agents.planner import PlannerHarry

log = logging.getLogger(__name__)

RulesName = Literal["classic", "standard"]
DEFAULT_RULES: RulesName = "standard"
DEFAULT_HARRY_BRAIN = "planner"
DEFAULT_VOLDEMORT_BRAIN = "reference"
TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 256
MAX_SEED = 2**63 - 1
EVENTS_PAGE_MAX = 200
REPLAY_PAGE = 1000
DEADLINE_FLOOR_S = 0.5
"""An AI turn needs at least this much time left to start (else it is retried)."""

Payload = dict[str, Any]


# ---------------------------------------------------------------- errors (codes -> HTTP in api)
class ServiceError(HorcruxError):
    """A request the service refuses; `details` are merged into the error body."""

    code = "service_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: Payload = details


class Unauthorized(ServiceError):
    """No token, a malformed one, or one that matches no seat of the game (401)."""

    code = "unauthorized"


class WrongSeat(ServiceError):
    """A valid token playing an action of the other seat (403)."""

    code = "wrong_seat"


class InvalidRequest(ServiceError):
    """A well-formed request the service cannot accept (seats, brains: 422)."""

    code = "invalid_request"


class WaitingForPlayer(ServiceError):
    """A move while a human seat is still free (409)."""

    code = "waiting_for_player"


class SeatTaken(ServiceError):
    """Joining a seat that is an AI's or already taken (409)."""

    code = "seat_taken"


class MoveConflict(ServiceError):
    """Another move was committed first (409); `details["game"]` is the game as it is now."""

    code = "conflict"


class NotOver(ServiceError):
    """The replay is released only after the end (409)."""

    code = "not_over"


class DeadlineTooShort(ServiceError):
    """Too little time left to play an AI turn: the stream retries the record."""

    code = "deadline_too_short"


# ---------------------------------------------------------------- requests and results
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
    """What this turn did with cross-game memory (an AI Harry's first turn only): `read`
    (a good read), `rebuilt:<why>` (the start-up check's mismatch, rebuilt), `error`
    (unavailable); None: memory was not read."""

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
        }


@dataclass
class Authenticated:
    """A loaded snapshot and the seat its caller holds (None: a spectator)."""

    snapshot: GameSnapshot
    seat: Seat | None


@dataclass
class _Brain:
    brain: Any
    restored: bool = False


# ---------------------------------------------------------------- helpers
def rebuilt_from_view(brain: Any) -> bool:
    """Whether `brain` is rebuilt from the view each turn instead of restored.

    The planners' whole state is a pure function of their seat's view: a fresh one synced
    to the view (`decide` does it) decides exactly as one restored from its `snapshot()`
    (`tests/test_service.py` proves it), so their snapshot is not stored. Any other brain
    with `snapshot()` / `restore()` keeps its opaque blob in `beliefs`."""
    from horcrux.agents.planner import PlannerHarry

    return isinstance(brain, PlannerHarry)


ECHO_KEY = "harry.echo"
"""The snapshot's `beliefs` entry holding what an AI Harry's first turn read from its
cross-game memory (adversary models, memory line), so later turns rebuild the same brain
without reading the memory again (docs/ECHO.md)."""


def _memory_planner(brain: Any) -> PlannerHarry | None:
    """The planner whose adversary models cross-game memory sets (default mode only)."""
    from horcrux.agents.gated import GatedHarry
    from horcrux.agents.planner import PlannerHarry
    from horcrux.belief.bayes import DEFAULT_MODE

    planner = brain.planner if isinstance(brain, GatedHarry) else brain
    if isinstance(planner, PlannerHarry) and type(planner) is PlannerHarry:
        return planner if planner.mode == DEFAULT_MODE else None
    return None


def default_harry_brain() -> str:
    """The brain an AI Harry plays with when the request names none."""
    return DEFAULT_HARRY_BRAIN


def action_seat(action: AnyAction) -> Seat:
    return "harry" if isinstance(action, engine.HARRY_ACTIONS) else "voldemort"


def project_event(event: AnyEvent, seat: Seat | None, *, over: bool) -> Payload | None:
    """The event as `seat` (None: a spectator) may see it; None if hidden from it.

    After the end everyone sees everything. While the game runs, Voldemort sees every
    event but the seed; Harry and spectators see `game_started` with the rules only and
    Harry's own moves with their observations, never Voldemort's moves.
    """
    data = event.model_dump(mode="json")
    if over:
        return data
    if seat == "voldemort":
        data.pop("seed", None)
        return data
    if isinstance(event, GameStarted):
        return {"type": event.type, "seq": event.seq, "turn": event.turn, "rules": data["rules"]}
    if isinstance(event, HarryMoved):
        return data
    return None


def legal_moves(state: GameState, seat: Seat) -> Payload | None:
    """The seat's legal action set now, as JSON (None when it is not its turn)."""
    if state.phase != seat:
        return None
    if seat == "harry":
        h = legal_harry_actions(harry_view(state))
        return {
            "types": list(h.types),
            "locations": list(h.locations),
            "attack": h.attack,
            "allies": dict(h.allies),
        }
    v = legal_voldemort_actions(voldemort_view(state))
    return {
        "types": list(v.types),
        "relocate_from": list(v.relocate_from),
        "relocate_to": list(v.relocate_to),
        "decoy_at": list(v.decoy_at),
    }


def turn_request(image: Mapping[str, Any]) -> TurnRequest | None:
    """The AI turn an event item asks for (`next_ai`), or None if it asks for none.

    `image` is a stream record's NewImage, either low-level (`{"pk": {"S": ...}}`) or
    deserialised (`{"pk": "GAME#x", "seq": Decimal(3)}`, as Powertools gives it).
    """

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping) and len(value) == 1:
            ((kind, inner),) = value.items()
            if kind in ("S", "N"):
                return inner
        return value

    seat = plain(image.get("next_ai"))
    if seat not in SEATS:
        return None
    pk, seq = plain(image.get("pk")), plain(image.get("seq"))
    if not isinstance(pk, str) or seq is None:
        raise ValueError(f"not an event item: pk={pk!r} seq={seq!r}")
    number = Decimal(str(seq))
    if number != number.to_integral_value():
        raise ValueError(f"not an event seq: {seq!r}")
    return TurnRequest(game_id=codec.game_id_of(pk), seq=int(number), seat=seat)


# ---------------------------------------------------------------- the service
class GameService:
    """The domain service over one `GameStore`.

    `inline_ai=True` (local play, unit tests) runs pending AI turns in process right after
    every write (`dispatch`); in AWS it is False and the events table's stream drives them.
    """

    def __init__(
        self,
        store: GameStore,
        *,
        clock: Callable[[], float] = time.time,
        inline_ai: bool = False,
        ttl_seconds: int | None = None,
        harry_default: str | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.inline_ai = inline_ai
        self.ttl_seconds = ttl_seconds
        self._harry_default = harry_default
        self._pinned: bytes | None = None
        self._memory_read: str | None = None
        self.memory_counts: Counter[str] = Counter()
        """`read`, `rebuilt:<why>` (the start-up check's mismatches), `applied`."""

    # ------------------------------------------------------------ auth
    @staticmethod
    def seat_of(snapshot: GameSnapshot, token: str | None) -> Seat | None:
        """The seat `token` holds in this game (None without a token); Unauthorized if none."""
        if token is None:
            return None
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise Unauthorized("the bearer token is empty or too long")
        digest = hash_token(token)
        found: Seat | None = None
        for seat in SEATS:  # compare against both seats: no early exit on a match
            stored = snapshot.seats[seat].token_hash
            if stored is not None and hmac.compare_digest(stored, digest):
                found = seat
        if found is None:
            raise Unauthorized(f"the token holds no seat of game {snapshot.game_id}")
        return found

    def authenticate(self, game_id: str, token: str | None) -> Authenticated:
        """One read of the snapshot and the caller's seat (NotFound, Unauthorized)."""
        snapshot = self.store.load(game_id)
        return Authenticated(snapshot, self.seat_of(snapshot, token))

    # ------------------------------------------------------------ presentation
    def game_payload(self, snapshot: GameSnapshot, seat: Seat | None) -> Payload:
        """The game as `seat` (None: a spectator) sees it, with its legal moves if it acts."""
        state = snapshot.state
        seats: Payload = {}
        for s in SEATS:
            info = snapshot.seats[s]
            entry: Payload = {"kind": info.kind, "taken": not info.free}
            if info.brain is not None:
                entry["brain"] = info.brain
            seats[s] = entry
        return {
            "game_id": snapshot.game_id,
            "version": snapshot.version,
            "status": snapshot.status,
            "rules": snapshot.rules_name,
            "turn": state.turn,
            "phase": state.phase,
            "to_move": None if state.over else state.phase,
            "your_seat": seat,
            "seats": seats,
            "winner": state.winner,
            "end_reason": state.end_reason,
            "view": view_for(state, seat).model_dump(mode="json"),
            "legal": legal_moves(state, seat) if seat is not None else None,
        }

    # ------------------------------------------------------------ create / lobby / join
    def _seat_info(self, seat: Seat, request: SeatRequest, rules_name: str) -> SeatInfo:
        if request.kind == "human":
            if request.brain is not None:
                raise InvalidRequest(f"the {seat} seat is human: it takes no brain", seat=seat)
            return SeatInfo(kind="human")
        registry = HARRY_BRAINS if seat == "harry" else VOLDEMORT_BRAINS
        default = (
            (self._harry_default or default_harry_brain())
            if seat == "harry"
            else DEFAULT_VOLDEMORT_BRAIN
        )
        spec = request.brain or default
        try:  # build it once: an unknown name, a bad parameter or a missing key fails here
            registry.create(spec, PRESETS[rules_name], for_seat=True)
        except UnknownBrain as exc:
            raise UnknownBrain(f"{exc.message} (seat {seat})") from None
        except HorcruxError:
            raise
        except Exception as exc:
            raise InvalidRequest(f"the {seat} brain {spec!r} cannot be built: {exc}") from None
        return SeatInfo(kind="ai", brain=spec)

    def create_game(
        self,
        harry: SeatRequest,
        voldemort: SeatRequest,
        *,
        rules: str = DEFAULT_RULES,
        seed: int | None = None,
    ) -> Payload:
        """A new game; the creator takes the first human seat and gets its token, once."""
        if rules not in PRESETS:
            raise InvalidRequest(f"unknown rules {rules!r}; known: {', '.join(PRESETS)}")
        if seed is not None and not 0 <= seed <= MAX_SEED:
            raise InvalidRequest(f"seed must be in 0..{MAX_SEED}")
        requests: dict[Seat, SeatRequest] = {"harry": harry, "voldemort": voldemort}
        seats = {s: self._seat_info(s, requests[s], rules) for s in SEATS}
        creator = next((s for s in SEATS if seats[s].kind == "human"), None)
        token: str | None = None
        if creator is not None:
            token = secrets.token_urlsafe(TOKEN_BYTES)
            seats[creator] = SeatInfo(kind="human", token_hash=hash_token(token))
        drawn = secrets.randbelow(MAX_SEED + 1) if seed is None else seed
        state, started = engine.new_game(PRESETS[rules], drawn)
        for _ in range(3):  # a 96-bit id collides only by a miracle; retry anyway
            game_id = secrets.token_urlsafe(12)
            snapshot = new_snapshot(
                game_id, state, seats, now=self.clock(), ttl_seconds=self.ttl_seconds
            )
            try:
                self.store.create_game(snapshot, started)
                break
            except Conflict as exc:
                if exc.reason != "exists":
                    raise
        else:  # pragma: no cover
            raise RuntimeError("could not draw a free game id")
        return self._seated(game_id, creator, token, snapshot)

    def lobby(self, limit: int = 20, cursor: str | None = None) -> Payload:
        """Games with a free human seat, oldest first; pass `cursor` back for more."""
        page = self.store.list_open_games(limit=limit, cursor=cursor)
        return {
            "games": [
                {
                    "game_id": g.game_id,
                    "rules": g.rules_name,
                    "open_seats": list(g.open_seats),
                    "created_at": g.created_at,
                }
                for g in page.games
            ],
            "cursor": page.cursor,
        }

    def join(self, game_id: str, seat: Seat) -> Payload:
        """Take a free human seat; its token is shown once."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        try:
            snapshot = self.store.join_seat(game_id, seat, hash_token(token))
        except Conflict as exc:
            if exc.reason != "seat_taken":
                raise MoveConflict(exc.message) from None
            raise SeatTaken(exc.message, seat=seat) from None
        return self._seated(game_id, seat, token, snapshot)

    def _seated(
        self, game_id: str, seat: Seat | None, token: str | None, snapshot: GameSnapshot
    ) -> Payload:
        """The answer to creating or joining a game: the seat taken (none when both are AI),
        its token, shown once, and the game as that seat sees it, after the AI seats have
        played when they play in process."""
        if self.inline_ai:
            self.dispatch(game_id)
            snapshot = self.store.load(game_id)
        return {
            "game_id": game_id,
            "seat": seat,
            "token": token,
            "game": self.game_payload(snapshot, seat),
        }

    # ------------------------------------------------------------ read
    def game(self, game_id: str, token: str | None) -> Payload:
        auth = self.authenticate(game_id, token)
        return self.game_payload(auth.snapshot, auth.seat)

    def events(
        self, game_id: str, token: str | None, *, after: int = -1, limit: int = 50
    ) -> Payload:
        """The caller's projection of the log (a page may hold fewer than `limit` events:
        events hidden from the caller are dropped after paging; follow `next_after`)."""
        auth = self.authenticate(game_id, token)
        limit = max(1, min(limit, EVENTS_PAGE_MAX))
        page = self.store.events(game_id, after=after, limit=limit)
        over = auth.snapshot.state.over
        projected = [project_event(e, auth.seat, over=over) for e in page.events]
        return {
            "game_id": game_id,
            "your_seat": auth.seat,
            "events": [e for e in projected if e is not None],
            "next_after": page.next_after,
        }

    def replay(self, game_id: str) -> Payload:
        """Every event with the truth after it, and Harry's belief history: after the end."""
        snapshot = self.store.load(game_id)
        if not snapshot.state.over:
            raise NotOver(
                f"game {game_id} is still running (turn {snapshot.turn}); "
                "the replay is released after the end"
            )
        events, logged = read_log(self.store, game_id, page=REPLAY_PAGE)
        replay = build_replay(events)
        history = merge_history(snapshot.belief_history, logged)
        return {
            "game_id": game_id,
            "replay": replay.model_dump(mode="json"),
            "belief_history": [
                {
                    "turn": p.turn,
                    "entropy": p.entropy,
                    "top": [{"location": loc, "p": prob} for loc, prob in p.top],
                }
                for p in history
            ],
        }

    # ------------------------------------------------------------ a person's move
    def move(self, game_id: str, token: str | None, action: AnyAction) -> Payload:
        """The caller's move: one read, checks, one transaction (nothing written on error)."""
        auth = self.authenticate(game_id, token)
        return self.move_as(auth, action)

    def move_as(self, auth: Authenticated, action: AnyAction) -> Payload:
        """`move` for an already authenticated caller (the API's idempotent path)."""
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
        new_state, event = engine.apply(state, action)  # IllegalAction: nothing written
        after = snapshot.advanced(new_state)
        try:
            committed = self.store.commit_turn(snapshot.version, after, event)
        except Conflict as exc:
            current = exc.current or self.store.load(snapshot.game_id)
            raise MoveConflict(
                f"another move was committed first (game now at version {current.version}, "
                f"{current.phase} to move); yours was not applied",
                game=self.game_payload(current, seat),
            ) from None
        if self.inline_ai:
            self.dispatch(snapshot.game_id)
            committed = self.store.load(snapshot.game_id)
        return {
            "game_id": snapshot.game_id,
            "seat": seat,
            "event": project_event(event, seat, over=committed.state.over),
            "game": self.game_payload(committed, seat),
        }

    # ------------------------------------------------------------ AI turns
    def _build_brain(self, snapshot: GameSnapshot, seat: Seat, deadline_s: float | None) -> _Brain:
        info = snapshot.seats[seat]
        assert info.brain is not None
        rules = snapshot.state.rules
        registry = HARRY_BRAINS if seat == "harry" else VOLDEMORT_BRAINS
        settings: Payload = {}
        if deadline_s is not None:
            settings["deadline_s"] = deadline_s
        brain: Any = registry.create(info.brain, rules, for_seat=True, settings=settings)
        if seat == "harry":
            self._apply_memory(snapshot, brain)
        data = snapshot.beliefs.get(seat)
        restore = getattr(type(brain), "restore", None)
        if data and callable(restore):
            try:
                restored = restore(rules, data)
            except Exception:  # a stale or foreign snapshot: rebuild from the view
                log.warning("could not restore the %s brain %s", seat, info.brain, exc_info=True)
            else:
                if type(restored) is type(brain) and getattr(restored, "name", None) == getattr(
                    brain, "name", None
                ):
                    return _Brain(restored, restored=True)
        return _Brain(brain)

    def _memory_blob(self, snapshot: GameSnapshot) -> bytes | None:
        """What this game's AI Harry reads from cross-game memory: pinned in the snapshot
        after the first turn; on the first turn, read (and checked, rebuilt on a
        mismatch) from the scope's memory item. None: nothing learned (or no memory)."""
        if ECHO_KEY in snapshot.beliefs:
            return snapshot.beliefs[ECHO_KEY]
        if snapshot.state.turn != 1 or not callable(getattr(self.store, "put_scope_item", None)):
            return None
        from horcrux.compaction import scope_of
        from horcrux.echo.persist import startup
        from horcrux.echo.use import adversary_models, memory_line

        scope = scope_of(snapshot.seats)
        if scope is None:
            return None
        try:
            got = startup(self.store, *scope)  # type: ignore[arg-type]
        except Exception:  # memory must never stop a game
            log.warning("cross-game memory of %s vs %s unavailable", *scope, exc_info=True)
            self.memory_counts["error"] += 1
            self._memory_read = "error"
            return None
        self.memory_counts["read"] += 1
        self._memory_read = "read"
        if got.rebuilt is not None:
            self.memory_counts[f"rebuilt:{got.rebuilt}"] += 1
            self._memory_read = f"rebuilt:{got.rebuilt}"
            log.warning("memory of %s vs %s rebuilt from the events (%s)", *scope, got.rebuilt)
        models = adversary_models(got.memory)
        line = memory_line(got.memory)
        if models is None and line is None:
            return None
        body = {"models": [asdict(m) for m in models] if models else None, "line": line}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    def _take_pinned(self) -> bytes | None:
        """The memory pin this turn's brain was built with (to keep in the snapshot)."""
        pinned, self._pinned = self._pinned, None
        return pinned

    def _apply_memory(self, snapshot: GameSnapshot, brain: Any) -> None:
        planner = _memory_planner(brain)
        if planner is None:
            return
        blob = self._memory_blob(snapshot)
        if blob is None:
            return
        from horcrux.agents.gated import GatedHarry
        from horcrux.belief.bayes import AdversaryModel

        try:
            body = json.loads(blob)
            models = tuple(AdversaryModel(**m) for m in body.get("models") or ())
        except (ValueError, TypeError):
            log.warning("unreadable memory pin in game %s", snapshot.game_id, exc_info=True)
            return
        if models:
            planner.adopt_models(models)
        if isinstance(brain, GatedHarry) and body.get("line"):
            brain.memory.memory_line = str(body["line"])
        self.memory_counts["applied"] += 1
        self._pinned = blob

    @staticmethod
    def _belief_of(brain: Any, seat: Seat, turn: int) -> tuple[dict[str, bytes], Any | None]:
        """The brain's Layer-2 snapshot, and (Harry only) its belief point, if it has them.

        A brain rebuilt from the view (`rebuilt_from_view`) stores no snapshot."""
        beliefs: dict[str, bytes] = {}
        snap = getattr(brain, "snapshot", None)
        if callable(snap) and not rebuilt_from_view(brain):
            data = snap()
            if isinstance(data, bytes | bytearray):
                beliefs[seat] = bytes(data)
        if seat != "harry":
            return beliefs, None
        belief = getattr(brain, "belief", None)
        entropy, top = getattr(belief, "entropy", None), getattr(belief, "top", None)
        if callable(entropy) and callable(top):
            value = float(entropy())
            if math.isfinite(value):
                point = BeliefPoint(
                    turn=turn,
                    entropy=value,
                    top=tuple((str(loc), float(p)) for loc, p in top(3))[:3],
                )
                return beliefs, point
        return beliefs, None

    def play_ai_turn(
        self, game_id: str, seat: Seat, after_seq: int, *, deadline_s: float | None = None
    ) -> TurnOutcome:
        """Play the AI `seat`'s move that event `after_seq` asked for, at most once.

        One read of the snapshot; nothing happens if the game is gone, has moved past
        `after_seq` (a stream retry or a duplicate record), is over, or it is not this AI
        seat's turn. Otherwise the seat's brain (restored from `snapshot.beliefs` if it
        can be) decides and one transaction commits; if another invocation committed first
        the store's condition fails and this one does nothing (`lost_race`).
        """
        start = time.perf_counter()
        self._memory_read = None

        def outcome(status: Any, reason: str = "", **kw: Any) -> TurnOutcome:
            return TurnOutcome(
                game_id,
                seat,
                status,
                reason,
                seconds=time.perf_counter() - start,
                memory=self._memory_read,
                **kw,
            )

        try:
            snapshot = self.store.load(game_id)
        except NotFound:
            return outcome("gone", "no such game (or it expired)")
        state = snapshot.state
        if state.seq != after_seq:
            return outcome("skipped", f"the game is at seq {state.seq}, not {after_seq}")
        if state.over:
            return outcome("skipped", "the game is over")
        if codec.next_ai(snapshot) != seat:
            return outcome("skipped", f"not the {seat} AI's turn (phase {state.phase})")
        if deadline_s is not None and deadline_s < DEADLINE_FLOOR_S:
            raise DeadlineTooShort(f"{deadline_s:.2f} s left; the turn is left for a retry")
        self._pinned = None
        made = self._build_brain(snapshot, seat, deadline_s)
        move = self._decide(made.brain, state, seat)
        try:
            new_state, event = engine.apply(state, move)
        except IllegalAction as exc:  # a buggy brain must not stall the game
            log.error("the %s brain %s chose an illegal move: %s", seat, made.brain, exc)
            move = self._fallback(state, seat)
            new_state, event = engine.apply(state, move)
        beliefs, point = self._belief_of(made.brain, seat, state.turn)
        pinned = self._take_pinned()
        if pinned is not None and ECHO_KEY not in snapshot.beliefs:
            beliefs[ECHO_KEY] = pinned
        after = snapshot.advanced(new_state, beliefs=beliefs, belief_point=point)
        if seat not in beliefs and seat in after.beliefs:  # a stale blob: drop it
            kept = {k: v for k, v in after.beliefs.items() if k != seat}
            after = after.model_copy(update={"beliefs": kept})
        try:
            self.store.commit_turn(snapshot.version, after, event)
        except Conflict as exc:
            if exc.reason == "busy":
                raise  # a transaction was in flight: let the stream retry, it will skip
            return outcome("lost_race", exc.message)
        return outcome(
            "played",
            seq=event.seq,
            version=after.version,
            action=move.model_dump(mode="json"),
        )

    @staticmethod
    def _decide(brain: Any, state: GameState, seat: Seat) -> AnyAction:
        stream = rng.stream(state.seed, seat, state.turn)
        view = harry_view(state) if seat == "harry" else voldemort_view(state)
        move: AnyAction = brain.decide(view, stream)
        return move

    @staticmethod
    def _fallback(state: GameState, seat: Seat) -> AnyAction:
        if seat == "voldemort":
            return Pass()
        brain = HARRY_BRAINS.create("naive", state.rules)
        move: AnyAction = brain.decide(harry_view(state), rng.stream(state.seed, seat, state.turn))
        return move

    def pending_ai(self, game_id: str) -> TurnRequest | None:
        """The AI turn the game waits for now (the `next_ai` its last event carries)."""
        snapshot = self.store.load(game_id)
        seat = codec.next_ai(snapshot)
        if seat is None:
            return None
        return TurnRequest(game_id=game_id, seq=snapshot.state.seq, seat=seat)

    def dispatch(self, game_id: str, *, max_turns: int = 1000) -> list[TurnOutcome]:
        """Run pending AI turns in process until a person must move or the game ends.

        The local stand-in for the stream: each step is exactly what a turn Lambda does for
        the record of the last event (`play_ai_turn` with that event's seq).
        """
        outcomes: list[TurnOutcome] = []
        for _ in range(max_turns):
            request = self.pending_ai(game_id)
            if request is None:
                break
            result = self.play_ai_turn(game_id, request.seat, request.seq)
            outcomes.append(result)
            if result.status != "played":
                break
        return outcomes


__all__ = [
    "DEFAULT_RULES",
    "EVENTS_PAGE_MAX",
    "Authenticated",
    "DeadlineTooShort",
    "GameService",
    "InvalidRequest",
    "MoveConflict",
    "NotOver",
    "SeatRequest",
    "SeatTaken",
    "ServiceError",
    "TurnOutcome",
    "TurnRequest",
    "Unauthorized",
    "WaitingForPlayer",
    "WrongSeat",
    "action_seat",
    "default_harry_brain",
    "legal_moves",
    "project_event",
    "turn_request",
]
