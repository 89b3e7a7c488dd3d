"""Fixtures and helpers for the API and turn-handler tests: moto tables, the Lambda handlers
loaded from lambdas/*/handler.py, API Gateway v2 events built from events/*.json, and a
pump that feeds the events table's (moto) stream to the AI-turn handlers."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import os
import pathlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from moto import mock_aws

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT / "shared") not in sys.path:  # the layer, as the Lambdas see it
    sys.path.insert(0, str(ROOT / "shared"))

from conftest import TEST_AWS_ENV, set_aws_env  # noqa: E402

from horcrux.store import DynamoDbStore, MemoryStore  # noqa: E402
from horcrux_tools.local.tables import create_tables  # noqa: E402
from horcrux_tools.local.wsgi import own_metric_set  # noqa: E402

EVENTS_DIR = ROOT / "events"
IDEMPOTENCY_TABLE = TEST_AWS_ENV["HORCRUX_IDEMPOTENCY_TABLE"]
_counter = itertools.count()


def create_idempotency_table(client: Any) -> None:
    client.create_table(
        TableName=IDEMPOTENCY_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )
    client.update_time_to_live(
        TableName=IDEMPOTENCY_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"},
    )


def moto_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoDbStore]:
    """mock_aws with the games, events (stream) and idempotency tables; a store to inspect.

    A generator for a test module's fixture: `yield from moto_tables(monkeypatch)`."""
    set_aws_env(monkeypatch)
    with mock_aws():
        store = DynamoDbStore()
        create_tables(store)
        create_idempotency_table(store.client)
        yield store


def memory_or_moto(
    kind: str, monkeypatch: pytest.MonkeyPatch, clock: Callable[[], float] = time.time
) -> Iterator[DynamoDbStore | MemoryStore]:
    """A store of either adapter on `clock`, with the test AWS environment set: a
    `MemoryStore` for `kind` "memory", else a `DynamoDbStore` over mock_aws's games and
    events tables.

    A generator for a fixture parametrized over both adapters (`params=["memory", "dynamodb"]`):
    `yield from memory_or_moto(request.param, monkeypatch)`."""
    set_aws_env(monkeypatch)
    if kind == "memory":
        yield MemoryStore(clock=clock)
        return
    with mock_aws():
        dynamo = DynamoDbStore(clock=clock)
        create_tables(dynamo)
        yield dynamo


TURN_FUNCTIONS = {"harry_turn": "harry", "voldemort_turn": "voldemort"}
"""The AI-turn functions: both run lambdas/ai_turn/handler.py, with HORCRUX_SEAT set to
their seat (infra/names.py)."""


def load_handler(name: str) -> ModuleType:
    """A fresh copy of function `name`'s handler (module state bound to the current mock):
    lambdas/<name>/handler.py, or for `harry_turn` / `voldemort_turn` lambdas/ai_turn/
    handler.py imported with HORCRUX_SEAT set as the stack sets it for that function."""
    seat = TURN_FUNCTIONS.get(name)
    path = ROOT / "lambdas" / ("ai_turn" if seat else name) / "handler.py"
    spec = importlib.util.spec_from_file_location(f"{name}_handler_{next(_counter)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.get("HORCRUX_SEAT")
    if seat is not None:
        os.environ["HORCRUX_SEAT"] = seat
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            os.environ.pop("HORCRUX_SEAT", None)
        else:
            os.environ["HORCRUX_SEAT"] = saved
    # a copy is an execution environment of its own: its own Powertools metric set (they
    # share class-level dicts, which two copies called from two threads would corrupt)
    own_metric_set(module)
    return module


@dataclass
class FakeContext:
    """The LambdaContext attributes Powertools reads."""

    function_name: str = "horcrux-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:horcrux-test"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/horcrux-test"
    log_stream_name: str = "2026/03/12/[$LATEST]0"
    remaining_ms: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return data


def api_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (v2) event, from events/api_get_game.json's shape."""
    event = copy.deepcopy(sample("api_get_game.json"))
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["headers"].pop("authorization", None)
    if token is not None:
        event["headers"]["authorization"] = f"Bearer {token}"
    event["headers"].update(headers or {})
    if query:
        event["queryStringParameters"] = dict(query)
        event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    else:
        event.pop("queryStringParameters", None)
        event["rawQueryString"] = ""
    if body is not None:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
        event["headers"]["content-type"] = "application/json"
    return event


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, Any]
    raw: str


@dataclass
class ApiClient:
    """Calls the API Lambda's handler; keeps every reply (for the hidden-state scans)."""

    handler: ModuleType
    context: FakeContext = field(default_factory=FakeContext)
    log: list[tuple[str | None, Reply]] = field(default_factory=list)

    def send(self, event: dict[str, Any], *, who: str | None = None) -> Reply:
        reply = as_reply(self.handler.lambda_handler(event, self.context))
        self.log.append((who, reply))
        return reply

    def call(self, method: str, path: str, *, who: str | None = None, **kw: Any) -> Reply:
        """`api_event(method, path, **kw)` sent to the handler (body, token, headers, query)."""
        return self.send(api_event(method, path, **kw), who=who)


def as_reply(response: dict[str, Any]) -> Reply:
    """An API Gateway proxy response (the handler's, or a resolver's) as a `Reply`."""
    raw = response.get("body") or ""
    return Reply(response["statusCode"], json.loads(raw) if raw else None, response["headers"], raw)


HUMANS = {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}, "seed": 3}
"""A game of two people (seed 3): `two_person_game`'s body."""


def two_person_game(api: ApiClient) -> tuple[str, str]:
    """A game of two people, Harry to move: its id and Harry's token."""
    created = api.call("POST", "/games", body=HUMANS)
    assert created.status == 201, created.body
    game_id = created.body["game_id"]
    joined = api.call("POST", f"/games/{game_id}/seats/voldemort")
    assert joined.status == 200, joined.body
    return game_id, created.body["token"]


# ---------------------------------------------------------------- the stream
def stream_matches(record: dict[str, Any], pattern: dict[str, Any]) -> bool:
    """Lambda's event filtering for the patterns we use (exact values, nested keys)."""

    def match(value: Any, pat: Any) -> bool:
        if isinstance(pat, dict):
            return isinstance(value, dict) and all(
                k in value and match(value[k], p) for k, p in pat.items()
            )
        return value in pat

    return match(record, pattern)


class StreamPump:
    """Reads the events table's moto stream and feeds each turn handler its filtered
    records, one batch per `pump()` round, until no new record asks for a turn."""

    def __init__(self, store: DynamoDbStore, handlers: dict[str, ModuleType]) -> None:
        import boto3

        from horcrux.api.stream_handler import filter_pattern

        self.handlers = handlers
        self.patterns = {seat: filter_pattern(seat) for seat in handlers}  # type: ignore[arg-type]
        self.streams = boto3.client("dynamodbstreams")
        table = store.client.describe_table(TableName=store.settings.events_table)["Table"]
        arn = table["LatestStreamArn"]
        shard = self.streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
        self.iterator = self.streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        self.context = FakeContext()
        self.responses: list[dict[str, Any]] = []
        self.seconds: list[float] = []

    def records(self) -> list[dict[str, Any]]:
        out = self.streams.get_records(ShardIterator=self.iterator, Limit=1000)
        self.iterator = out["NextShardIterator"]
        records: list[dict[str, Any]] = out["Records"]
        for r in records:  # the wire format: Lambda gets the stream record as JSON
            r["dynamodb"] = json.loads(json.dumps(r["dynamodb"], default=_json_default))
        return records

    def step(self) -> int:
        """Deliver one round of new records to the handlers; returns the records read."""
        import time

        records = self.records()
        for seat, handler in self.handlers.items():
            batch = [r for r in records if stream_matches(r, self.patterns[seat])]
            if batch:
                start = time.perf_counter()
                response = handler.lambda_handler({"Records": batch}, self.context)
                self.seconds.append((time.perf_counter() - start) / len(batch))
                self.responses.append(response)
                assert response == {"batchItemFailures": []}, response
        return len(records)

    def pump(self, *, max_rounds: int = 500) -> int:
        """Deliver records until the stream is quiet; returns the rounds that had records."""
        for rounds in range(max_rounds):
            if not self.step():
                return rounds
        raise AssertionError("the stream never went quiet")


def _json_default(value: Any) -> Any:
    import datetime as dt
    import decimal

    if isinstance(value, dt.datetime):
        return int(value.timestamp())
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(type(value))


def stream_record(game_id: str, seq: int, seat: str, *, n: int = 1) -> dict[str, Any]:
    """A stream record asking for `seat`'s AI turn after event `seq`, from the sample."""
    name = "stream_harry_turn.json" if seat == "harry" else "stream_voldemort_turn.json"
    record = copy.deepcopy(sample(name)["Records"][0])
    image = record["dynamodb"]["NewImage"]
    image["pk"] = {"S": f"GAME#{game_id}"}
    image["seq"] = {"N": str(seq)}
    image["next_ai"] = {"S": seat}
    record["dynamodb"]["Keys"] = {"pk": image["pk"], "seq": image["seq"]}
    record["dynamodb"]["SequenceNumber"] = f"{200000000000000000000 + n}"
    return record


SECRET_KEYS = frozenset({"horcrux_locations", "decoy_locations", "seed"})


def leaks(payload: Any, *, running: bool = True) -> list[str]:
    """What in a JSON payload Harry or a spectator must never see (paths of the leaks)."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                where = f"{path}.{key}"
                if key in SECRET_KEYS:
                    found.append(where)
                if key in ("horcruxes", "decoys") and not isinstance(inner, int):  # rules: counts
                    found.append(where)
                if running and key == "type" and inner == "voldemort_moved":
                    found.append(where)
                if running and key == "type" and inner in ("relocate", "plant_decoy", "pass"):
                    found.append(where)
                if running and key in ("relocate_from", "relocate_to", "decoy_at"):
                    found.append(where)
                walk(inner, where)
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, f"{path}[{i}]")

    walk(payload, "$")
    return found
