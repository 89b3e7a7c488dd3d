"""Layer 3 and the hot path behind a port: `GameStore`, with an in-memory and a DynamoDB
adapter (docs/STORE.md). Only `horcrux.store.dynamodb` touches boto3, and only lazily
(`horcrux.store.stream`, the events stream's reader, takes its clients from it)."""

from horcrux.store.dynamodb import DynamoDbStore
from horcrux.store.memory import MemoryStore
from horcrux.store.port import (
    BELIEF_HISTORY_MAX,
    SNAPSHOT_BUDGET_BYTES,
    AnyEvent,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    GameStore,
    ItemTooLarge,
    LobbyEntry,
    LobbyPage,
    NotFound,
    ResultStore,
    SeatInfo,
    StoreError,
    StoreUnavailable,
    TurnEvent,
    hash_token,
    merge_history,
    new_snapshot,
    read_log,
    ttl_seconds_from_env,
)

__all__ = [
    "BELIEF_HISTORY_MAX",
    "SNAPSHOT_BUDGET_BYTES",
    "AnyEvent",
    "BeliefPoint",
    "Conflict",
    "DynamoDbStore",
    "EventPage",
    "GameSnapshot",
    "GameStore",
    "ItemTooLarge",
    "LobbyEntry",
    "LobbyPage",
    "MemoryStore",
    "NotFound",
    "ResultStore",
    "SeatInfo",
    "StoreError",
    "StoreUnavailable",
    "TurnEvent",
    "hash_token",
    "merge_history",
    "new_snapshot",
    "read_log",
    "ttl_seconds_from_env",
]
