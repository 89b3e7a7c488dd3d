"""The Harry AI-turn Lambda: a DynamoDB-stream consumer of the events table.

Subscribed with the filter `horcrux.api.turns.filter_pattern("harry")`: only event items
carrying `next_ai = "harry"`. Each record plays at most one turn (`GameService.play_ai_turn`);
failures are reported per record (partial batch response) and retried by the stream.
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

from horcrux.api.turns import report_turn, turn_record_handler
from horcrux.secrets import AnthropicKey
from horcrux.service import GameService, TurnOutcome
from horcrux.settings import turn_settings
from horcrux.store import DynamoDbStore

settings = turn_settings("harry")  # the environment, read once (a bad value fails the init)

logger = Logger(service="horcrux-harry-turn")
metrics = Metrics(namespace="HorcruxHunt", service="horcrux-harry-turn")
# every failed record is reported (and retried) on its own, even if the whole batch fails
processor = BatchProcessor(
    event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
)
anthropic_key = AnthropicKey(settings.secret)  # the secret's key, cached; none: planner plays
service = GameService(  # the boto3 client is created at the first call
    DynamoDbStore.from_settings(settings.store),
    brain_settings=lambda: settings.brains.values(anthropic_key()),
)


MEMORY_METRICS = {
    "read": "MemoryRead",
    "rebuilt": "MemoryRebuilt",
    "error": "MemoryUnavailable",
    "pin-unreadable": "MemoryPinUnreadable",
}
"""Cross-game memory of an AI Harry's turn (docs/ECHO.md), one metric per turn that used
it: at the first turn a good read, a rebuild after the start-up check's mismatch (missing,
stale, schema, scope, unreadable), or memory unavailable (the game plays without it); at
any turn, a pin in the snapshot that does not decode (the turn plays without memory, the
pin is kept; alarmed)."""


def _report(outcome: TurnOutcome) -> None:
    report_turn(outcome, metrics, logger, MEMORY_METRICS)


record_handler = turn_record_handler(service, "harry", on_outcome=_report)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    records = len(event.get("Records", []))
    metrics.add_metric(name="StreamRecords", unit=MetricUnit.Count, value=records)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
