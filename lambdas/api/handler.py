"""The HTTP API Lambda (API Gateway HTTP API, payload v2): `app.resolve(event, context)`.

Needs only the layer (`horcrux` + its requirements) and boto3. The environment is read
ONCE, here, at cold start (`horcrux.settings.api_settings`: tables, TTL, idempotency table,
operator token, Anthropic secret; a bad value fails the init naming the variable) and the
settings are injected into the store, the service and the app; POWERTOOLS_* as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api import IdempotentMoves, build_app
from horcrux.secrets import AnthropicKey
from horcrux.service import GameService
from horcrux.settings import api_settings
from horcrux.store import DynamoDbStore

settings = api_settings()  # the environment, read once
logger = Logger(service="horcrux-api")
metrics = Metrics(namespace="HorcruxHunt", service="horcrux-api")

store = DynamoDbStore.from_settings(settings.store)  # the boto3 client is created at first use
anthropic_key = AnthropicKey(settings.secret)  # an LLM seat is refused (422) without a key


if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer


def _idempotency_layer() -> DynamoDBPersistenceLayer:
    # Powertools' idempotency imports boto3 (~90 ms): at the first keyed move, not cold start
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from horcrux.store.dynamodb_client import client_config

    local = store.client if store.settings.endpoint_url else None  # DynamoDB Local / moto
    return DynamoDBPersistenceLayer(
        table_name=settings.idempotency_table,
        boto3_client=local,
        boto_config=None if local else client_config(store.settings),  # timeouts, retries
    )


service = GameService(
    store,
    ttl_seconds=settings.store.ttl_seconds,
    brain_settings=lambda: settings.brains.values(anthropic_key()),
)
app = build_app(
    service,
    idempotency=IdempotentMoves(_idempotency_layer),
    operator=settings.operator,
    database_budget_s=settings.store.request_budget_s,
)


def _count_status(response: dict[str, Any]) -> None:
    status = int(response.get("statusCode", 500))
    metrics.add_metric(name=f"Http{status // 100}xx", unit=MetricUnit.Count, value=1)


app.on_response.append(_count_status)  # every response, the 413/400 guards' included


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
