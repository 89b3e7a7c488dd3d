"""The DynamoDB adapter: with its client side (`horcrux.store.dynamodb_client`), the only
code that touches boto3 (imported lazily, on first use).

Two tables (docs/STORE.md): the events table (pk `GAME#<id>`, sk `seq` number, a stream)
and the games table (pk/sk strings: the snapshot at `GAME#<id>` / `SNAPSHOT`, with a
`lobby` index by status). A turn is one GetItem (ConsistentRead) of the snapshot and one
TransactWriteItems (the event if its seq is new + the snapshot if the version has not
moved). Every call asks for ReturnConsumedCapacity TOTAL; a `CallSink`, if one is
given (the benchmarks: opt-in, so a long-lived Lambda container keeps nothing per call),
records each call's capacity, the estimate from the item sizes and its latency. The tables
are created by the stack (infra/storage.py), or locally by the tools
(`horcrux_tools.local.tables.create_tables`).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from horcrux.decisions import DecisionNote
from horcrux.models import GameStarted, Seat
from horcrux.settings import StoreSettings, store_settings
from horcrux.store import budget, capacity, common, mapping, results
from horcrux.store.capacity import Item
from horcrux.store.common import JOIN_ATTEMPTS, checked_sizes, snapshot_key
from horcrux.store.dynamodb_client import (
    RETRIED_CODES,
    CallSink,
    binary_fixed,
    call_record,
    cancellation_reasons,
    check_budget,
    error_code,
    never_sent,
    new_client,
    outcome_unknown,
    unavailable_error,
)
from horcrux.store.port import (
    AnyEvent,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    GameStatus,
    LobbyPage,
    NotFound,
    StoreUnavailable,
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

log = logging.getLogger(__name__)
LOBBY_INDEX = "lobby"
RETRY_BACKOFF_S = 0.05
"""The first retry's wait (doubled per retry, jittered)."""
RESULT_ATTEMPTS = 3
_SNAPSHOT_CONDITION = "#v = :v AND #ttl > :now"


class DynamoDbStore:
    """`GameStore` on DynamoDB. The boto3 client is created on first use, not at import."""

    def __init__(
        self,
        settings: StoreSettings | None = None,
        *,
        client: DynamoDBClient | None = None,
        clock: Callable[[], float] = time.time,
        recorder: CallSink | None = None,
    ) -> None:
        """`settings`: the function's store settings (read once, at cold start); None: the
        process environment's, now (`horcrux.settings.store_settings`: the tools, the
        tests)."""
        self.settings = settings or store_settings()
        self._client = client
        self._clock = clock
        self.op_counts: Counter[str] = Counter()
        """API calls actually sent, by operation name (counted by a botocore hook)."""
        self.recorder = recorder
        """Where each call's `CallRecord` goes; None (the default): nowhere."""
        if client is not None:
            self._hook(client)

    @classmethod
    def from_settings(cls, store: StoreSettings) -> DynamoDbStore:
        """The store a function builds from its settings (`settings.store`)."""
        return cls(store)

    # ------------------------------------------------------------ client
    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            self._client = new_client("dynamodb", self.settings)
            self._hook(self._client)
        return self._client

    def _hook(self, client: DynamoDBClient) -> None:
        def count(model: Any, **_: Any) -> None:
            self.op_counts[str(model.name)] += 1

        client.meta.events.register("before-call.dynamodb", count)

    def _call(
        self,
        op: str,
        *,
        read: int = 0,
        written: tuple[int, ...] = (),
        attempts: int | None = None,
        **kw: Any,
    ) -> Any:
        """One API call, retried (up to `attempts`, default `max_attempts`) on an outage or
        a throttle while the request's budget covers another attempt."""
        method = "".join("_" + c.lower() if c.isupper() else c for c in op).lstrip("_")
        limit = attempts or self.settings.max_attempts
        attempt = 0
        while True:
            attempt += 1
            check_budget(op, self.settings.read_timeout_s)
            start = time.perf_counter()
            try:
                response: dict[str, Any] = getattr(self.client, method)(
                    ReturnConsumedCapacity="TOTAL", **kw
                )
                break
            except Exception as exc:
                budget.spend(time.perf_counter() - start)
                unavailable = unavailable_error(exc, op)
                retried = error_code(exc) in RETRIED_CODES or (
                    unavailable is not None and unavailable.reason != "tables_missing"
                )
                wait = RETRY_BACKOFF_S * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
                left = budget.remaining()
                if (
                    retried
                    and attempt < limit
                    and (left is None or left >= wait + self.settings.read_timeout_s)
                ):
                    time.sleep(wait)
                    budget.spend(wait)
                    continue
                if unavailable is None:
                    raise
                raise unavailable from exc
        budget.spend(time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        if self.recorder is not None:
            sort_key = kw.get("Key", {}).get("sk", {}).get("S", "") if op == "GetItem" else ""
            self.recorder.record(call_record(op, response, read, written, elapsed, sort_key))
        return response

    # ------------------------------------------------------------ helpers
    def _get_item(self, key: Item) -> Item | None:
        """One strongly consistent GetItem from the games table, the item as received."""
        response = self._call(
            "GetItem", TableName=self.settings.games_table, Key=key, ConsistentRead=True
        )
        item: Item | None = response.get("Item")
        return item

    def _get(self, key: Item) -> Item | None:
        item = self._get_item(key)
        return binary_fixed(dict(item)) if item else None

    def _live(self, item: Item | None) -> GameSnapshot | None:
        return common.live_snapshot(binary_fixed(item) if item else None, self._clock())

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

    def _versioned_put(self, item: Item, expected_version: int) -> dict[str, Any]:
        """A games-table Put of `item` if the stored `v` is `expected_version` (0: absent)."""
        if expected_version == 0:
            return _put_new(self.settings.games_table, item)
        return {
            "TableName": self.settings.games_table,
            "Item": item,
            "ConditionExpression": "#v = :v",
            "ExpressionAttributeNames": {"#v": "v"},
            "ExpressionAttributeValues": {":v": {"N": str(expected_version)}},
        }

    def _conditional_put(
        self, put: dict[str, Any], written: tuple[int, ...]
    ) -> dict[str, Any] | None:
        """One PutItem: None if written, the error response if its condition failed."""
        try:
            self._call("PutItem", written=written, **put)
        except Exception as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            response: dict[str, Any] = getattr(exc, "response", {})
            return response
        return None

    def _moved(self, game_id: str, failed: dict[str, Any]) -> GameSnapshot:
        """The snapshot a failed snapshot put ran into: the one the error carries, else a
        fresh `load` (NotFound if the game is gone)."""
        current = self._live(failed.get("Item"))
        return self.load(game_id) if current is None else current

    def _write_turn(
        self,
        snapshot: GameSnapshot,
        event: AnyEvent,
        snapshot_put: Callable[[Item], dict[str, Any]],
        cancelled: Callable[[list[dict[str, Any]]], NoReturn],
        decision: DecisionNote | None = None,
        write_id: str | None = None,
    ) -> GameSnapshot:
        """One TransactWriteItems: the event if its seq is new, and the snapshot as
        `snapshot_put` puts it; `cancelled` raises for a cancelled transaction.

        The event item carries the write's id, and the transaction a fresh
        `ClientRequestToken` (botocore's own retries send it again: DynamoDB answers a
        token's second send with the first's outcome). If the database stops answering
        once the transaction may have been sent, `_lost_answer` finds out what happened."""
        wid = write_id or uuid.uuid4().hex
        snap_item, event_item = common.turn_items(snapshot, event, decision)
        event_item = common.with_write_id(event_item, wid)
        sizes = checked_sizes(event_item, snap_item)
        items = [
            {"Put": _put_new(self.settings.events_table, event_item)},
            {"Put": snapshot_put(snap_item)},
        ]
        token = uuid.uuid4().hex

        def send() -> None:  # one attempt: `_lost_answer` is the retry of a lost answer
            self._call(
                "TransactWriteItems",
                written=sizes,
                attempts=1,
                TransactItems=items,
                ClientRequestToken=token,
            )

        try:
            send()
        except StoreUnavailable as exc:
            if exc.reason == "tables_missing" or never_sent(exc):
                raise
            self._lost_answer(snapshot, event.seq, wid, send, cancelled, exc)
        except Exception as exc:
            reasons = cancellation_reasons(exc)
            if reasons is None:
                raise
            cancelled(reasons)
        return mapping.as_stored(snapshot)

    def _lost_answer(
        self,
        snapshot: GameSnapshot,
        seq: int,
        wid: str,
        send: Callable[[], None],
        cancelled: Callable[[list[dict[str, Any]]], NoReturn],
        lost: StoreUnavailable,
    ) -> None:
        """The transaction was sent and no answer came (a timeout, a dropped connection, a
        server error): it may have been applied. Send it once more with the same token:
        applied (by either send), this returns; cancelled because its event is now there
        with this write's id, the first send was applied and this returns too; cancelled
        by another write, `cancelled` raises what refused it. When the database still does
        not answer (or the first send is still running), StoreUnavailable(`outcome_unknown`):
        the truth, never "nothing was written"."""
        game_id = snapshot.game_id
        try:
            send()
            return
        except StoreUnavailable as again:
            raise outcome_unknown(game_id, seq, again.message) from again
        except Exception as exc:
            reasons = cancellation_reasons(exc)
            if reasons is None:  # TransactionInProgressException: the first send still runs
                raise outcome_unknown(game_id, seq, str(exc)[:200]) from exc
        try:
            written = self._event_write_id(game_id, seq)
        except StoreUnavailable as again:
            raise outcome_unknown(game_id, seq, again.message) from again
        if written == wid:
            log.info("game %s: event %d was written before its answer was lost", game_id, seq)
            return
        if written is None and any(r.get("Code") == "TransactionConflict" for r in reasons):
            raise outcome_unknown(game_id, seq, lost.message) from lost
        cancelled(reasons)

    def _event_write_id(self, game_id: str, seq: int) -> str | None:
        """The write id on event `seq` of the game (None: no such event)."""
        response = self._call(
            "GetItem",
            TableName=self.settings.events_table,
            Key={"pk": {"S": mapping.game_pk(game_id)}, "seq": {"N": str(seq)}},
            ConsistentRead=True,
            ProjectionExpression="#w",
            ExpressionAttributeNames={"#w": common.WRITE_ID_ATTR},
        )
        item = response.get("Item")
        if item is None:
            return None
        return str(item.get(common.WRITE_ID_ATTR, {}).get("S", ""))

    def find_write(self, game_id: str, write_id: str) -> int | None:
        response = self._call(
            "Query",
            TableName=self.settings.events_table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": "pk", "#seq": "seq", "#w": common.WRITE_ID_ATTR},
            ExpressionAttributeValues={":pk": {"S": mapping.game_pk(game_id)}},
            ProjectionExpression="#seq, #w",
            ConsistentRead=True,
            ScanIndexForward=False,
            Limit=common.RECENT_WRITES,
        )
        return common.write_seq(response.get("Items", []), write_id)

    # ------------------------------------------------------------ the port
    def create_game(self, snapshot: GameSnapshot, started: GameStarted) -> GameSnapshot:
        check_create(snapshot, started)

        def exists(reasons: list[dict[str, Any]]) -> NoReturn:
            current = self._live(reasons[1].get("Item")) if len(reasons) > 1 else None
            raise Conflict(
                f"game {snapshot.game_id} already exists", reason="exists", current=current
            ) from None

        def put(item: Item) -> dict[str, Any]:
            return _put_new(
                self.settings.games_table, item, ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )

        return self._write_turn(snapshot, started, put, exists)

    def load(self, game_id: str) -> GameSnapshot:
        found = self._live(self._get_item(snapshot_key(game_id)))
        if found is None:
            raise NotFound(f"no game {game_id}")
        return found

    def commit_turn(
        self,
        expected_version: int,
        snapshot: GameSnapshot,
        event: TurnEvent,
        decision: DecisionNote | None = None,
        *,
        write_id: str | None = None,
    ) -> GameSnapshot:
        check_commit(expected_version, snapshot, event)
        snapshot = snapshot.beating(self._clock())

        def conflict(reasons: list[dict[str, Any]]) -> NoReturn:
            self._raise_commit_conflict(snapshot.game_id, expected_version, event.seq, reasons)

        def put(item: Item) -> dict[str, Any]:
            return self._snapshot_put(item, expected_version)

        return self._write_turn(snapshot, event, put, conflict, decision, write_id)

    def _raise_commit_conflict(
        self, game_id: str, expected: int, seq: int, reasons: list[dict[str, Any]]
    ) -> NoReturn:
        codes = [r.get("Code", "None") for r in reasons]
        snap_reason = reasons[1] if len(reasons) > 1 else {}
        if "TransactionConflict" in codes:
            current = self._live(self._get_item(snapshot_key(game_id)))
            raise Conflict(
                f"game {game_id} is being written concurrently; retry",
                reason="busy",
                current=current,
            )
        if snap_reason.get("Code") == "ConditionalCheckFailed":
            current = self._live(snap_reason.get("Item"))
            if current is None:
                raise NotFound(f"no game {game_id}")
            raise common.version_moved(game_id, current, expected)
        raise Conflict(
            f"event {seq} of game {game_id} already exists",
            reason="duplicate_event",
            current=self.load(game_id),
        )

    def events(self, game_id: str, after: int = -1, limit: int = 100) -> EventPage:
        check_limit(limit)
        response = self._call(
            "Query",
            TableName=self.settings.events_table,
            KeyConditionExpression="#pk = :pk AND #seq > :after",
            ExpressionAttributeNames={"#pk": "pk", "#seq": "seq"},
            ExpressionAttributeValues={
                ":pk": {"S": mapping.game_pk(game_id)},
                ":after": {"N": str(after)},
            },
            ConsistentRead=True,
            Limit=limit + 1,
        )
        raw: list[Item] = response.get("Items", [])
        more = "LastEvaluatedKey" in response
        return common.event_page(raw, limit, self._clock(), more=more)

    def list_open_games(self, limit: int = 20, cursor: str | None = None) -> LobbyPage:
        return self.list_games("open", limit=limit, cursor=cursor)

    def list_games(
        self, status: GameStatus, limit: int = 20, cursor: str | None = None
    ) -> LobbyPage:
        check_limit(limit)
        keys = common.lobby_range(status, self._clock(), cursor)
        if keys.empty:
            return LobbyPage(games=[], cursor=None)
        condition, names, values = keys.condition()
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
        more = "LastEvaluatedKey" in response
        return common.lobby_page(raw, limit, self._clock(), more=more)

    def join_seat(
        self,
        game_id: str,
        seat: Seat,
        token_hash: str,
        name: str | None = None,
        player: str | None = None,
    ) -> GameSnapshot:
        current = self.load(game_id)
        for _ in range(JOIN_ATTEMPTS):
            after = joined(current, seat, token_hash, name, player, now=self._clock())
            item = mapping.encode_snapshot(after)
            put = self._snapshot_put(item, current.version)
            failed = self._conditional_put(put, (capacity.item_size(item),))
            if failed is None:
                return after
            current = self._moved(game_id, failed)
        raise common.kept_changing(game_id, current)

    # ------------------------------------------------------------ end-of-game records
    def put_result(
        self,
        summary: GameSummary,
        *,
        belief_history: tuple[BeliefPoint, ...] = (),
        keep: int = RESULTS_MAX,
    ) -> bool:
        result_item = common.result_item(summary, belief_history)
        result_put = _put_new(self.settings.games_table, result_item)
        scope = summary.scope
        if scope is None:
            return self._conditional_put(result_put, checked_sizes(result_item)) is None
        for _ in range(RESULT_ATTEMPTS):
            recent = results.decode_recent(*scope, self._get(results.recent_key(*scope)))
            if recent.has(summary.game_id):
                return False
            recent_item = results.encode_recent(recent.appended(summary, keep))
            sizes = checked_sizes(result_item, recent_item)
            recent_put = self._versioned_put(recent_item, recent.version)
            try:
                self._call(
                    "TransactWriteItems",
                    written=sizes,
                    TransactItems=[{"Put": result_put}, {"Put": recent_put}],
                )
            except Exception as exc:
                reasons = cancellation_reasons(exc)
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
        sizes = checked_sizes(item)
        if self._conditional_put(self._versioned_put(item, expected_version), sizes) is not None:
            raise Conflict(
                f"scope item moved (expected version {expected_version})", reason="version"
            )

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
        item = mapping.encode_snapshot(snapshot)
        sizes = checked_sizes(item)
        failed = self._conditional_put(self._snapshot_put(item, expected_version), sizes)
        if failed is not None:
            current = self._moved(snapshot.game_id, failed)
            raise common.version_moved(snapshot.game_id, current, expected_version)
        return mapping.as_stored(snapshot)

    # ------------------------------------------------------------ diagnostics
    def raw_items(self, game_id: str) -> list[Item]:
        """Every stored item of a game (snapshot first, then events by seq), expired or not."""
        snap = self.client.get_item(
            TableName=self.settings.games_table, Key=snapshot_key(game_id)
        ).get("Item")
        items: list[Item] = [binary_fixed(dict(snap))] if snap else []
        kwargs: dict[str, Any] = {
            "TableName": self.settings.events_table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": {"S": mapping.game_pk(game_id)}},
        }
        while True:
            response = self.client.query(**kwargs)
            items.extend(dict(i) for i in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def _put_new(table: str, item: Item, **extra: Any) -> dict[str, Any]:
    """A Put of `item` into `table` if no item has its key yet."""
    return {
        "TableName": table,
        "Item": item,
        "ConditionExpression": "attribute_not_exists(#pk)",
        "ExpressionAttributeNames": {"#pk": "pk"},
        **extra,
    }
