"""The database down, too slow, or empty: `StoreUnavailable`, a 503 with `Retry-After`, and
nothing half written. Real boto3 against endpoints that refuse, that never answer, and
moto without the tables; the handler of lambdas/api/handler.py over them."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from api_fixtures import FakeContext, api_event, load_handler, moto_tables
from conftest import set_aws_env

from horcrux.api.idempotency import _unavailable_cause
from horcrux.settings import StoreSettings, store_settings
from horcrux.store import DynamoDbStore, StoreUnavailable
from horcrux.store.budget import request_budget
from horcrux.store.dynamodb_client import client_config, unavailable_error

pytestmark = pytest.mark.moto


@pytest.fixture
def refused_port() -> int:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A local port that accepts connections (the kernel's backlog) and never answers: a
    frozen database."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


def _store(port: int, **kw: Any) -> tuple[DynamoDbStore, list[str]]:
    """A store on a local port, and the list of HTTP attempts its client sends."""
    update = {"endpoint_url": f"http://127.0.0.1:{port}", "region": "eu-west-1", **kw}
    settings = store_settings().model_copy(update=update)
    store = DynamoDbStore(settings)
    attempts: list[str] = []
    store.client.meta.events.register(
        "before-send.dynamodb", lambda request, **_: attempts.append(request.url)
    )
    return store, attempts


def test_a_database_that_refuses_connections_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, refused_port: int
) -> None:
    set_aws_env(monkeypatch)
    store, attempts = _store(refused_port, max_attempts=2)
    with pytest.raises(StoreUnavailable) as caught:
        store.load("g1")
    assert caught.value.reason == "unreachable"
    assert caught.value.code == "store_unavailable"
    assert "GetItem" in caught.value.message
    # the client retried a bounded number of times, then gave up
    assert len(attempts) == 2


def test_a_frozen_database_times_out_after_bounded_attempts(
    monkeypatch: pytest.MonkeyPatch, silent_port: int
) -> None:
    set_aws_env(monkeypatch)
    store, attempts = _store(silent_port, read_timeout_s=0.2, connect_timeout_s=0.2, max_attempts=2)
    with pytest.raises(StoreUnavailable) as caught:
        store.events("g1")
    assert caught.value.reason == "timeout"
    assert len(attempts) == 2


def test_a_request_budget_bounds_every_call_to_a_frozen_database(
    monkeypatch: pytest.MonkeyPatch, silent_port: int
) -> None:
    """Three attempts a call, 0.2 s each, but a request budget of 0.5 s: the first call
    makes two attempts (a third would not fit), the next is refused unsent, and the
    whole request is over within its budget."""
    set_aws_env(monkeypatch)
    store, attempts = _store(silent_port, read_timeout_s=0.2, connect_timeout_s=0.2, max_attempts=3)
    started = time.monotonic()
    with request_budget(0.5):
        with pytest.raises(StoreUnavailable) as first:
            store.load("g1")
        assert first.value.reason == "timeout"
        assert len(attempts) == 2
        with pytest.raises(StoreUnavailable) as second:
            store.events("g1")
    elapsed = time.monotonic() - started
    assert second.value.reason == "timeout" and "not sent" in second.value.message
    assert len(attempts) == 2
    assert 0.4 <= elapsed < 0.6
    # outside the request the budget is gone: a call makes its own attempts again
    attempts.clear()
    with pytest.raises(StoreUnavailable):
        store.load("g1")
    assert len(attempts) == 3


def test_missing_tables_are_unavailable_not_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = moto_tables(monkeypatch)
    store = next(gen)
    try:
        store.client.delete_table(TableName=store.settings.games_table)
        with pytest.raises(StoreUnavailable) as caught:
            store.load("g1")
        assert caught.value.reason == "tables_missing"
        assert caught.value.retry_after_s == 5
        # the events table is still there: its reads work (an unknown game, no events)
        assert list(store.events("nope").events) == []
    finally:
        gen.close()


def test_only_outages_are_classified_as_unavailable() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    def client_error(code: str) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": "x"}}, "GetItem")

    assert unavailable_error(EndpointConnectionError(endpoint_url="http://x")) is not None
    timeout = unavailable_error(ReadTimeoutError(endpoint_url="http://x"))
    assert timeout is not None and timeout.reason == "timeout"
    server = unavailable_error(client_error("InternalServerError"))
    assert server is not None and server.reason == "server_error"
    for callers in (
        "ConditionalCheckFailedException",
        "ValidationException",
        "TransactionCanceledException",
        "ThrottlingException",  # the API answers 429 throttled for these
        "ProvisionedThroughputExceededException",
    ):
        assert unavailable_error(client_error(callers)) is None
    assert unavailable_error(ValueError("a bug")) is None


def test_the_client_config_has_short_timeouts_and_bounded_retries() -> None:
    config = client_config(StoreSettings(connect_timeout_s=0.5, read_timeout_s=1.5, max_attempts=4))
    assert config.connect_timeout == 0.5
    assert config.read_timeout == 1.5
    # one attempt per botocore call: the store retries itself, within the request's budget
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}
    # the settings read the environment once, naming a bad value
    env = {
        "HORCRUX_DYNAMODB_CONNECT_TIMEOUT_S": "0.25",
        "HORCRUX_DYNAMODB_READ_TIMEOUT_S": "3",
        "HORCRUX_DYNAMODB_MAX_ATTEMPTS": "5",
    }
    dynamo = StoreSettings.from_env(env)
    assert (dynamo.connect_timeout_s, dynamo.read_timeout_s, dynamo.max_attempts) == (
        0.25,
        3.0,
        5,
    )
    from horcrux.settings import SettingsError

    with pytest.raises(SettingsError, match="HORCRUX_DYNAMODB_MAX_ATTEMPTS"):
        StoreSettings.from_env({"HORCRUX_DYNAMODB_MAX_ATTEMPTS": "0"})


def test_a_persistence_layer_outage_is_unavailable() -> None:
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyPersistenceLayerError,
    )
    from botocore.exceptions import EndpointConnectionError

    cause = EndpointConnectionError(endpoint_url="http://x")
    try:
        try:
            raise cause
        except EndpointConnectionError as exc:
            raise IdempotencyPersistenceLayerError("Failed to get record", exc) from exc
    except IdempotencyPersistenceLayerError as wrapped:
        found = _unavailable_cause(wrapped)
    assert found is not None and found.reason == "unreachable"
    plain = IdempotencyPersistenceLayerError("something else")
    assert _unavailable_cause(plain) is None


# ---------------------------------------------------------------- through the API handler
def _body(response: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(response["body"])
    return body


@pytest.fixture
def down_handler(monkeypatch: pytest.MonkeyPatch, refused_port: int) -> Any:
    """The API handler over a DynamoDB endpoint that refuses every connection."""
    set_aws_env(monkeypatch)
    monkeypatch.setenv("HORCRUX_DYNAMODB_ENDPOINT", f"http://127.0.0.1:{refused_port}")
    monkeypatch.setenv("HORCRUX_DYNAMODB_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    return load_handler("api")


CREATE = {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/games/g1", None),
        ("GET", "/games", None),
        ("GET", "/games/g1/events", None),
        ("POST", "/games", CREATE),
        ("POST", "/games/g1/seats/voldemort", None),
    ],
)
def test_every_route_answers_503_with_retry_after_while_the_database_is_down(
    down_handler: Any, method: str, path: str, body: Any
) -> None:
    response = down_handler.lambda_handler(api_event(method, path, body=body), FakeContext())
    assert response["statusCode"] == 503, response
    headers = {k.lower(): v for k, v in response["headers"].items()}
    assert headers["retry-after"] == "1"
    payload = _body(response)
    assert payload["error"] == "store_unavailable"
    assert payload["reason"] == "unreachable"
    assert "retry" in payload["message"]


@pytest.mark.parametrize("key", [None, "k1"])
def test_a_move_answers_503_while_the_database_is_down(down_handler: Any, key: str | None) -> None:
    event = api_event(
        "POST",
        "/games/g1/moves",
        body={"type": "search", "location": "azkaban"},
        token="t",
        headers={"idempotency-key": key} if key else None,
    )
    response = down_handler.lambda_handler(event, FakeContext())
    assert response["statusCode"] == 503, response
    assert _body(response)["error"] == "store_unavailable"
