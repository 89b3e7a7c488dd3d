"""The store's two tables created as the CDK stack creates them (infra/storage.py), for a
local DynamoDB (moto in process, a moto server, DynamoDB Local): what `horcrux serve`, the
tests and the benchmarks run before a store is used. Tool code: a Lambda never creates a
table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from horcrux.store.dynamodb import LOBBY_INDEX, DynamoDbStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.literals import ScalarAttributeTypeType
    from mypy_boto3_dynamodb.type_defs import KeySchemaElementTypeDef


def create_tables(store: DynamoDbStore) -> None:
    """Create both tables as the CDK stack does (for moto, a moto server or DynamoDB
    Local). Existing tables are left alone."""
    s = store.settings
    existing = set(store.client.list_tables().get("TableNames", []))
    if s.events_table not in existing:
        _create_table(
            store,
            s.events_table,
            ("pk", "seq"),
            {"pk": "S", "seq": "N"},
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        )
    if s.games_table not in existing:
        _create_table(
            store,
            s.games_table,
            ("pk", "sk"),
            {"pk": "S", "sk": "S", "lobby": "S", "lobby_sk": "S"},
            GlobalSecondaryIndexes=[
                {
                    "IndexName": LOBBY_INDEX,
                    "KeySchema": _key_schema("lobby", "lobby_sk"),
                    "Projection": {
                        "ProjectionType": "INCLUDE",
                        "NonKeyAttributes": ["rules", "open_seats", "created", "ttl", "names"],
                    },
                }
            ],
        )
    for name in (s.events_table, s.games_table):
        store.client.get_waiter("table_exists").wait(TableName=name)
        store.client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"},
        )


def _create_table(
    store: DynamoDbStore,
    name: str,
    keys: tuple[str, str],
    attributes: dict[str, ScalarAttributeTypeType],
    **extra: Any,
) -> None:
    """Create an on-demand table keyed by `keys` (partition, sort)."""
    store.client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": t} for n, t in attributes.items()
        ],
        KeySchema=_key_schema(*keys),
        **extra,
    )


def _key_schema(hash_key: str, range_key: str) -> list[KeySchemaElementTypeDef]:
    """A KeySchema of a partition key and a sort key."""
    return [
        {"AttributeName": hash_key, "KeyType": "HASH"},
        {"AttributeName": range_key, "KeyType": "RANGE"},
    ]


__all__ = ["create_tables"]
