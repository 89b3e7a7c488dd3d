"""The DynamoDB adapter: the only module that touches boto3 (imported lazily, on first use).

Two tables (docs/STORE.md): the events table (pk `GAME#<id>`, sk `seq` number, a stream)
and the games table (pk/sk strings: the snapshot at `GAME#<id>` / `SNAPSHOT`, with a
sparse `lobby` index). A turn is one GetItem (ConsistentRead) of the snapshot and one
TransactWriteItems (the event if its seq is new + the snapshot if the version has not
moved). Every call asks for ReturnConsumedCapacity TOTAL and is recorded in `calls`.
"""

from __future__ import annotations

import base64
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from horcrux.models import GameStarted, Seat
from horcrux.store import codec, results
from horcrux.store.codec import Item
from horcrux.store.port import (
    MAX_ITEM_BYTES,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    ItemTooLarge,
    LobbyPage,
    NotFound,
    TurnEvent,
    check_commit,
    check_create,
    check_limit,
    check_repair,
    joined,
)
from horcrux.store.results import RESULTS_MAX, GameSummary, RecentResults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

LOBBY_INDEX = "lobby"
JOIN_ATTEMPTS = 3
RESULT_ATTEMPTS = 3
_SNAPSHOT_CONDITION = "#v = :v AND #ttl > :now"


@dataclass(frozen=True)
class DynamoSettings:
    """Table names and endpoint, from the environment unless given."""

    events_table: str = field(
        default_factory=lambda: os.environ.get("HORCRUX_EVENTS_TABLE", "horcrux-events")
    )
    games_table: str = field(
        default_factory=lambda: os.environ.get("HORCRUX_GAMES_TABLE", "horcrux-games")
    )
    region: str | None = field(
        default_factory=lambda: os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    )
    endpoint_url: str | None = field(
        default_factory=lambda: os.environ.get("HORCRUX_DYNAMODB_ENDPOINT") or None
    )


@dataclass(frozen=True)
class CallRecord:
    """One API call: capacity DynamoDB reported, and the estimate from the item sizes."""

    op: str
    reported_units: float | None
    read_units: float
    write_units: float
    item_bytes: int
    seconds: float
    target: str = ""
    """For a GetItem, the sort key read (`SNAPSHOT`, `OPP#...#MEMORY`, ...)."""


class DynamoDbStore:
    """`GameStore` on DynamoDB. The boto3 client is created on first use, not at import."""

    def __init__(
        self,
        settings: DynamoSettings | None = None,
        *,
        client: DynamoDBClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings or DynamoSettings()
        self._client = client
        self._clock = clock
        self.op_counts: Counter[str] = Counter()
        """API calls actually sent, by operation name (counted by a botocore hook)."""
        self.calls: list[CallRecord] = []
        if client is not None:
            self._hook(client)

    # ------------------------------------------------------------ client
    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            import boto3

            self._client = boto3.client(
                "dynamodb",
                region_name=self.settings.region,
                endpoint_url=self.settings.endpoint_url,
            )
            self._hook(self._client)
        return self._client

    def _hook(self, client: DynamoDBClient) -> None:
        def count(model: Any, **_: Any) -> None:
            self.op_counts[str(model.name)] += 1

        client.meta.events.register("before-call.dynamodb", count)

    def _call(self, op: str, *, read: int = 0, written: tuple[int, ...] = (), **kw: Any) -> Any:
        method = "".join("_" + c.lower() if c.isupper() else c for c in op).lstrip("_")
        start = time.perf_counter()
        response: dict[str, Any] = getattr(self.client, method)(
            ReturnConsumedCapacity="TOTAL", **kw
        )
        elapsed = time.perf_counter() - start
        sort_key = kw.get("Key", {}).get("sk", {}).get("S", "") if op == "GetItem" else ""
        self._record(op, response, read, written, elapsed, sort_key)
        return response

    def _record(
        self,
        op: str,
        response: dict[str, Any],
        read: int,
        written: tuple[int, ...],
        secs: float,
        target: str = "",
    ) -> None:
        consumed = response.get("ConsumedCapacity")
        entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        reported = sum(float(e.get("CapacityUnits", 0.0)) for e in entries) if entries else None
        if op == "GetItem":
            item = response.get("Item")
            read = codec.item_size(item) if item else 0
        transactional = op == "TransactWriteItems"
        self.calls.append(
            CallRecord(
                op=op,
                reported_units=reported,
                read_units=codec.read_units(read) if op in ("GetItem",) else 0.0,
                write_units=sum(codec.write_units(w, transactional=transactional) for w in written),
                item_bytes=read + sum(written),
                seconds=secs,
                target=target,
            )
        )

    # ------------------------------------------------------------ tables (local use)
    def create_tables(self) -> None:
        """Create both tables as the CDK stack does (for moto, a moto server or DynamoDB
        Local). Existing tables are left alone."""
        s = self.settings
        existing = set(self.client.list_tables().get("TableNames", []))
        if s.events_table not in existing:
            self.client.create_table(
                TableName=s.events_table,
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "seq", "AttributeType": "N"},
                ],
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "seq", "KeyType": "RANGE"},
                ],
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
            )
        if s.games_table not in existing:
            self.client.create_table(
                TableName=s.games_table,
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "lobby", "AttributeType": "S"},
                    {"AttributeName": "lobby_sk", "AttributeType": "S"},
                ],
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                GlobalSecondaryIndexes=[
                    {
                        "IndexName": LOBBY_INDEX,
                        "KeySchema": [
                            {"AttributeName": "lobby", "KeyType": "HASH"},
                            {"AttributeName": "lobby_sk", "KeyType": "RANGE"},
                        ],
                        "Projection": {
                            "ProjectionType": "INCLUDE",
                            "NonKeyAttributes": ["rules", "open_seats", "created", "ttl"],
                        },
                    }
                ],
            )
        for name in (s.events_table, s.games_table):
            self.client.get_waiter("table_exists").wait(TableName=name)
            self.client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"},
            )

    # ------------------------------------------------------------ helpers
    def _snapshot_key(self, game_id: str) -> Item:
        return {"pk": {"S": codec.game_pk(game_id)}, "sk": {"S": codec.SNAPSHOT_SK}}

    def _live(self, item: Item | None) -> GameSnapshot | None:
        if not item or codec.is_expired(item, self._clock()):
            return None
        return codec.decode_snapshot(_binary_fixed(item))

    def _snapshot_put(self, item: Item, expected_version: int) -> dict[str, Any]:
        return {
            "TableName": self.settings.games_table,
            "Item": item,
            "ConditionExpression": _SNAPSHOT_CONDITION,
            "ExpressionAttributeNames": {"#v": "v", "#ttl": "ttl"},
            "ExpressionAttributeValues": {
                ":v": {"N": str(expected_version)},
                ":now": {"N": str(int(self._clock()))},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    @staticmethod
    def _check_size(*items: Item) -> tuple[int, ...]:
        sizes = tuple(codec.item_size(i) for i in items)
        for size in sizes:
            if size > MAX_ITEM_BYTES:
                raise ItemTooLarge(f"item of {size} bytes exceeds {MAX_ITEM_BYTES}")
        return sizes

    # ------------------------------------------------------------ the port
    def create_game(self, snapshot: GameSnapshot, started: GameStarted) -> GameSnapshot:
        check_create(snapshot, started)
        snap_item = codec.encode_snapshot(snapshot)
        event_item = codec.encode_turn_event(snapshot, started)
        sizes = self._check_size(event_item, snap_item)
        items = [
            {
                "Put": {
                    "TableName": self.settings.events_table,
                    "Item": event_item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": "pk"},
                }
            },
            {
                "Put": {
                    "TableName": self.settings.games_table,
                    "Item": snap_item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": "pk"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
        try:
            self._call("TransactWriteItems", written=sizes, TransactItems=items)
        except Exception as exc:
            reasons = _cancellation_reasons(exc)
            if reasons is None:
                raise
            current = self._live(reasons[1].get("Item")) if len(reasons) > 1 else None
            raise Conflict(
                f"game {snapshot.game_id} already exists", reason="exists", current=current
            ) from None
        return codec.as_stored(snapshot)

    def load(self, game_id: str) -> GameSnapshot:
        response = self._call(
            "GetItem",
            TableName=self.settings.games_table,
            Key=self._snapshot_key(game_id),
            ConsistentRead=True,
        )
        found = self._live(response.get("Item"))
        if found is None:
            raise NotFound(f"no game {game_id}")
        return found

    def commit_turn(
        self, expected_version: int, snapshot: GameSnapshot, event: TurnEvent
    ) -> GameSnapshot:
        check_commit(expected_version, snapshot, event)
        snap_item = codec.encode_snapshot(snapshot)
        event_item = codec.encode_turn_event(snapshot, event)
        sizes = self._check_size(event_item, snap_item)
        items = [
            {
                "Put": {
                    "TableName": self.settings.events_table,
                    "Item": event_item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": "pk"},
                }
            },
            {"Put": self._snapshot_put(snap_item, expected_version)},
        ]
        try:
            self._call("TransactWriteItems", written=sizes, TransactItems=items)
        except Exception as exc:
            reasons = _cancellation_reasons(exc)
            if reasons is None:
                raise
            self._raise_commit_conflict(snapshot.game_id, expected_version, event.seq, reasons)
        return codec.as_stored(snapshot)

    def _raise_commit_conflict(
        self, game_id: str, expected: int, seq: int, reasons: list[dict[str, Any]]
    ) -> None:
        codes = [r.get("Code", "None") for r in reasons]
        snap_reason = reasons[1] if len(reasons) > 1 else {}
        if "TransactionConflict" in codes:
            current = self._live(self._get_raw(game_id))
            raise Conflict(
                f"game {game_id} is being written concurrently; retry",
                reason="busy",
                current=current,
            )
        if snap_reason.get("Code") == "ConditionalCheckFailed":
            current = self._live(snap_reason.get("Item"))
            if current is None:
                raise NotFound(f"no game {game_id}")
            raise Conflict(
                f"game {game_id} moved to version {current.version} (expected {expected})",
                reason="version",
                current=current,
            )
        raise Conflict(
            f"event {seq} of game {game_id} already exists",
            reason="duplicate_event",
            current=self.load(game_id),
        )

    def _get_raw(self, game_id: str) -> Item | None:
        response = self._call(
            "GetItem",
            TableName=self.settings.games_table,
            Key=self._snapshot_key(game_id),
            ConsistentRead=True,
        )
        item: Item | None = response.get("Item")
        return item

    def events(self, game_id: str, after: int = -1, limit: int = 100) -> EventPage:
        check_limit(limit)
        response = self._call(
            "Query",
            TableName=self.settings.events_table,
            KeyConditionExpression="#pk = :pk AND #seq > :after",
            ExpressionAttributeNames={"#pk": "pk", "#seq": "seq"},
            ExpressionAttributeValues={
                ":pk": {"S": codec.game_pk(game_id)},
                ":after": {"N": str(after)},
            },
            ConsistentRead=True,
            Limit=limit + 1,
        )
        raw: list[Item] = response.get("Items", [])
        more = len(raw) > limit or "LastEvaluatedKey" in response
        page = raw[:limit]
        now = self._clock()
        live = [i for i in page if not codec.is_expired(i, now)]
        next_after = int(page[-1]["seq"]["N"]) if more and page else None
        return EventPage(
            events=[codec.decode_event(i) for i in live],
            next_after=next_after,
            belief_history=codec.decode_event_points(live),
        )

    def list_open_games(self, limit: int = 20, cursor: str | None = None) -> LobbyPage:
        check_limit(limit)
        condition = "#lobby = :open"
        names = {"#lobby": "lobby"}
        values: Item = {":open": {"S": codec.LOBBY_OPEN}}
        if cursor is not None:
            condition += " AND #lsk > :cursor"
            names["#lsk"] = "lobby_sk"
            values[":cursor"] = {"S": cursor}
        response = self._call(
            "Query",
            TableName=self.settings.games_table,
            IndexName=LOBBY_INDEX,
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            Limit=limit + 1,
        )
        raw: list[Item] = response.get("Items", [])
        more = len(raw) > limit or "LastEvaluatedKey" in response
        page = raw[:limit]
        now = self._clock()
        games = [codec.decode_lobby_entry(i) for i in page if not codec.is_expired(i, now)]
        return LobbyPage(games=games, cursor=page[-1]["lobby_sk"]["S"] if more and page else None)

    def join_seat(self, game_id: str, seat: Seat, token_hash: str) -> GameSnapshot:
        current = self.load(game_id)
        for _ in range(JOIN_ATTEMPTS):
            after = joined(current, seat, token_hash)
            item = codec.encode_snapshot(after)
            try:
                self._call(
                    "PutItem",
                    written=(codec.item_size(item),),
                    **self._snapshot_put(item, current.version),
                )
            except Exception as exc:
                if _error_code(exc) != "ConditionalCheckFailedException":
                    raise
                response: dict[str, Any] = getattr(exc, "response", {})
                moved = self._live(response.get("Item")) if response.get("Item") else None
                if moved is None:
                    moved = self.load(game_id)
                current = moved
                continue
            return after
        raise Conflict(f"game {game_id} kept changing; retry", reason="busy", current=current)

    # ------------------------------------------------------------ end-of-game records
    def _get(self, key: Item) -> Item | None:
        response = self._call(
            "GetItem", TableName=self.settings.games_table, Key=key, ConsistentRead=True
        )
        item: Item | None = response.get("Item")
        return _binary_fixed(dict(item)) if item else None

    def put_result(
        self,
        summary: GameSummary,
        *,
        belief_history: tuple[BeliefPoint, ...] = (),
        keep: int = RESULTS_MAX,
    ) -> bool:
        blob = codec.encode_history(belief_history) if belief_history else None
        result_item = results.encode_result(summary, blob)
        result_put: dict[str, Any] = {
            "TableName": self.settings.games_table,
            "Item": result_item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk"},
        }
        scope = summary.scope
        if scope is None:
            (size,) = self._check_size(result_item)
            try:
                self._call("PutItem", written=(size,), **result_put)
            except Exception as exc:
                if _error_code(exc) != "ConditionalCheckFailedException":
                    raise
                return False
            return True
        for _ in range(RESULT_ATTEMPTS):
            recent = results.decode_recent(*scope, self._get(results.recent_key(*scope)))
            if recent.has(summary.game_id):
                return False
            recent_item = results.encode_recent(recent.appended(summary, keep))
            sizes = self._check_size(result_item, recent_item)
            recent_put: dict[str, Any] = {
                "TableName": self.settings.games_table,
                "Item": recent_item,
            }
            if recent.version == 0:
                recent_put["ConditionExpression"] = "attribute_not_exists(#pk)"
                recent_put["ExpressionAttributeNames"] = {"#pk": "pk"}
            else:
                recent_put["ConditionExpression"] = "#v = :v"
                recent_put["ExpressionAttributeNames"] = {"#v": "v"}
                recent_put["ExpressionAttributeValues"] = {":v": {"N": str(recent.version)}}
            try:
                self._call(
                    "TransactWriteItems",
                    written=sizes,
                    TransactItems=[{"Put": result_put}, {"Put": recent_put}],
                )
            except Exception as exc:
                reasons = _cancellation_reasons(exc)
                if reasons is None:
                    raise
                if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                    return False
                continue
            return True
        raise Conflict(
            f"the recent results of {scope[0]} vs {scope[1]} kept changing; retry", reason="busy"
        )

    def result(self, game_id: str) -> GameSummary:
        item = self._get(results.result_key(game_id))
        if item is None:
            raise NotFound(f"no result for game {game_id}")
        return results.decode_result(item)

    def recent_results(self, agent: str, opponent: str) -> RecentResults:
        return results.decode_recent(
            agent, opponent, self._get(results.recent_key(agent, opponent))
        )

    # ------------------------------------------------------------ scope items (ECHO memory)
    def scope_item(self, key: Item) -> Item | None:
        """One strongly consistent GetItem of an `AGENT#...` item (None: absent)."""
        return self._get(key)

    def put_scope_item(self, item: Item, expected_version: int) -> None:
        """PutItem of an `AGENT#...` item conditioned on the stored `v` being
        `expected_version` (0: absent); Conflict(`version`) otherwise."""
        sizes = self._check_size(item)
        put: dict[str, Any] = {"TableName": self.settings.games_table, "Item": item}
        if expected_version == 0:
            put["ConditionExpression"] = "attribute_not_exists(#pk)"
            put["ExpressionAttributeNames"] = {"#pk": "pk"}
        else:
            put["ConditionExpression"] = "#v = :v"
            put["ExpressionAttributeNames"] = {"#v": "v"}
            put["ExpressionAttributeValues"] = {":v": {"N": str(expected_version)}}
        try:
            self._call("PutItem", written=sizes, **put)
        except Exception as exc:
            if _error_code(exc) != "ConditionalCheckFailedException":
                raise
            raise Conflict(
                f"scope item moved (expected version {expected_version})", reason="version"
            ) from None

    def delete_scope_items(self, *keys: Item) -> int:
        """Delete `AGENT#...` items (one DeleteItem each); how many existed."""
        gone = 0
        for key in keys:
            response = self._call(
                "DeleteItem", TableName=self.settings.games_table, Key=key, ReturnValues="ALL_OLD"
            )
            gone += bool(response.get("Attributes"))
        return gone

    def repair_snapshot(self, expected_version: int, snapshot: GameSnapshot) -> GameSnapshot:
        check_repair(expected_version, snapshot)
        item = codec.encode_snapshot(snapshot)
        (size,) = self._check_size(item)
        try:
            self._call("PutItem", written=(size,), **self._snapshot_put(item, expected_version))
        except Exception as exc:
            if _error_code(exc) != "ConditionalCheckFailedException":
                raise
            response: dict[str, Any] = getattr(exc, "response", {})
            current = self._live(response.get("Item")) if response.get("Item") else None
            if current is None:
                current = self._live(self._get_raw(snapshot.game_id))
            if current is None:
                raise NotFound(f"no game {snapshot.game_id}") from None
            raise Conflict(
                f"game {snapshot.game_id} moved to version {current.version} "
                f"(expected {expected_version})",
                reason="version",
                current=current,
            ) from None
        return codec.as_stored(snapshot)

    # ------------------------------------------------------------ diagnostics
    def raw_items(self, game_id: str) -> list[Item]:
        """Every stored item of a game (snapshot first, then events by seq), expired or not."""
        snap = self.client.get_item(
            TableName=self.settings.games_table, Key=self._snapshot_key(game_id)
        ).get("Item")
        items: list[Item] = [_binary_fixed(dict(snap))] if snap else []
        kwargs: dict[str, Any] = {
            "TableName": self.settings.events_table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": {"S": codec.game_pk(game_id)}},
        }
        while True:
            response = self.client.query(**kwargs)
            items.extend(dict(i) for i in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def _error_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def _cancellation_reasons(exc: BaseException) -> list[dict[str, Any]] | None:
    """The reasons of a cancelled transaction, or None if `exc` is something else."""
    if _error_code(exc) != "TransactionCanceledException":
        return None
    response: dict[str, Any] = getattr(exc, "response", {})
    reasons: list[dict[str, Any]] = response.get("CancellationReasons", [])
    return reasons


def _binary_fixed(item: Item) -> Item:
    """Binary values as bytes: an item inside an error response may carry base64 text."""

    def fix(value: Any) -> Any:
        if not isinstance(value, dict) or len(value) != 1:
            return value
        ((kind, v),) = value.items()
        if kind == "B" and isinstance(v, str):
            return {"B": base64.b64decode(v)}
        if kind == "M":
            return {"M": {k: fix(x) for k, x in v.items()}}
        if kind == "L":
            return {"L": [fix(x) for x in v]}
        return value

    return {k: fix(v) for k, v in item.items()}
