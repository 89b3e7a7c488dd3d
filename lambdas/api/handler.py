"""The HTTP API Lambda (API Gateway HTTP API, payload v2): `app.resolve(event, context)`.

Needs only the layer (`horcrux` + its requirements) and boto3. Environment:
HORCRUX_GAMES_TABLE, HORCRUX_EVENTS_TABLE, HORCRUX_IDEMPOTENCY_TABLE (Powertools
idempotency, TTL attribute `expiration`), POWERTOOLS_* as usual.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api import IdempotentMoves, build_app
from horcrux.secrets import load_anthropic_key
from horcrux.service import GameService
from horcrux.store import DynamoDbStore

logger = Logger(service="horcrux-api")
metrics = Metrics(namespace="HorcruxHunt", service="horcrux-api")

store = DynamoDbStore()  # the boto3 client is created at the first call, not here


def _idempotency_layer() -> DynamoDBPersistenceLayer:
    table = os.environ.get("HORCRUX_IDEMPOTENCY_TABLE", "horcrux-idempotency")
    local = store.client if store.settings.endpoint_url else None  # DynamoDB Local / moto
    return DynamoDBPersistenceLayer(table_name=table, boto3_client=local)


app = build_app(GameService(store), idempotency=IdempotentMoves(_idempotency_layer))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    load_anthropic_key()  # an LLM seat is refused (422) without a key
    response = app.resolve(event, context)
    status = int(response.get("statusCode", 500))
    metrics.add_metric(name=f"Http{status // 100}xx", unit=MetricUnit.Count, value=1)
    return response
