"""An Idempotency-Key never stays locked by a request that failed: the failed request
releases its in-progress record, and when the release itself cannot be written the lock
expires within `LOCK_S` and every 409 `idempotency_in_progress` says when to retry
(`Retry-After`, the lock's remaining time). Fail, recover, retry with the same key:
exactly one move. Through the API Lambda's handler over moto DynamoDB (the idempotency
records in its table), the client's calls made to fail."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from api_fixtures import IDEMPOTENCY_TABLE, ApiClient, two_person_game
from botocore.exceptions import ReadTimeoutError

from horcrux.api.idempotency import LOCK_S
from horcrux.store import DynamoDbStore

pytestmark = pytest.mark.moto

MOVE = {"type": "search", "location": "azkaban"}


def _down(client: Any, *operations: str) -> Callable[[], None]:
    """Make the client's `operations` time out (the database frozen) until the returned
    function is called (the database thawed)."""
    real = {op: getattr(client, op) for op in operations}
    for op in operations:

        def frozen(**kw: Any) -> Any:
            raise ReadTimeoutError(endpoint_url="http://dynamodb.local")

        setattr(client, op, frozen)

    def thaw() -> None:
        for op, method in real.items():
            setattr(client, op, method)

    return thaw


def _move(api: ApiClient, game_id: str, token: str, key: str) -> Any:
    return api.call(
        "POST",
        f"/games/{game_id}/moves",
        body=MOVE,
        token=token,
        headers={"idempotency-key": key},
    )


def _moves(dynamo: DynamoDbStore, game_id: str) -> list[int]:
    return [e.seq for e in dynamo.events(game_id).events if e.seq > 0]


def test_a_failed_move_releases_its_key_and_the_retry_plays_it_once(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = two_person_game(api)
    thaw = _down(api.handler.store.client, "transact_write_items")  # the commit times out
    try:
        failed = _move(api, game_id, token, "k-1")
    finally:
        thaw()
    assert failed.status == 503 and failed.body["error"] == "store_unavailable", failed.body
    assert int(failed.headers["Retry-After"]) >= 1
    retried = _move(api, game_id, token, "k-1")  # at once: the key was released
    assert retried.status == 200, retried.body
    assert retried.body["event"]["action"] == MOVE
    assert _moves(dynamo, game_id) == [1]
    again = _move(api, game_id, token, "k-1")  # the stored answer, no second move
    assert again.status == 200 and again.body["event"] == retried.body["event"]
    assert _moves(dynamo, game_id) == [1]


@pytest.mark.slow
def test_a_lock_that_cannot_be_released_says_when_to_retry_and_expires_in_seconds(
    api: ApiClient, dynamo: DynamoDbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    game_id, token = two_person_game(api)
    client = api.handler.store.client
    real_release = DynamoDBPersistenceLayer._delete_record

    def release_fails(self: Any, data_record: Any) -> None:
        raise ReadTimeoutError(endpoint_url="http://dynamodb.local")

    # the commit times out, and so does the release of the in-progress record
    thaw = _down(client, "transact_write_items")
    monkeypatch.setattr(DynamoDBPersistenceLayer, "_delete_record", release_fails)
    try:
        failed = _move(api, game_id, token, "k-2")
    finally:
        thaw()
        monkeypatch.setattr(DynamoDBPersistenceLayer, "_delete_record", real_release)
    assert failed.status == 503, failed.body
    started = time.time()
    # the lock is in the table, expiring within LOCK_S (not the function's 30 s)
    items = client.scan(TableName=IDEMPOTENCY_TABLE)["Items"]
    locks = [i for i in items if i["status"]["S"] == "INPROGRESS"]
    assert len(locks) == 1
    expiry_s = int(locks[0]["in_progress_expiration"]["N"]) / 1000
    assert started < expiry_s <= started + LOCK_S + 0.5

    # the lock ages 2 s, so its remaining time (about 3 s) differs from the longest a lock
    # lasts (5 s, what the server says when it cannot read the lock)
    time.sleep(2.0)
    before = time.time()
    locked = _move(api, game_id, token, "k-2")
    after = time.time()
    assert locked.status == 409 and locked.body["error"] == "idempotency_in_progress"
    wait = int(locked.headers["Retry-After"])
    # the lock's remaining time in whole seconds, rounded up, as of the server's reading
    assert wait in {math.ceil(expiry_s - after), math.ceil(expiry_s - before)}
    assert wait < math.ceil(LOCK_S)
    assert _moves(dynamo, game_id) == []

    time.sleep(wait)  # what a client does with Retry-After: the lock has expired by then
    retried = _move(api, game_id, token, "k-2")
    assert retried.status == 200, retried.body
    assert _moves(dynamo, game_id) == [1]
    assert _move(api, game_id, token, "k-2").body["event"] == retried.body["event"]
    assert _moves(dynamo, game_id) == [1]
