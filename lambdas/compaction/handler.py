"""The compaction Lambda: the events table's stream, one end-of-game record per game.

Thin on purpose: Powertools' `BatchProcessor` walks the DynamoDB stream records and reports
the failed ones (`batchItemFailures`, with `ReportBatchItemFailures` on the event source
mapping); the work per game is `horcrux.compaction.compact` (read the log, check the snapshot
against the replay, repair it on a mismatch, write the record where the next game's start
reads it). docs/COMPACTION.md has the record, the keys and the stream filter.

Which records do work: an `INSERT` whose NewImage carries `winner` (the event that ends a
game). Everything else (a non-final event, a MODIFY, a TTL `REMOVE`) succeeds doing nothing:
the belief history is kept on the snapshot, bounded, by the turn Lambdas, so there is
nothing to maintain per event. The record handler itself is
`horcrux.compaction_records.compaction_record_handler`: `horcrux serve` delivers a local
game's final event to the same function. The CDK's filter keeps those records away anyway:

    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"winner": {"S": [{"exists": true}]}}}}

Collaborators are injectable: `make_handler(store, metrics, settings=...)` builds a handler;
the module's `handler` uses a `DynamoDbStore` built on first use (tests replace `set_store`).
The environment is read once, at cold start (`horcrux.settings.compaction_settings`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.compaction_records import (
    SERVICE,
    MetricSink,
    compaction_record_handler,
    final_event,
    logger,
)
from horcrux.settings import CompactionSettings, compaction_settings
from horcrux.store.port import ResultStore

SETTINGS = compaction_settings()  # the environment, read once (a bad value fails the init)
NAMESPACE = SETTINGS.metrics_namespace
Handler = Callable[[dict[str, Any], LambdaContext | None], PartialItemFailureResponse]
AnyMetrics = Metrics | EphemeralMetrics | MetricSink

_store: ResultStore | None = None


def default_store() -> ResultStore:
    """The module's store, built on first use (so importing the handler touches no AWS)."""
    global _store  # noqa: PLW0603
    if _store is None:
        from horcrux.store import DynamoDbStore

        _store = DynamoDbStore.from_settings(SETTINGS.store)
    return _store


def set_store(store: ResultStore | None) -> None:
    """Replace the module's store (tests); None: build a DynamoDbStore again on next use."""
    global _store  # noqa: PLW0603
    _store = store


def make_handler(
    store: ResultStore | Callable[[], ResultStore] | None = None,
    metrics: AnyMetrics | None = None,
    *,
    keep: int | None = None,
    settings: CompactionSettings | None = None,
) -> Handler:
    """A Lambda handler over `store` (or a factory of it; None: the module's default).

    `keep` (default: the settings' `results_keep`, `HORCRUX_RESULTS_KEEP`) bounds a
    scope's recent results; `settings` default to the module's, read at cold start."""
    config = settings or SETTINGS
    bound = keep if keep else config.results_keep
    sink: Any = (
        metrics
        if metrics is not None
        else Metrics(namespace=config.metrics_namespace, service=SERVICE)
    )

    def get_store() -> ResultStore:
        if store is None:
            return default_store()
        if isinstance(store, ResultStore):
            return store
        return store()

    record_handler = compaction_record_handler(get_store, sink, keep=bound)

    def handler(event: dict[str, Any], context: LambdaContext | None) -> PartialItemFailureResponse:
        processor = BatchProcessor(
            event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
        )
        try:
            response = process_partial_response(
                event=event, record_handler=record_handler, processor=processor, context=context
            )
            failed = len(response["batchItemFailures"])
            sink.add_metric(name="RecordsFailed", unit=MetricUnit.Count, value=failed)
            return response
        finally:
            sink.add_metric(
                name="StreamRecords", unit=MetricUnit.Count, value=len(event.get("Records", []))
            )
            sink.flush_metrics()

    return handler


handler = make_handler()

__all__ = ["default_store", "final_event", "handler", "logger", "make_handler", "set_store"]
