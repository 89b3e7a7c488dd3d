"""DynamoDB for local play: an embedded moto server on 127.0.0.1, or the user's endpoint.

`start_dynamodb()` sets what boto3 needs in the environment (`AWS_ENDPOINT_URL_DYNAMODB`,
fake credentials, a region, the table names) and creates the games, events and
idempotency tables. If `AWS_ENDPOINT_URL_DYNAMODB` is already set (DynamoDB Local, a moto
server of your own), nothing is started and only missing tables are created. Nothing here
ever talks to AWS: the endpoint is always a local one.

Moto's TTL never deletes items (the store filters expired items on every read anyway).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
STORE_ENDPOINT_ENV = "HORCRUX_DYNAMODB_ENDPOINT"
DEFAULT_IDEMPOTENCY_TABLE = "horcrux-idempotency"

LOCAL_ENV: dict[str, str] = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "HORCRUX_EVENTS_TABLE": "horcrux-events",
    "HORCRUX_GAMES_TABLE": "horcrux-games",
    "HORCRUX_IDEMPOTENCY_TABLE": DEFAULT_IDEMPOTENCY_TABLE,
    # the Lambdas' Powertools logging and EMF metrics would flood a terminal
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_SERVICE_NAME": "horcrux-local",
}


@dataclass
class LocalDynamo:
    """The DynamoDB endpoint local play uses; `stop()` stops the embedded server, if any."""

    endpoint: str
    embedded: bool
    tables: list[str] = field(default_factory=list)
    _server: Any = None

    def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            if os.environ.get(ENDPOINT_ENV) == self.endpoint:
                del os.environ[ENDPOINT_ENV]


def local_environment(*, override_credentials: bool) -> None:
    """Defaults for a local run; credentials are replaced only for the embedded server
    (a user's own endpoint may want theirs)."""
    for name, value in LOCAL_ENV.items():
        if override_credentials and name.startswith("AWS_"):
            os.environ[name] = value
        else:
            os.environ.setdefault(name, value)
    if override_credentials:
        # nothing may reach AWS: no profile, no session, no Secrets Manager lookup
        for name in (
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_SECURITY_TOKEN",
            "HORCRUX_ANTHROPIC_SECRET_ARN",
        ):
            os.environ.pop(name, None)


def create_tables() -> list[str]:
    """The games and events tables (`DynamoDbStore.create_tables`) and the idempotency
    table (partition key `id`, TTL `expiration`), each only if missing."""
    from horcrux.store import DynamoDbStore

    store = DynamoDbStore()
    store.create_tables()
    client = store.client
    table = os.environ.get("HORCRUX_IDEMPOTENCY_TABLE", DEFAULT_IDEMPOTENCY_TABLE)
    if table not in client.list_tables().get("TableNames", []):
        client.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
        client.get_waiter("table_exists").wait(TableName=table)
        client.update_time_to_live(
            TableName=table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"},
        )
    return [store.settings.games_table, store.settings.events_table, table]


def start_dynamodb(host: str = "127.0.0.1", port: int = 0) -> LocalDynamo:
    """Start moto's DynamoDB on `host:port` (0: a free port) unless the user set
    `AWS_ENDPOINT_URL_DYNAMODB` (or the store's `HORCRUX_DYNAMODB_ENDPOINT`); then create
    the missing tables."""
    existing = os.environ.get(ENDPOINT_ENV) or os.environ.get(STORE_ENDPOINT_ENV)
    if existing:
        local_environment(override_credentials=False)
        os.environ.setdefault(ENDPOINT_ENV, existing)  # the idempotency layer's boto3 too
        return LocalDynamo(endpoint=existing, embedded=False, tables=create_tables())

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per DynamoDB call
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    endpoint = f"http://{bound_host}:{bound_port}"
    local_environment(override_credentials=True)
    os.environ[ENDPOINT_ENV] = endpoint
    try:
        tables = create_tables()
    except BaseException:
        server.stop()
        raise
    return LocalDynamo(endpoint=endpoint, embedded=True, tables=tables, _server=server)


__all__ = [
    "ENDPOINT_ENV",
    "STORE_ENDPOINT_ENV",
    "LocalDynamo",
    "create_tables",
    "local_environment",
    "start_dynamodb",
]
