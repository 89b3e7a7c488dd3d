"""The stream consumers: the two AI turn functions and the compaction.

Each is an event-source mapping on the events table's stream (NEW_IMAGE) with a filter,
TRIM_HORIZON, batches of 10, partial batch responses (`ReportBatchItemFailures`), bisection on
error, bounded retries and an SQS on-failure destination of its own (docs/API.md,
docs/COMPACTION.md):

- `harry_turn` / `voldemort_turn`: INSERTs whose NewImage has `next_ai` = the seat
  (`horcrux.api.stream_handler.filter_pattern`, the same function the handlers are tested with); an
  opt-in reserved concurrency (`-c horcrux:turnReservedConcurrency=N`, none by default so a
  new account can deploy) caps what an AI seat (and its LLM bill) can take;
- `compaction`: INSERTs whose NewImage has `winner` (the event that ends a game).

TTL deletions are REMOVE records: no filter lets them through.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from horcrux.api.stream_handler import filter_pattern
from infra import nag, names
from infra.functions import HorcruxFunction, pascal
from infra.names import FunctionSpec, Settings
from infra.storage import Storage


def table_environment(storage: Storage) -> dict[str, str]:
    return {
        names.ENV_EVENTS_TABLE: storage.events.table_name,
        names.ENV_GAMES_TABLE: storage.games.table_name,
    }


def grant_tables(fn: HorcruxFunction, storage: Storage) -> None:
    """Exactly `names.DYNAMO_ACTIONS[fn]` on the tables (and the lobby index) it names."""
    tables = storage.tables
    for target, actions in names.DYNAMO_ACTIONS[fn.spec.name].items():
        if target == "lobby":
            resource = f"{storage.games.table_arn}/index/{names.LOBBY_INDEX}"
        else:
            resource = tables[target].table_arn
        fn.grant_dynamodb(actions, [resource], sid=f"{pascal(target)}Table")


def dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """An on-failure destination: the metadata of the batches a consumer gave up on."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(names.DLQ_RETENTION_DAYS),
    )
    nag.acknowledge(queue, "AwsSolutions-SQS3")
    return queue


class StreamConsumers(Construct):
    """`harry_turn`, `voldemort_turn` and `compaction` on the events table's stream."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        storage: Storage,
        core_layer: lambda_.ILayerVersion,
        llm_layer: lambda_.ILayerVersion,
        secret: secretsmanager.ISecret,
    ) -> None:
        super().__init__(scope, construct_id)
        self.functions: dict[str, HorcruxFunction] = {}
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        reserved = settings.turn_reserved_concurrency or None
        for seat, spec in names.TURN_SEATS.items():
            fn = self._consumer(
                spec,
                settings=settings,
                storage=storage,
                layers=[core_layer, llm_layer],
                environment={names.ENV_SECRET: secret.secret_arn},
                reserved=reserved,
                pattern=filter_pattern(seat),  # type: ignore[arg-type]
                parallelization=names.TURN_PARALLELIZATION,
                max_record_age_s=names.TURN_MAX_RECORD_AGE_S,
            )
            secret.grant_read(fn.role)
        self._consumer(
            names.COMPACTION,
            settings=settings,
            storage=storage,
            layers=[core_layer],
            environment={},
            reserved=None,
            pattern=names.FINAL_EVENT_FILTER,
            parallelization=names.COMPACTION_PARALLELIZATION,
            max_record_age_s=names.COMPACTION_MAX_RECORD_AGE_S,
        )

    def _consumer(
        self,
        spec: FunctionSpec,
        *,
        settings: Settings,
        storage: Storage,
        layers: list[lambda_.ILayerVersion],
        environment: dict[str, str],
        reserved: int | None,
        pattern: dict[str, Any],
        parallelization: int,
        max_record_age_s: int,
    ) -> HorcruxFunction:
        stem = pascal(spec.name)
        fn = HorcruxFunction(
            self,
            stem,
            spec=spec,
            layers=layers,
            environment={**table_environment(storage), **environment},
            log_retention_days=settings.log_retention_days,
            reserved_concurrency=reserved if spec.reserved else None,
        )
        grant_tables(fn, storage)
        queue = dead_letter_queue(self, f"{stem}FailedRecords")
        fn.function.add_event_source(
            sources.DynamoEventSource(
                storage.events,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=names.STREAM_BATCH_SIZE,
                bisect_batch_on_error=True,
                retry_attempts=names.STREAM_RETRY_ATTEMPTS,
                max_record_age=Duration.seconds(max_record_age_s),
                on_failure=sources.SqsDlq(queue),
                report_batch_item_failures=True,
                parallelization_factor=parallelization,
                filters=[lambda_.FilterCriteria.filter(pattern)],
            )
        )
        self.functions[spec.name] = fn
        self.dead_letter_queues[spec.name] = queue
        return fn
