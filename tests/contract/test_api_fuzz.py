"""Schemathesis against the API's own `/openapi.json`, through the real API Lambda handler
over moto DynamoDB (in process): no answer may be a 5xx, or break the document's response
schemas or status codes.

The handler is reached through a small WSGI app that turns each request into the API
Gateway HTTP API (v2) event API Gateway would send (body base64-encoded, as for binary
bodies), so Schemathesis sends real HTTP requests' parts: methods, paths, query strings,
headers and bodies. Bounded and reproducible: `MAX_EXAMPLES` cases per operation and
generation mode, derandomised (Hypothesis derives its seed from the test), no example
database. Per operation, positive cases (inside the schema) with generated ids and
tokens, positive cases against a real game with its real token, and negative cases
(outside the schema)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

import pytest
import schemathesis
from api_fixtures import FakeContext, load_handler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from horcrux.store import DynamoDbStore

pytestmark = [pytest.mark.moto, pytest.mark.slow]

MAX_EXAMPLES = 30
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
BUDGET_S = 60.0


def wsgi_app(handler: ModuleType) -> Callable[..., Iterable[bytes]]:
    """A WSGI app calling `handler.lambda_handler` with the API Gateway v2 event of each
    request (one value per query parameter, duplicates joined by commas, as API Gateway)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        query: dict[str, str] = {}
        for name, value in parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True):
            query[name] = f"{query[name]},{value}" if name in query else value
        path = environ.get("PATH_INFO") or "/"
        method = environ["REQUEST_METHOD"]
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": environ.get("QUERY_STRING", ""),
            "headers": headers,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "fuzz",
                "domainName": "fuzz.test",
                "http": {
                    "method": method,
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": headers.get("user-agent", ""),
                },
                "requestId": "fuzz",
                "routeKey": "$default",
                "stage": "$default",
                "time": "01/Jan/2026:00:00:00 +0000",
                "timeEpoch": 0,
            },
            "isBase64Encoded": bool(body),
        }
        if query:
            event["queryStringParameters"] = query
        if body:
            event["body"] = base64.b64encode(body).decode()
        response = handler.lambda_handler(event, FakeContext())
        raw = response.get("body") or ""
        out = base64.b64decode(raw) if response.get("isBase64Encoded") else str(raw).encode()
        status = int(response["statusCode"])
        start_response(
            f"{status} {'OK' if status < 400 else 'Error'}",
            [(str(k), str(v)) for k, v in (response.get("headers") or {}).items()],
        )
        return [out]

    return app


@pytest.fixture
def api_handler(dynamo: DynamoDbStore) -> ModuleType:
    return load_handler("api")


def _real_game(app: Callable[..., Iterable[bytes]]) -> tuple[str, str]:
    """A game against AI Voldemort created through the app: (id, Harry's token)."""
    from werkzeug.test import Client

    client = Client(app)
    seats = {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}
    reply = client.post("/games", json={"seats": seats, "rules": "classic", "seed": 5})
    assert reply.status_code == 201, reply.get_data(as_text=True)
    body = json.loads(reply.get_data(as_text=True))
    return str(body["game_id"]), str(body["token"])


def fuzz(
    label: str, strategy: st.SearchStrategy[Any], tried: dict[str, int], statuses: dict[int, int]
) -> None:
    """`MAX_EXAMPLES` cases of one operation, derandomised; the first failing check raises
    (Hypothesis shrinks it and reports the smallest case)."""

    @given(case=strategy)
    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        response = case.call()
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        tried[label] = tried.get(label, 0) + 1
        case.validate_response(response, checks=CHECKS)

    run()


def test_no_operation_answers_a_5xx_or_breaks_its_schema(
    api_handler: ModuleType, dynamo: DynamoDbStore
) -> None:
    app = wsgi_app(api_handler)
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    game_id, token = _real_game(app)
    operations = [result.ok() for result in schema.get_all_operations()]
    # GET /brains is the 11th; the operator's memory routes (docs/ECHO.md) are 13 in all;
    # a player's own memory (GET and DELETE /players/{player}/memory) 2 more
    assert len(operations) == 22, [op.label for op in operations]
    started = time.monotonic()
    tried: dict[str, int] = {}
    statuses: dict[int, int] = {}

    for operation in operations:
        known: dict[str, Any] = {}
        if "{game_id}" in operation.path:
            known["path_parameters"] = {"game_id": game_id}
        auth = {"Authorization": f"Bearer {token}"}
        strategy = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE),
            operation.as_strategy(GenerationMode.POSITIVE, headers=auth, **known),
            operation.as_strategy(GenerationMode.NEGATIVE),
        )

        fuzz(operation.label, strategy, tried, statuses)

    seconds = time.monotonic() - started
    cases = sum(tried.values())
    print(f"fuzzed {cases} cases in {seconds:.1f} s; statuses {sorted(statuses.items())}")
    # an operation without parameters or body (GET /brains) has one distinct case only
    fixed = {
        op.label
        for op in operations
        if op.method.upper() == "GET" and "{" not in op.path and not list(op.query)
    }
    assert fixed == {"GET /brains"}, fixed
    assert all(n >= (1 if label in fixed else MAX_EXAMPLES // 2) for label, n in tried.items()), (
        tried
    )
    assert not [s for s in statuses if s >= 500], statuses
    assert seconds < BUDGET_S * 2, seconds
