"""The AI-turn Lambda: a DynamoDB-stream consumer of the events table, for one seat.

Both turn functions (`harry_turn`, `voldemort_turn`) run this code; `HORCRUX_SEAT` (`harry`
or `voldemort`, set by the stack) says which seat this one plays, and so its Powertools
service and its memory metrics. Subscribed with the filter
`horcrux.api.stream_handler.filter_pattern(seat)`: only event items carrying `next_ai = seat`. Each
record plays at most one turn (`GameService.play_ai_turn`); failures are reported per
record (partial batch response) and retried by the stream.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api.stream_handler import report_turn, turn_record_handler
from horcrux.secrets import AnthropicKey
from horcrux.service import GameService, TurnOutcome
from horcrux.settings import SeatName, turn_seat, turn_settings
from horcrux.store import DynamoDbStore

SERVICES: dict[SeatName, str] = {
    "harry": "horcrux-harry-turn",
    "voldemort": "horcrux-voldemort-turn",
}
"""Powertools' `service` (the metrics' dimension, the logs') of each seat's function."""

MEMORY_METRICS: dict[SeatName, dict[str, str]] = {
    "harry": {
        "read": "MemoryRead",
        "rebuilt": "MemoryRebuilt",
        "error": "MemoryUnavailable",
        "pin-unreadable": "MemoryPinUnreadable",
    },
    "voldemort": {"copied": "MemoryCopied", "pin-unreadable": "MemoryPinUnreadable"},
}
"""Cross-game memory (docs/ECHO.md), one metric per turn that used it.

Harry: at the first turn a good read, a rebuild after the start-up check's mismatch
(missing, stale, schema, scope, unreadable), or memory unavailable (the game plays without
it); at any turn, a pin in the snapshot that does not decode (the turn plays without
memory, the pin is kept; alarmed). Voldemort running a copy of Harry's brain (`mirror`,
`ambush`): the copy adopted the memory pinned for Harry, or the pin does not decode (the
copy plays without memory, the pin is kept; alarmed)."""

seat = turn_seat()  # the environment, read once (a bad value fails the init)
settings = turn_settings(seat)

logger = Logger(service=SERVICES[seat])
metrics = Metrics(namespace="HorcruxHunt", service=SERVICES[seat])
# every failed record is reported (and retried) on its own, even if the whole batch fails
processor = BatchProcessor(
    event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
)
anthropic_key = AnthropicKey(settings.secret)  # the secret's key, cached; none: planner plays
service = GameService(  # the boto3 client is created at the first call
    DynamoDbStore.from_settings(settings.store),
    brain_settings=lambda: settings.brains.values(anthropic_key()),
)


def _report(outcome: TurnOutcome) -> None:
    report_turn(outcome, metrics, logger, MEMORY_METRICS[seat])


record_handler = turn_record_handler(service, seat, on_outcome=_report)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    records = len(event.get("Records", []))
    metrics.add_metric(name="StreamRecords", unit=MetricUnit.Count, value=records)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
