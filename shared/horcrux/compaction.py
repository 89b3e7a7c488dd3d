"""Compaction: from a finished game's log, the end-of-game record, and a check of the
snapshot against a replay of that log (docs/COMPACTION.md).

Pure logic over the store's port: `replay` re-runs the events through `horcrux.engine`
(checking that every stored event is exactly what the engine produces), `check_snapshot`
compares the replayed truth with the snapshot's, `repair` rebuilds the snapshot from the
replay, `summarise_game` builds the deterministic `GameSummary`, and `compact` does all of
it for one game against a `ResultStore` (what the compaction Lambda calls per final event).
Nothing here reads a clock or a random source: the same events give the same record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from horcrux import engine
from horcrux.errors import HorcruxError
from horcrux.models import (
    Attack,
    GameStarted,
    GameState,
    HarryMoved,
    Observation,
    PlantDecoy,
    Relocate,
    Seat,
    VoldemortMoved,
)
from horcrux.store.port import (
    AnyEvent,
    BeliefPoint,
    GameSnapshot,
    ResultStore,
    ScopeStore,
    SeatInfo,
    merge_history,
    read_log,
)
from horcrux.store.results import (
    RESULTS_MAX,
    BeliefSummary,
    DecoyRecord,
    GameSummary,
    RelocationRecord,
    opponent_of,
    seat_identity,
)

EVENTS_PAGE = 100
PLAYER_ID_CHARS = 16
"""A person's identity in a record is `player:` + this many hex digits of the token hash."""


class CompactionError(HorcruxError):
    """The log cannot be compacted: missing, incomplete, not over, or not what the engine
    produces from its own actions (a log is never repaired, only the snapshot is)."""

    code = "compaction_error"


class Mismatch(BaseModel):
    """The snapshot's state differs from the replay of the events."""

    model_config = ConfigDict(frozen=True)

    game_id: str
    snapshot_version: int
    snapshot_seq: int
    replayed_seq: int
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """One event and the true state right after it."""

    event: AnyEvent
    state: GameState


# ---------------------------------------------------------------- replay
def replay(events: Sequence[AnyEvent]) -> list[Step]:
    """Re-run the log from its `game_started` through the engine, checking each event.

    Raises CompactionError if the log does not start at seq 0 with `game_started`, has a
    gap, or holds an event the engine does not reproduce (observations, winner...)."""
    if not events:
        raise CompactionError("no events: the game's log is missing")
    started = events[0]
    if not isinstance(started, GameStarted) or started.seq != 0:
        raise CompactionError("the log does not start with game_started at seq 0")
    state, first = engine.new_game(started.rules, started.seed)
    if first != started:
        raise CompactionError("game_started does not match the placement its seed draws")
    steps = [Step(started, state)]
    for expected_seq, event in enumerate(events[1:], start=1):
        if isinstance(event, GameStarted) or event.seq != expected_seq:
            raise CompactionError(f"the log has a gap or a stray event at seq {expected_seq}")
        try:
            state, replayed = engine.apply(state, event.action)
        except HorcruxError as exc:
            raise CompactionError(f"event {event.seq} is illegal on replay: {exc}") from exc
        if replayed != event:
            raise CompactionError(f"event {event.seq} differs from the engine's replay")
        steps.append(Step(event, state))
    return steps


def read_events(store: ResultStore, game_id: str) -> list[AnyEvent]:
    """The whole log of one game, page by page (one Query per `EVENTS_PAGE` events)."""
    return read_log(store, game_id, page=EVENTS_PAGE)[0]


def full_belief_history(
    logged: Sequence[BeliefPoint], snapshot: GameSnapshot
) -> tuple[BeliefPoint, ...]:
    """Harry's whole belief history: the points the log carries, completed by the
    snapshot's (its latest; or the whole bounded history of a game stored before the
    history moved to the log)."""
    return merge_history(snapshot.belief_history, logged)


# ---------------------------------------------------------------- snapshot check / repair
def _diff(a: GameState, b: GameState) -> tuple[str, ...]:
    left, right = a.model_dump(mode="json"), b.model_dump(mode="json")
    return tuple(name for name in GameState.model_fields if left.get(name) != right.get(name))


def check_snapshot(events: Sequence[AnyEvent], snapshot: GameSnapshot) -> Mismatch | None:
    """Replay the events and compare the resulting state with the snapshot's (None: equal)."""
    replayed = replay(events)[-1].state
    fields = _diff(snapshot.state, replayed)
    if not fields:
        return None
    return Mismatch(
        game_id=snapshot.game_id,
        snapshot_version=snapshot.version,
        snapshot_seq=snapshot.state.seq,
        replayed_seq=replayed.seq,
        fields=fields,
    )


def repair(snapshot: GameSnapshot, events: Sequence[AnyEvent]) -> GameSnapshot:
    """The snapshot with its state rebuilt from the events, version + 1. Seats, beliefs,
    the belief history and the timestamps are kept: the log does not hold them."""
    replayed = replay(events)[-1].state
    return snapshot.model_copy(update={"state": replayed, "version": snapshot.version + 1})


# ---------------------------------------------------------------- the end-of-game record
def identity(info: SeatInfo) -> str:
    """An AI seat's brain spec; a person's `player:<id>`: their stable player id (chosen
    at create/join) or, without one, 16 hex digits of this game's token hash."""
    if info.kind == "human" and info.player is not None:
        return seat_identity(info.kind, info.brain, info.player)
    token = info.token_hash[:PLAYER_ID_CHARS] if info.token_hash else None
    return seat_identity(info.kind, info.brain, token)


def scope_of(seats: dict[Seat, SeatInfo]) -> tuple[str, str] | None:
    """(agent, opponent) of the recent results a game with these seats writes at its end,
    and so what an AI Harry with these seats reads at its start (None: Harry is a person).
    The start-up must use this, so that it reads exactly where the last end wrote."""
    harry, voldemort = seats["harry"], seats["voldemort"]
    if harry.kind != "ai":
        return None
    return identity(harry), opponent_of(voldemort.kind, identity(voldemort))


def _positive(obs: Observation) -> bool:
    """Evidence for something at the location: a positive search or Dumbledore's
    `horcrux` (a `decoy` reveal tells Harry it is a decoy, so it is no positive)."""
    return (obs.kind == "search" and obs.outcome == "positive") or obs.outcome == "horcrux"


def _top(point: BeliefPoint) -> str:
    """The most likely location of a point (the first on ties, as the points list them)."""
    return max(point.top, key=lambda lp: lp[1])[0]


def _belief_at(history: Sequence[BeliefPoint], turn: int) -> BeliefPoint | None:
    """Harry's latest belief point at or before `turn` (None: none recorded)."""
    points = [p for p in history if p.turn <= turn]
    return max(points, key=lambda p: p.turn) if points else None


def _belief_summary(
    history: Sequence[BeliefPoint], truth_after_harry: dict[int, GameState]
) -> BeliefSummary | None:
    if not history:
        return None
    hits = considered = 0
    for point in history:
        truth = truth_after_harry.get(point.turn)
        if truth is None or not point.top:
            continue
        considered += 1
        hits += _top(point) in truth.horcruxes
    return BeliefSummary(
        points=len(history),
        first_turn=history[0].turn,
        last_turn=history[-1].turn,
        entropy_first=round(history[0].entropy, 4),
        entropy_last=round(history[-1].entropy, 4),
        entropy_min=round(min(p.entropy for p in history), 4),
        top_hit_rate=round(hits / considered, 4) if considered else 0.0,
        final_top=tuple(loc for loc, _ in sorted(history[-1].top, key=lambda lp: -lp[1])),
    )


def summarise_game(
    events: Sequence[AnyEvent],
    *,
    game_id: str,
    seats: dict[Seat, SeatInfo],
    belief_history: Sequence[BeliefPoint] = (),
) -> GameSummary:
    """The end-of-game record of a finished game, from its events (replayed, so checked)
    and the truth, its seats, and Harry's belief history (the snapshot's, if any).

    Deterministic: no clock, no randomness; the same inputs give an equal summary (and
    byte-identical items)."""
    steps = replay(events)
    final = steps[-1].state
    if not final.over or final.winner is None:
        raise CompactionError(f"game {game_id} is not over at seq {final.seq}")
    history = sorted(belief_history, key=lambda p: p.turn)
    last_positive: dict[str, int] = {}
    truth_after_harry: dict[int, GameState] = {}
    relocations: list[RelocationRecord] = []
    decoys: list[DecoyRecord] = []
    standing: dict[str, int] = {}  # location -> index in `decoys` of the decoy there now
    attacks = {"destroyed": 0, "decoy": 0, "empty": 0}
    for step in steps[1:]:
        event = step.event
        if isinstance(event, HarryMoved):
            truth_after_harry[event.turn] = step.state
            for obs in event.observations:
                if _positive(obs):
                    last_positive[obs.location] = event.turn
            if isinstance(event.action, Attack):
                outcome = event.observations[0].outcome
                attacks[outcome] += 1
                if outcome == "decoy":
                    i = standing.pop(event.action.location)
                    decoys[i] = decoys[i].model_copy(update={"attacked_turn": event.turn})
        elif isinstance(event, VoldemortMoved):
            action = event.action
            if isinstance(action, Relocate):
                seen = last_positive.get(action.from_location)
                relocations.append(
                    RelocationRecord(
                        turn=event.turn,
                        from_location=action.from_location,
                        to_location=action.to_location,
                        turns_since_positive=None if seen is None else event.turn - seen,
                    )
                )
            elif isinstance(action, PlantDecoy):
                point = _belief_at(history, event.turn)
                standing[action.location] = len(decoys)
                decoys.append(
                    DecoyRecord(
                        turn=event.turn,
                        location=action.location,
                        at_harry_top=_top(point) == action.location
                        if point and point.top
                        else None,
                        attacked_turn=None,
                    )
                )
    from horcrux.echo.extract import decoy_placements  # ECHO's `plant_*`: one definition

    placed = decoy_placements(events)
    if len(placed) == len(decoys):
        decoys = [
            d.model_copy(update={"at_rule_top": p.rule_top, "at_blind_top": p.blind})
            for d, p in zip(decoys, placed, strict=True)
        ]
    harry, voldemort = seats["harry"], seats["voldemort"]
    return GameSummary(
        game_id=game_id,
        rules=final.rules.name,
        harry=identity(harry),
        voldemort=identity(voldemort),
        harry_kind=harry.kind,
        voldemort_kind=voldemort.kind,
        winner=final.winner,
        end_reason=final.end_reason or "",
        turns=final.turn,
        last_seq=final.seq,
        destroyed=final.destroyed,
        attacks_used=sum(attacks.values()),
        attacks_wasted_decoy=attacks["decoy"],
        attacks_wasted_empty=attacks["empty"],
        relocations=tuple(relocations),
        decoys=tuple(decoys),
        belief=_belief_summary(history, truth_after_harry),
    )


# ---------------------------------------------------------------- one game, end to end
@dataclass(frozen=True)
class CompactionOutcome:
    summary: GameSummary
    mismatch: Mismatch | None
    repaired: bool
    written: bool
    """False when the record was already stored (a retry): nothing new was written."""
    memory: Any = None
    """The ECHO consolidation of this game (`horcrux.echo.lifecycle.Consolidation`), or None
    (a person's Harry, a store without scope items, or already consolidated)."""


def compact(
    store: ResultStore, game_id: str, *, final_seq: int | None = None, keep: int = RESULTS_MAX
) -> CompactionOutcome:
    """Compact one finished game: read its log, check the snapshot against the replay and
    repair it on a mismatch, then write the end-of-game record (idempotent).

    `final_seq` is the seq of the event that ended the game (the stream record's); the log
    read must reach it. Raises CompactionError / NotFound / Conflict: the caller reports the
    record as failed and the stream retries it."""
    events, logged = read_log(store, game_id, page=EVENTS_PAGE)
    if not events:
        raise CompactionError(f"game {game_id} has no events")
    if final_seq is not None and events[-1].seq < final_seq:
        raise CompactionError(
            f"game {game_id}: the log ends at seq {events[-1].seq}, before {final_seq}"
        )
    snapshot = store.load(game_id)
    mismatch = check_snapshot(events, snapshot)
    repaired = False
    if mismatch is not None:
        store.repair_snapshot(snapshot.version, repair(snapshot, events))
        repaired = True
    history = full_belief_history(logged, snapshot)
    summary = summarise_game(events, game_id=game_id, seats=snapshot.seats, belief_history=history)
    written = store.put_result(summary, belief_history=history, keep=keep)
    memory = None
    if isinstance(store, ScopeStore):
        # ECHO: consolidate into the scope's memory right after its recent results, so
        # the next game's start reads what this end wrote (docs/ECHO.md). Also on a retry
        # (`written` False): the memory is idempotent per game and may be what failed.
        from horcrux.echo.persist import remember

        memory = remember(  # the hours clock, if configured: the game's creation time
            store,
            summary,
            events=events,
            hours=snapshot.created_at / 3600.0,
        )
    return CompactionOutcome(
        summary=summary, mismatch=mismatch, repaired=repaired, written=written, memory=memory
    )
