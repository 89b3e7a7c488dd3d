"""The compaction Lambda's record handler: one DynamoDB stream record -> one `compact` call.

Shared by `lambdas/compaction/handler.py` (the stream in AWS) and `horcrux serve`'s
stand-in (`horcrux_tools.local.ai_turns`), so a local game's end runs exactly the function the
Lambda runs. Which records do work: an `INSERT` whose NewImage carries `winner` (the event
that ends a game); everything else succeeds doing nothing. The event source mapping's
filter (`FINAL_EVENT_FILTER`, the same as `infra/names.py`'s) keeps the rest away anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Final, Protocol

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from horcrux.compaction import compact
from horcrux.store.mapping import game_id_of
from horcrux.store.port import ResultStore

SERVICE = "compaction"
FINAL_EVENT_FILTER: Final[dict[str, Any]] = {
    "eventName": ["INSERT"],
    "dynamodb": {"NewImage": {"winner": {"S": [{"exists": True}]}}},
}
"""The compaction's event filter (CDK FilterCriteria): INSERTs of a final event only."""

logger = Logger(service=SERVICE)


class MetricSink(Protocol):
    """What the record handler emits metrics to (Powertools `Metrics`, or a counter)."""

    def add_metric(self, name: str, unit: Any, value: float, **kwargs: Any) -> None: ...


class CountingMetrics:
    """A `MetricSink` that counts (the local server's; it prints nothing)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add_metric(self, name: str, unit: Any, value: float, **kwargs: Any) -> None:
        self.counts[name] += int(value)


def final_event(record: DynamoDBRecord) -> tuple[str, int] | None:
    """(game id, seq) of a record that ends a game; None for a record with nothing to do.

    Raises ValueError on a malformed record (reported as a failed batch item)."""
    if record.event_name != DynamoDBRecordEventName.INSERT:
        return None
    stream = record.dynamodb
    image = stream.new_image if stream is not None else {}
    if not image:
        raise ValueError("an INSERT without a NewImage: the stream must be NEW_IMAGE")
    if "winner" not in image:
        return None
    try:
        return game_id_of(str(image["pk"])), int(image["seq"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed event image: {exc!r}") from exc


def compaction_record_handler(
    get_store: Callable[[], ResultStore], sink: MetricSink, *, keep: int
) -> Callable[[DynamoDBRecord], str]:
    """The Powertools `BatchProcessor` record handler of the compaction Lambda.

    It raises (the record is a batch item failure, retried) when the game cannot be
    compacted yet; a record that ends no game succeeds doing nothing."""

    def record_handler(record: DynamoDBRecord) -> str:
        try:
            final = final_event(record)
            if final is None:
                return "skipped"
            game_id, seq = final
            outcome = compact(get_store(), game_id, final_seq=seq, keep=keep)
        except Exception:
            logger.exception("compaction failed", extra={"event_id": record.event_id})
            raise
        if outcome.mismatch is not None:
            sink.add_metric(name="ReplayMismatch", unit=MetricUnit.Count, value=1)
            logger.warning(
                "snapshot differs from the replay of the events; repaired from the events",
                extra={"mismatch": outcome.mismatch.model_dump(mode="json")},
            )
        if outcome.written:
            sink.add_metric(name="ResultsWritten", unit=MetricUnit.Count, value=1)
        memory = outcome.memory
        if memory is not None:
            sink.add_metric(name="MemoryConsolidated", unit=MetricUnit.Count, value=1)
            if memory.leaked:  # the guard quarantined this game's writes for review
                sink.add_metric(name="MemoryLeakPrevented", unit=MetricUnit.Count, value=1)
                logger.warning(
                    "a consolidation would drop too much memory; its drops are quarantined",
                    extra={"game_id": game_id, "dropped_share": memory.dropped_share},
                )
            if memory.evicted:
                sink.add_metric(
                    name="MemoryEvicted", unit=MetricUnit.Count, value=sum(memory.evicted.values())
                )
                logger.warning(
                    "the memory cap evicted items",
                    extra={"game_id": game_id, "evicted": dict(memory.evicted)},
                )
            if memory.conflicts:
                sink.add_metric(
                    name="MemoryCorrectionConflict",
                    unit=MetricUnit.Count,
                    value=len(memory.conflicts),
                )
                logger.warning(
                    "evidence contradicts an operator correction",
                    extra={"game_id": game_id, "corrections": list(memory.conflicts)},
                )
        logger.info(
            "game compacted",
            extra={
                "game_id": game_id,
                "winner": outcome.summary.winner,
                "written": outcome.written,
                "repaired": outcome.repaired,
            },
        )
        return "written" if outcome.written else "already-written"

    return record_handler


__all__ = [
    "FINAL_EVENT_FILTER",
    "SERVICE",
    "CountingMetrics",
    "MetricSink",
    "compaction_record_handler",
    "final_event",
]
