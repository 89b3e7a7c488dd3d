"""AI turns: build a seat's brain (with its cross-game memory pin), decide, commit once.

`play_ai_turn(store, game_id, seat, after_seq)` is the ONE function that plays an AI
seat's move; the stream-driven Lambdas call it per record and `dispatch` calls it in
process, so both paths have the same semantics (docs/API.md, "AI turns").

Everything a turn learns on the way (the memory pin its brain was built with, what the
memory read did) travels in the values returned here (`MemoryRead`, `MadeBrain`), never on
a shared object: one service instance serves concurrent turns safely.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from horcrux import engine, play, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.base import DEFAULT_HARRY, DEFAULT_VOLDEMORT
from horcrux.agents.contract import (
    Brain,
    MemoryAdopter,
    MemoryLineReader,
    decisions_of,
)
from horcrux.agents.contract import belief_of as belief_map
from horcrux.decisions import DecisionNote, decision_note
from horcrux.errors import IllegalAction, UnknownBrain
from horcrux.models import AnyAction, GameState, Pass, Seat
from horcrux.rules import RuleSet
from horcrux.service.errors import DeadlineTooShort
from horcrux.service.models import DEADLINE_FLOOR_S, TurnOutcome, TurnRequest
from horcrux.store.mapping import next_ai
from horcrux.store.port import (
    BeliefPoint,
    Conflict,
    GameSnapshot,
    GameStore,
    NotFound,
    ScopeStore,
    StoreUnavailable,
)
from horcrux.views import harry_view

if TYPE_CHECKING:  # the brains bring numpy: imported where a brain is built, not at start-up
    from horcrux.agents.planner import PlannerHarry

log = logging.getLogger(__name__)

ECHO_KEY = "harry.echo"
"""The snapshot's `beliefs` entry holding what an AI Harry's first turn read from its
cross-game memory (adversary models, memory line), so later turns rebuild the same brain
without reading the memory again (docs/ECHO.md)."""

PIN_UNREADABLE = "pin-unreadable"
"""The memory status of a turn whose pin did not decode: the game plays the turn without
memory, the pin stays in the snapshot for review, the turn Lambdas alarm on it."""
COPIED = "copied"
"""The memory status of a Voldemort turn whose copy of Harry's brain adopted the pin."""


@dataclass(frozen=True)
class MemoryRead:
    """What an AI Harry reads from cross-game memory for one turn.

    `pin`: the blob to build the brain with (pinned in the snapshot after the first turn;
    None: nothing learned, or no memory). `status`: `read`, `rebuilt:<why>`, `error`,
    `pin-unreadable` (the pin did not decode: the brain plays without it), or None when
    the memory item was not read and the pin applied (a later turn, a store without
    memory)."""

    pin: bytes | None = None
    status: str | None = None


@dataclass(frozen=True)
class MadeBrain:
    """A seat's brain for one turn, and the memory pin it was built with (if any)."""

    brain: Brain
    pin: bytes | None = None
    """The memory pin of Harry's brain (applied, or unreadable: memory `pin-unreadable`):
    kept in the snapshot after its first turn."""
    memory: str | None = None
    """Harry: `MemoryRead.status` of this turn (None: memory was not read). Voldemort:
    `copy_memory`'s status (`copied`, `pin-unreadable`; None: nothing copied)."""
    replaced: str | None = None
    """The seat's stored spec when this runtime no longer builds it (a brain retired
    without a listed replacement, a plugin uninstalled): the seat's default brain played
    instead (`build_seat_brain`). None: the stored spec played."""


def memory_planner(brain: object) -> PlannerHarry | None:
    """The planner whose adversary models cross-game memory sets (default mode only):
    `horcrux.echo.readers.memory_planner`, imported on use (it loads the memory code)."""
    from horcrux.echo.readers import memory_planner as planner_of

    return planner_of(brain)


def read_memory(store: GameStore, snapshot: GameSnapshot, counts: Counter[str]) -> MemoryRead:
    """What this game's AI Harry reads from cross-game memory: the pin kept in the snapshot
    after the first turn; on the first turn, read (and checked, rebuilt on a mismatch) from
    the scope's memory item, if the store keeps memory (a `ScopeStore`)."""
    if ECHO_KEY in snapshot.beliefs:
        return MemoryRead(pin=snapshot.beliefs[ECHO_KEY])
    if snapshot.state.turn != 1 or not isinstance(store, ScopeStore):
        return MemoryRead()
    from horcrux.compaction import scope_of
    from horcrux.echo.persist import startup
    from horcrux.echo.pin import encode_pin
    from horcrux.echo.use import memory_line, memory_plan

    scope = scope_of(snapshot.seats)
    if scope is None:
        return MemoryRead()
    try:
        got = startup(store, *scope)
    except StoreUnavailable:  # the turn cannot be committed either: fail it, to be retried
        raise
    except Exception:  # memory must never stop a game
        log.warning("cross-game memory of %s vs %s unavailable", *scope, exc_info=True)
        counts["error"] += 1
        return MemoryRead(status="error")
    counts["read"] += 1
    status = "read"
    if got.rebuilt is not None:
        counts[f"rebuilt:{got.rebuilt}"] += 1
        status = f"rebuilt:{got.rebuilt}"
        log.warning("memory of %s vs %s rebuilt from the events (%s)", *scope, got.rebuilt)
    return MemoryRead(encode_pin(memory_plan(got.memory), memory_line(got.memory)), status)


def apply_memory(
    store: GameStore, snapshot: GameSnapshot, brain: object, counts: Counter[str]
) -> MemoryRead:
    """Give `brain` what cross-game memory holds for it; the read, with `pin` set if it
    was applied (None: no memory planner, nothing learned). A pin that does not decode is
    counted, logged and kept (`pin` set, so it stays in the snapshot for review) with the
    status `pin-unreadable`: the brain plays without memory."""
    planner = memory_planner(brain)
    if planner is None:
        return MemoryRead()
    read = read_memory(store, snapshot, counts)
    if read.pin is None:
        return read
    from horcrux.echo.pin import adopt_pin

    try:
        pinned = adopt_pin(planner, read.pin)
    except (ValueError, TypeError):
        log.warning("unreadable memory pin in game %s", snapshot.game_id, exc_info=True)
        counts[PIN_UNREADABLE] += 1
        return MemoryRead(pin=read.pin, status=PIN_UNREADABLE)
    if pinned.line and isinstance(brain, MemoryLineReader):
        brain.adopt_memory_line(pinned.line)
    counts["applied"] += 1
    return read


WARM_GAMES = 16
"""How many games' memory-playing Harrys a warm process keeps between turns."""
_warm: OrderedDict[tuple[str, bytes], Brain] = OrderedDict()


def against_opponent(brain: Brain, read: MemoryRead, game_id: str = "") -> Brain:
    """The memory planner playing against who memory says the opponent is, if the pin
    names him (`horcrux.agents.particle_harry.against`; `echo.opponent`); else `brain`.

    That Harry's belief is a pure function of the view (each update's draws come from
    streams keyed by the turn and the record), so a warm process keeps it between turns
    (the last `WARM_GAMES` games, keyed by the game and its pin): the next turn folds in
    one turn instead of the whole game, and decides exactly as a fresh one synced to the
    same view (tested)."""
    if read.pin is None or read.status == PIN_UNREADABLE:
        return brain
    planner = memory_planner(brain)
    if planner is None or planner is not brain:  # the gated brain keeps its own planner
        return brain
    key = (game_id, read.pin)
    kept = _warm.get(key) if game_id else None
    if kept is not None:
        _warm.move_to_end(key)
        return kept
    from horcrux.echo.pin import decode_pin

    prior = decode_pin(read.pin).opponent
    if prior is None:
        return brain
    from horcrux.agents.particle_harry import against

    made = against(planner, prior)
    if game_id:
        _warm[key] = made
        while len(_warm) > WARM_GAMES:
            _warm.popitem(last=False)
    return made


def copy_memory(snapshot: GameSnapshot, brain: object, counts: Counter[str]) -> str | None:
    """A Voldemort who runs a copy of Harry's brain (`mirror`, `ambush`: an
    `MemoryAdopter`) gets the memory pinned for this game's Harry: it comes from
    past games Voldemort saw whole, by code he has read.

    Returns `copied`, `pin-unreadable` (the pin did not decode: counted, logged, left in
    the snapshot; the copy plays without memory) or None (nothing pinned, or a brain
    without a copy: nothing to copy)."""
    pin = snapshot.beliefs.get(ECHO_KEY)
    if pin is None or not isinstance(brain, MemoryAdopter):
        return None
    from horcrux.echo.pin import adopt_pin

    try:
        adopt_pin(brain, pin)
    except (ValueError, TypeError):
        log.warning("unreadable memory pin in game %s", snapshot.game_id, exc_info=True)
        counts[PIN_UNREADABLE] += 1
        return PIN_UNREADABLE
    counts[COPIED] += 1
    return COPIED


def build_seat_brain(
    seat: Seat, spec: str, rules: RuleSet, settings: Mapping[str, Any]
) -> tuple[Brain, str | None]:
    """The stored seat's brain for this turn, and its spec if it no longer builds.

    A seat's spec was checked when the game was created, so a spec that no longer builds
    (`UnknownBrain`) means the runtime changed under the game: a retired spec's listed
    replacement plays it (`Registry.resolve`); any other plays the seat's default brain,
    logged here and reported by the turn (`TurnOutcome.replaced`, metric
    `AiBrainReplaced`, alarmed), and the stored spec is kept. The game goes on."""
    registry = HARRY_BRAINS if seat == "harry" else VOLDEMORT_BRAINS
    try:
        brain: Brain = registry.create(
            spec, rules, for_seat=True, settings=dict(settings), stored=True
        )
    except UnknownBrain as exc:
        default = DEFAULT_HARRY if seat == "harry" else DEFAULT_VOLDEMORT
        log.error(
            "the %s seat's brain %r no longer builds (%s): %s plays", seat, spec, exc, default
        )
        return registry.create(default, rules, for_seat=True, settings=dict(settings)), spec
    return brain, None


def make_brain(
    store: GameStore,
    snapshot: GameSnapshot,
    seat: Seat,
    *,
    settings: Mapping[str, Any] | None = None,
    counts: Counter[str] | None = None,
) -> MadeBrain:
    """The seat's brain for this turn, with the memory pin it was built with.

    Built from the seat's spec with `settings` (`api_key`, `deadline_s`, ...) and given
    cross-game memory (an AI Harry). No brain state is stored between turns: a
    `ViewSynced` brain (the planners) rebuilds its whole state from the view as it decides,
    the others are stateless (`tests/integration/test_item_sizes_games.py`: the rebuilt
    planner decides as one restored from its snapshot would)."""
    info = snapshot.seats[seat]
    assert info.brain is not None
    brain, replaced = build_seat_brain(seat, info.brain, snapshot.state.rules, settings or {})
    counts = counts if counts is not None else Counter()
    read = MemoryRead()
    if seat == "harry":
        read = apply_memory(store, snapshot, brain, counts)
        brain = against_opponent(brain, read, snapshot.game_id)
    else:
        read = MemoryRead(status=copy_memory(snapshot, brain, counts))
    return MadeBrain(brain, pin=read.pin, memory=read.status, replaced=replaced)


def belief_point(brain: object, seat: Seat, turn: int) -> BeliefPoint | None:
    """Harry's belief point this turn (a `BeliefHolder`'s map: its entropy and top three
    locations), or None (Voldemort, a brain without a map, an entropy that is not finite)."""
    if seat != "harry":
        return None
    belief = belief_map(brain)
    if belief is None:
        return None
    value = float(belief.entropy())
    if not math.isfinite(value):
        return None
    top = tuple((str(loc), float(p)) for loc, p in belief.top(3))[:3]
    return BeliefPoint(turn=turn, entropy=value, top=top)


def decide(brain: Brain, state: GameState, seat: Seat) -> AnyAction:
    """The brain's move in `state` (`horcrux.play.decide`: the seat's view and RNG stream)."""
    return play.decide(brain, state, seat)


def note_of(brain: object, seat: Seat, spec: str, turn: int, move: AnyAction) -> DecisionNote:
    """The decision note of the AI move `move` (kept on its event, shown in the replay): the
    brain's record of this turn if it keeps records (`DecisionRecorder`), its move
    otherwise."""
    from horcrux.agents.candidates import move_label

    records = decisions_of(brain)
    record = records[-1] if records and records[-1].turn == turn else None
    return decision_note(seat, spec, turn, move_label(move), record)


def refused(note: DecisionNote, played: AnyAction) -> DecisionNote:
    """The note of a move the engine refused, replaced by `fallback_move`'s `played`."""
    from horcrux.agents.candidates import move_label

    return note.model_copy(
        update={
            "source": "fallback",
            "fallback_reason": "illegal",
            "llm_move": note.llm_move if note.source == "llm" else None,
            "move": move_label(played),
        }
    )


def fallback_move(state: GameState, seat: Seat) -> AnyAction:
    """What a seat plays when its brain chose an illegal move (a buggy brain)."""
    if seat == "voldemort":
        return Pass()
    brain = HARRY_BRAINS.create("naive", state.rules)
    move: AnyAction = brain.decide(harry_view(state), rng.stream(state.seed, seat, state.turn))
    return move


def play_ai_turn(
    store: GameStore,
    game_id: str,
    seat: Seat,
    after_seq: int,
    *,
    deadline_s: float | None = None,
    settings: Mapping[str, Any] | None = None,
    counts: Counter[str] | None = None,
) -> TurnOutcome:
    """Play the AI `seat`'s move that event `after_seq` asked for, at most once.

    One read of the snapshot; nothing happens if the game is gone, has moved past
    `after_seq` (a stream retry or a duplicate record), is over, or it is not this AI
    seat's turn. Otherwise the seat's brain (built for this turn, `make_brain`) decides
    and one transaction commits; if another invocation committed first
    the store's condition fails and this one does nothing (`lost_race`).
    """
    start = time.perf_counter()

    def outcome(status: Any, reason: str = "", memory: str | None = None, **kw: Any) -> TurnOutcome:
        return TurnOutcome(
            game_id, seat, status, reason, seconds=time.perf_counter() - start, memory=memory, **kw
        )

    try:
        snapshot = store.load(game_id)
    except NotFound:
        return outcome("gone", "no such game (or it expired)")
    state = snapshot.state
    if state.seq != after_seq:
        return outcome("skipped", f"the game is at seq {state.seq}, not {after_seq}")
    if state.over:
        return outcome("skipped", "the game is over")
    if next_ai(snapshot) != seat:
        return outcome("skipped", f"not the {seat} AI's turn (phase {state.phase})")
    if deadline_s is not None and deadline_s < DEADLINE_FLOOR_S:
        raise DeadlineTooShort(f"{deadline_s:.2f} s left; the turn is left for a retry")
    brain_settings = dict(settings or {})
    if deadline_s is not None:
        brain_settings["deadline_s"] = deadline_s
    made = make_brain(store, snapshot, seat, settings=brain_settings, counts=counts)
    move = decide(made.brain, state, seat)
    note = note_of(made.brain, seat, snapshot.seats[seat].brain or "", state.turn, move)
    try:
        new_state, event = engine.apply(state, move)
    except IllegalAction as exc:  # a buggy brain must not stall the game
        log.error("the %s brain %s chose an illegal move: %s", seat, made.brain, exc)
        move = fallback_move(state, seat)
        new_state, event = engine.apply(state, move)
        note = refused(note, move)
    point = belief_point(made.brain, seat, state.turn)
    beliefs: dict[str, bytes] = {}
    if made.pin is not None and ECHO_KEY not in snapshot.beliefs:
        beliefs[ECHO_KEY] = made.pin
    after = snapshot.advanced(new_state, beliefs=beliefs, belief_point=point)
    try:
        store.commit_turn(snapshot.version, after, event, note)
    except Conflict as exc:
        if exc.reason == "busy":
            raise  # a transaction was in flight: let the stream retry, it will skip
        return outcome("lost_race", exc.message, made.memory, replaced=made.replaced)
    return outcome(
        "played",
        memory=made.memory,
        replaced=made.replaced,
        seq=event.seq,
        version=after.version,
        action=move.model_dump(mode="json"),
    )


def pending_ai(store: GameStore, game_id: str) -> TurnRequest | None:
    """The AI turn the game waits for now (the `next_ai` its last event carries)."""
    snapshot = store.load(game_id)
    seat = next_ai(snapshot)
    if seat is None:
        return None
    return TurnRequest(game_id=game_id, seq=snapshot.state.seq, seat=seat)


__all__ = [
    "COPIED",
    "ECHO_KEY",
    "PIN_UNREADABLE",
    "WARM_GAMES",
    "MadeBrain",
    "MemoryRead",
    "against_opponent",
    "apply_memory",
    "belief_point",
    "build_seat_brain",
    "copy_memory",
    "decide",
    "dispatch",
    "fallback_move",
    "make_brain",
    "memory_planner",
    "note_of",
    "pending_ai",
    "play_ai_turn",
    "read_memory",
]


def dispatch(
    store: GameStore,
    game_id: str,
    *,
    max_turns: int = 1000,
    settings: Mapping[str, Any] | None = None,
    counts: Counter[str] | None = None,
) -> list[TurnOutcome]:
    """Run pending AI turns in process until a person must move or the game ends.

    The local stand-in for the stream: each step is exactly what a turn Lambda does for
    the record of the last event (`play_ai_turn` with that event's seq).
    """
    outcomes: list[TurnOutcome] = []
    for _ in range(max_turns):
        request = pending_ai(store, game_id)
        if request is None:
            break
        result = play_ai_turn(
            store, game_id, request.seat, request.seq, settings=settings, counts=counts
        )
        outcomes.append(result)
        if result.status != "played":
            break
    return outcomes
