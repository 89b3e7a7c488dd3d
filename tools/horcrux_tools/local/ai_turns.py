"""The local stand-in for the stream-driven AI-turn Lambdas: a queue and a pool of workers.

The local stream (`stream.StreamTail`) queues a game for every committed event that asks
for an AI turn (`next_ai`) or ends the game (`winner`), as the stack's event source
mappings hand those records to the turn and compaction Lambdas. A worker takes it, builds
the stream record the event's INSERT would carry (`pk`, `seq`, `next_ai`: what
`mapping.next_ai` marks) and runs it through `process_partial_response` with the record
handler the turn Lambdas run (`horcrux.api.stream_handler.turn_record_handler` ->
`GameService.play_ai_turn`).

* One turn per queue visit, then the game goes to the back of the queue: games share the
  workers fairly, and a game is never in two workers at once (a game noticed while a
  worker plays it is queued again when that turn ends).
* The compaction stand-in: a game seen over (its final event, `winner`, from the stream)
  goes on the same queue; a worker builds the stream record of its final event
  (`pk`, `seq`, `winner`), checks it against the compaction Lambda's filter
  (`compaction_records.FINAL_EVENT_FILTER`) and runs it through `process_partial_response`
  with the compaction Lambda's record handler (`compaction_record_handler` ->
  `compaction.compact`, which writes the result and consolidates the memory). A failed
  compaction is retried like a failed turn; a compacted game is remembered, not done twice.
* A failed turn is never dropped (the stream retries a record until it succeeds or
  expires): the game is retried with capped exponential back-off (`max_backoff_s`) until
  the turn plays or the server stops, each failure logged and counted (`/healthz` shows
  the counts). While DynamoDB is down the game simply stays queued.
"""

from __future__ import annotations

import collections
import heapq
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from horcrux.models import Seat
from horcrux.service import GameService, TurnOutcome, TurnRequest
from horcrux.store.port import SEATS, NotFound

log = logging.getLogger(__name__)

TURN_TIMEOUT_S = 30.0
"""The turn functions' timeout in the CDK stack (zero-token brains)."""
WORKERS = 2
"""AI turns at once. The brains are CPU-bound Python sharing one interpreter with the
request threads: two keep an LLM's waits overlapped and the requests' p99 low (the soak:
last-thousand p99 105 ms with 2, 202 ms with 4, on 2 cores)."""
BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0


@dataclass
class FakeLambdaContext:
    """The LambdaContext attributes Powertools reads; the clock starts at creation."""

    function_name: str = "horcrux-local"
    timeout_s: float = TURN_TIMEOUT_S
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:horcrux-local"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/horcrux-local"
    log_stream_name: str = "local"
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        left = self.timeout_s - (time.monotonic() - self.started)
        return max(0, int(left * 1000))


def _insert_record(keys: dict[str, Any], image: dict[str, Any], region: str) -> dict[str, Any]:
    """A DynamoDB stream INSERT record (NEW_IMAGE, as Lambda receives it) of an event item."""
    return {
        "eventID": uuid.uuid4().hex,
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": {
            "ApproximateCreationDateTime": int(time.time()),
            "Keys": keys,
            "NewImage": {**keys, **image},
            "SequenceNumber": str(time.time_ns()),
            "SizeBytes": 100,
            "StreamViewType": "NEW_IMAGE",
        },
        "eventSourceARN": "arn:aws:dynamodb:local:000000000000:table/horcrux-events/stream/local",
    }


def stream_record(request: TurnRequest, *, region: str = "local") -> dict[str, Any]:
    """The stream record of the event item that asks for `request`'s AI turn: the
    attributes the turn handler reads."""
    keys = {"pk": {"S": f"GAME#{request.game_id}"}, "seq": {"N": str(request.seq)}}
    return _insert_record(keys, {"next_ai": {"S": request.seat}}, region)


def final_record(game_id: str, seq: int, winner: str, *, region: str = "local") -> dict[str, Any]:
    """The stream record of a game's final event: what the compaction Lambda's filter lets
    through (`winner` set on an INSERT)."""
    keys = {"pk": {"S": f"GAME#{game_id}"}, "seq": {"N": str(seq)}}
    return _insert_record(keys, {"winner": {"S": winner}}, region)


def _matches(value: Any, pattern: Any) -> bool:
    """Lambda's event filtering for the patterns of `turns.filter_pattern` (exact values)
    and of the compaction (`{"exists": true}`)."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            (_matches(value[key], inner) if key in value else _absent_ok(inner))
            for key, inner in pattern.items()
        )
    if isinstance(pattern, list):
        for option in pattern:
            if isinstance(option, dict) and "exists" in option:
                if option["exists"]:
                    return True  # the key is there (checked by the caller's mapping)
                continue
            if value == option:
                return True
        return False
    return bool(value == pattern)


def _absent_ok(pattern: Any) -> bool:
    """Whether a missing key satisfies `pattern` (only `{"exists": false}` does)."""
    return isinstance(pattern, list) and any(
        isinstance(o, dict) and o.get("exists") is False for o in pattern
    )


def waiting_for_ai(game: Mapping[str, Any]) -> bool:
    """True if a game payload (as the API renders it) shows an AI seat to move."""
    seat = game.get("to_move")
    seats = game.get("seats")
    if game.get("status") == "over" or seat not in SEATS or not isinstance(seats, Mapping):
        return False
    info = seats.get(seat)
    return isinstance(info, Mapping) and info.get("kind") == "ai"


class TurnFailed(Exception):
    """The record handler reported the record as a batch item failure; `code` is the
    domain code of what it raised (`store_unavailable` while the database is down)."""

    def __init__(self, message: str, code: str = "turn_failed") -> None:
        super().__init__(message)
        self.code = code


class _Worker:
    """One turn Lambda's execution environment: its own batch processor and handlers."""

    def __init__(
        self,
        service: GameService,
        timeout_s: float,
        compaction: Callable[[Any], str] | None = None,
    ) -> None:
        from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

        from horcrux.api.stream_handler import filter_pattern, turn_record_handler

        self.service = service
        self.timeout_s = timeout_s
        self.last: TurnOutcome | None = None
        self.outcomes: collections.deque[TurnOutcome] | None = None
        self._patterns = {seat: filter_pattern(seat) for seat in SEATS}
        self._handlers = {
            seat: turn_record_handler(service, seat, on_outcome=self._outcome) for seat in SEATS
        }
        self._processor = BatchProcessor(
            event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
        )
        self._compaction = compaction
        self.compacted: str | None = None
        """The game whose final event the last `step` compacted (None: none)."""

    def _outcome(self, outcome: TurnOutcome) -> None:
        self.last = outcome
        if self.outcomes is not None:
            self.outcomes.append(outcome)

    def step(self, game_id: str) -> bool:
        """Deliver the record of the game's pending AI turn, if any; True if one was played
        (the game may wait for its AI again). Raises if the turn failed."""
        from aws_lambda_powertools.utilities.batch import process_partial_response

        self.compacted = None
        try:
            request = self.service.pending_ai(game_id)
        except NotFound:
            return False
        if request is None:
            self._compact_if_over(game_id)
            return False
        record = stream_record(request)
        seat: Seat = request.seat
        if not _matches(record, self._patterns[seat]):  # pragma: no cover - a bug
            raise AssertionError(f"record does not match the {seat} filter: {record}")
        self.last = None
        context = FakeLambdaContext(function_name=f"horcrux-{seat}-turn", timeout_s=self.timeout_s)
        response = process_partial_response(
            event={"Records": [record]},
            record_handler=self._handlers[seat],
            processor=self._processor,
            context=context,  # type: ignore[arg-type]
        )
        self._raise_failures(response)
        return self._played()

    def _raise_failures(self, response: Mapping[str, Any]) -> None:
        if response.get("batchItemFailures"):
            causes = [info[1] for info in self._processor.exceptions if info[1] is not None]
            if not causes:
                raise TurnFailed("the record handler failed")
            cause = causes[0]
            code = str(getattr(cause, "code", type(cause).__name__))
            raise TurnFailed(f"{type(cause).__name__}: {cause}", code) from cause

    def _compact_if_over(self, game_id: str) -> None:
        """The compaction stand-in: deliver a finished game's final-event record to the
        compaction Lambda's record handler (raises if it failed: retried by the caller)."""
        from aws_lambda_powertools.utilities.batch import process_partial_response

        from horcrux.compaction_records import FINAL_EVENT_FILTER

        if self._compaction is None:
            return
        try:
            state = self.service.store.load(game_id).state
        except NotFound:
            return
        if not state.over or state.winner is None:
            return
        record = final_record(game_id, state.seq, state.winner)
        if not _matches(record, FINAL_EVENT_FILTER):  # pragma: no cover - a bug
            raise AssertionError(f"record does not match the compaction filter: {record}")
        context = FakeLambdaContext(function_name="horcrux-compaction", timeout_s=self.timeout_s)
        response = process_partial_response(
            event={"Records": [record]},
            record_handler=self._compaction,
            processor=self._processor,
            context=context,  # type: ignore[arg-type]
        )
        self._raise_failures(response)
        self.compacted = game_id

    def _played(self) -> bool:
        last = self.last
        return last is not None and last.status == "played"


class AiTurns:
    """The queue of games waiting for an AI turn, and `workers` threads playing them."""

    def __init__(
        self,
        service: GameService,
        *,
        workers: int = WORKERS,
        timeout_s: float = TURN_TIMEOUT_S,
        backoff_s: float = BACKOFF_S,
        max_backoff_s: float = MAX_BACKOFF_S,
        compaction: bool = True,
        results_keep: int | None = None,
    ) -> None:
        from horcrux.compaction_records import CountingMetrics, compaction_record_handler
        from horcrux.store.port import ResultStore
        from horcrux.store.results import RESULTS_MAX

        self.service = service
        self.metrics = CountingMetrics()
        """The compaction's metrics (`MemoryConsolidated`, `ResultsWritten`, ...), counted."""
        self.compacted: set[str] = set()
        """Games whose end was compacted (their result written, their memory consolidated)."""
        record_handler = (
            compaction_record_handler(
                lambda: service.store,  # type: ignore[arg-type,return-value]
                self.metrics,
                keep=results_keep or RESULTS_MAX,
            )
            if compaction and isinstance(getattr(service, "store", None), ResultStore)
            else None
        )
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.outcomes: collections.deque[TurnOutcome] = collections.deque(maxlen=1000)
        self.failures = 0
        """Failed turn attempts since the start (each one retried)."""
        self.played = 0
        self._queue: collections.deque[str] = collections.deque()
        self._queued: set[str] = set()
        self._running: set[str] = set()
        self._again: set[str] = set()
        self._delayed: list[tuple[float, str]] = []  # (when, game): back-off heap
        self._attempts: dict[str, int] = {}
        self._stopping = False
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        for number in range(max(1, workers)):
            worker = _Worker(service, timeout_s, record_handler)
            worker.outcomes = self.outcomes
            thread = threading.Thread(
                target=self._run, args=(worker,), name=f"horcrux-ai-{number}", daemon=True
            )
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------ the queue
    def enqueue(self, game_id: str) -> None:
        with self._cond:
            if self._stopping:
                return
            if game_id in self._running:
                self._again.add(game_id)  # after the running turn, never beside it
                return
            if game_id in self.compacted:
                return  # over and compacted: nothing left to do
            if game_id in self._queued or game_id in self._attempts:
                return  # already waiting (or backing off after a failure)
            self._queued.add(game_id)
            self._queue.append(game_id)
            self._cond.notify()

    def pending(self) -> int:
        """Games queued, backing off or being played."""
        with self._cond:
            return len(self._queued | self._running | set(self._attempts))

    def retrying(self) -> int:
        with self._cond:
            return len(self._attempts)

    def wait_idle(self, timeout_s: float = 30.0) -> bool:
        """Block until no game waits for an AI turn (or the timeout); True if idle."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._queue or self._running or self._delayed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop taking games; wait up to `timeout_s` for the turns in progress, then abandon
        them (daemon threads). Queued games are re-queued by their next read after a restart."""
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._queued.clear()
            self._delayed.clear()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------ the workers
    def _take(self) -> str | None:
        """The next game to play (None: stopping), waiting for one or for a back-off."""
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, game_id = heapq.heappop(self._delayed)
                    if game_id not in self._queued:
                        self._queued.add(game_id)
                        self._queue.append(game_id)
                if self._queue:
                    game_id = self._queue.popleft()
                    self._queued.discard(game_id)
                    self._running.add(game_id)
                    return game_id
                wait = self._delayed[0][0] - now if self._delayed else None
                self._cond.wait(wait)
            return None

    def _run(self, worker: _Worker) -> None:
        while (game_id := self._take()) is not None:
            again, failed = False, False
            try:
                again = worker.step(game_id)
            except Exception as exc:  # never dropped: retried after a back-off
                failed = True
                self._failed(game_id, exc)
            with self._cond:
                if worker.compacted is not None:
                    self.compacted.add(worker.compacted)
                self._running.discard(game_id)
                if not failed:
                    self._attempts.pop(game_id, None)
                    self.played += int(again)
                requeue = not failed and (again or game_id in self._again)
                self._again.discard(game_id)
                self._cond.notify_all()
            if requeue:
                self.enqueue(game_id)

    def _failed(self, game_id: str, exc: Exception) -> None:
        with self._cond:
            self.failures += 1
            attempt = self._attempts.get(game_id, 0) + 1
            self._attempts[game_id] = attempt
            delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
            if not self._stopping:
                heapq.heappush(self._delayed, (time.monotonic() + delay, game_id))
        code = getattr(exc, "code", type(exc).__name__)
        log.warning(
            "AI turn of game %s failed (attempt %d, %s: %s); retrying in %.2f s",
            game_id,
            attempt,
            code,
            exc,
            delay,
        )


__all__ = [
    "MAX_BACKOFF_S",
    "TURN_TIMEOUT_S",
    "WORKERS",
    "AiTurns",
    "FakeLambdaContext",
    "TurnFailed",
    "final_record",
    "stream_record",
    "waiting_for_ai",
]
