"""The local DynamoDB process's changes to moto: transactions roll back from an item-level
undo log (never a copy of a table), pinned to the moto version; streams kept short; one
request at a time."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from conftest import set_aws_env
from moto import mock_aws
from moto.dynamodb.models.table import Table

from horcrux_tools.local.dynamo_process import (
    PATCHED_MOTO_VERSION,
    STREAM_RECORDS_KEPT,
    UnsupportedMoto,
    install_item_undo_log,
    patched_moto,
    serialised,
)

pytestmark = pytest.mark.moto

TABLE = "undo-test"
KEPT = 100
"""The stream records kept here (the server keeps `STREAM_RECORDS_KEPT`)."""


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    set_aws_env(monkeypatch)
    with mock_aws(), patched_moto(stream_records_kept=KEPT):
        dynamodb = boto3.client("dynamodb", region_name="eu-west-1")
        dynamodb.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        )
        yield dynamodb


def _key(pk: str, sk: str = "S") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _put(client: Any, pk: str, v: int, sk: str = "S") -> None:
    client.put_item(TableName=TABLE, Item={**_key(pk, sk), "v": {"N": str(v)}})


def _items(client: Any) -> dict[str, int]:
    items = client.scan(TableName=TABLE)["Items"]
    return {f"{i['pk']['S']}/{i['sk']['S']}": int(i["v"]["N"]) for i in items}


def _update(pk: str, v: int, condition: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {
        "TableName": TABLE,
        "Key": _key(pk),
        "UpdateExpression": "SET v = :v",
        "ExpressionAttributeValues": {":v": {"N": str(v)}},
    }
    if condition is not None:
        op["ConditionExpression"] = condition
        op["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return {"Update": op}


def _new(pk: str, v: int) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": TABLE,
            "Item": {**_key(pk), "v": {"N": str(v)}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def test_a_cancelled_transaction_leaves_every_item_as_it_was(client: Any) -> None:
    _put(client, "a", 1)
    _put(client, "b", 1)
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(
            TransactItems=[_update("a", 2), _new("c", 3), _update("b", 5, "v = :v")]
        )
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    reasons = error["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "None", "ConditionalCheckFailed"]
    assert reasons[2]["Item"] == {**_key("b"), "v": {"N": "1"}}  # ALL_OLD, as moto gives it
    assert _items(client) == {"a/S": 1, "b/S": 1}  # a's update undone, c never created


def test_a_successful_transaction_applies_all(client: Any) -> None:
    _put(client, "a", 1)
    client.transact_write_items(TransactItems=[_update("a", 2), _new("c", 3)])
    assert _items(client) == {"a/S": 2, "c/S": 3}


def test_validation_errors_and_repeated_items_roll_back(client: Any) -> None:
    _put(client, "a", 1)
    with pytest.raises(ClientError) as caught:  # the same item twice
        client.transact_write_items(TransactItems=[_update("a", 2), _update("a", 3)])
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "multiple operations" in str(caught.value)
    bad = _update("b", 1)
    bad["Update"]["UpdateExpression"] = "SET v = :missing"
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=[_new("d", 4), bad])
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert _items(client) == {"a/S": 1}


def test_the_cost_of_a_transaction_does_not_grow_with_the_table(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = copy.deepcopy
    copied: list[type] = []

    def counting(value: Any, memo: Any = None, _nil: Any = None) -> Any:
        copied.append(type(value))
        return real(value, memo)

    def one_move(n: int) -> int:
        _put(client, f"game{n}", 0)
        copied.clear()
        monkeypatch.setattr(copy, "deepcopy", counting)
        try:
            client.transact_write_items(
                TransactItems=[_update(f"game{n}", 1), _new(f"game{n}-event", 1)]
            )
        finally:
            monkeypatch.setattr(copy, "deepcopy", real)
        assert Table not in copied  # never a table
        return len(copied)

    small = one_move(0)
    for i in range(400):  # a table 400 items bigger
        _put(client, f"old{i}", i, sk=f"{i:04d}")
    big = one_move(1)
    assert big == small


def test_a_query_reads_its_partition_only(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        _put(client, f"other{i % 3}", i, sk=f"{i:03d}")
    for i in (5, 1, 3):
        _put(client, "game", i, sk=f"{i:03d}")
    enumerated: list[int] = []
    real = Table.all_items  # the patched one: the query's partition, or the whole table

    def counting(self: Any) -> Any:
        items = real(self)
        enumerated.append(len(items))
        return items

    monkeypatch.setattr(Table, "all_items", counting)
    got = client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND sk > :after",
        ExpressionAttributeValues={":pk": {"S": "game"}, ":after": {"S": "001"}},
    )["Items"]
    scanned = client.scan(TableName=TABLE)["Count"]
    assert [i["sk"]["S"] for i in got] == ["003", "005"]  # range-key order, as moto's
    assert scanned == 33
    assert enumerated == [3, 33]  # the query read its partition, only the scan all 33


def test_the_patch_refuses_another_moto_version() -> None:
    with pytest.raises(UnsupportedMoto, match=PATCHED_MOTO_VERSION):
        install_item_undo_log(version="9.9.9")


def test_the_patch_is_for_the_installed_moto() -> None:
    import moto

    assert moto.__version__ == PATCHED_MOTO_VERSION  # a moto upgrade must revisit the patch


def test_streams_keep_only_the_last_records(client: Any) -> None:
    from moto.dynamodb.models import dynamodb_backends

    for i in range(KEPT + 50):
        _put(client, f"s{i}", i)
    backend = dynamodb_backends["123456789012"]["eu-west-1"]
    shard = backend.tables[TABLE].stream_shard
    assert len(shard.items) == KEPT
    assert shard.starting_sequence_number + len(shard.items) > KEPT + 50
    assert STREAM_RECORDS_KEPT >= 1000  # the server's tail is never that far behind


def test_a_cancelled_transaction_takes_back_its_stream_records(client: Any) -> None:
    from moto.dynamodb.models import dynamodb_backends

    _put(client, "a", 1)
    shard = dynamodb_backends["123456789012"]["eu-west-1"].tables[TABLE].stream_shard
    before = [r.to_json()["dynamodb"]["SequenceNumber"] for r in shard.items]
    with pytest.raises(ClientError, match="TransactionCanceled"):
        client.transact_write_items(
            TransactItems=[_new("b", 1), _update("a", 2, "v = :v")]  # the update's condition fails
        )
    assert [r.to_json()["dynamodb"]["SequenceNumber"] for r in shard.items] == before
    _put(client, "c", 1)  # the next write's record follows on
    assert len(shard.items) == len(before) + 1


def test_the_app_is_called_by_one_request_at_a_time() -> None:
    inside = 0
    most = 0
    lock = threading.Lock()
    overlap = threading.Event()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        overlap.wait(0.01)  # room for another thread to come in, were it let in
        with lock:
            inside -= 1
        start_response("200 OK", [])
        return [b"ok"]

    locked = serialised(app)
    threads = [threading.Thread(target=lambda: list(locked({}, lambda *a: None))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1
