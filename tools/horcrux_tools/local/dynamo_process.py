"""The local DynamoDB as its own process: moto's DynamoDB backend behind waitress.

    python -m horcrux_tools.local.dynamo_process --host 127.0.0.1 --port 0

prints `horcrux-dynamodb listening on http://HOST:PORT` once it accepts connections and
serves until SIGTERM/SIGINT. `horcrux serve` starts it (`moto_server.start_dynamodb`); the
fault tests start it as "the user's own endpoint" and kill, freeze or restart it.

Changes to moto 5.2.5, made here only (this process IS the database):

* `DynamoDBBackend.transact_write_items` deep-copies every TABLE a transaction touches, for
  its rollback: O(table size) per move, and the copies made a long local session grow to
  gigabytes and slow down tenfold. `install_item_undo_log()` replaces it with the same code
  keeping an item-level undo log: only the items the transaction names are backed up, and
  restored on cancel (failed conditions, `MultipleTransactions`, validation errors), with
  moto's own cancellation reasons and `ReturnValuesOnConditionCheckFailure`. It is pinned
  to the moto version it was copied from and refuses any other one.
* the events table's stream keeps every record in memory; `cap_stream_records()` keeps the
  last `STREAM_RECORDS_KEPT` (`horcrux serve` tails the stream, `local/stream.py`, and is
  never that far behind), and a read from before the oldest kept record starts at the
  oldest (moto would fail an assertion); a cancelled transaction takes back the stream
  records of its own writes (moto left them: a stream reader saw writes that never
  happened); the shard iterators each read leaves are capped too.
* the streams API (`DynamoDBStreams_20120810.*`: DescribeStream, GetShardIterator,
  GetRecords) is served on the same port, as DynamoDB Local does.
* `--faults` adds `POST /_horcrux/faults` (`{"stall_commits_s": S}`): every
  TransactWriteItems is applied and its answer then held back S seconds (the stalled
  commit: written, the answer lost to the client's timeout); 0 ends it. Tests only.
* a Query sorts every item of the table to pick its partition's; `partition_queries()`
  reads the partition only (same items, same order).

moto's backend is not thread-safe: one lock serialises the requests (keep-alive stays).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

PATCHED_MOTO_VERSION = "5.2.5"
"""The moto release whose `transact_write_items` the undo-log version was copied from."""
STREAM_RECORDS_KEPT = 5000
SHARD_ITERATORS_KEPT = 1000
FAULTS_PATH = "/_horcrux/faults"
BANNER = "horcrux-dynamodb listening on"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class UnsupportedMoto(RuntimeError):
    """The installed moto is not the version the patch was written for."""


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.5's `DynamoDBBackend.transact_write_items`, rolling back with an undo log
    of the touched items instead of deep copies of the touched tables."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    undo: list[tuple[Any, Any, Any, Any]] = []  # (table, hash, range, item before or None)
    backed_up: set[tuple[str, Any, Any]] = set()

    def back_up(table_name: str, key: dict[str, Any]) -> None:
        table = self.tables.get(table_name)
        if table is None:
            return
        try:
            hash_value, range_value = self.get_keys_value(table, key)
        except Exception:  # a bad key: the operation itself reports it
            return
        if (table_name, hash_value, range_value) in backed_up:
            return
        backed_up.add((table_name, hash_value, range_value))
        before = table.get_item(hash_value, range_value)
        undo.append((table, hash_value, range_value, copy.deepcopy(before)))

    stream_marks: dict[str, tuple[Any, int]] = {}  # table -> (shard, its next sequence number)

    def mark_stream(table_name: str) -> None:
        table = self.tables.get(table_name)
        shard = getattr(table, "stream_shard", None)
        if shard is not None and table_name not in stream_marks:
            stream_marks[table_name] = (shard, shard.starting_sequence_number + len(shard.items))

    def rollback() -> None:
        for shard, mark in stream_marks.values():  # the records of writes taken back
            keep = max(0, mark - shard.starting_sequence_number)
            del shard.items[keep:]
        for table, hash_value, range_value, before in reversed(undo):
            if range_value is not None:
                bucket = table.items.get(hash_value)
                if before is not None:
                    table.items[hash_value][range_value] = before
                elif bucket is not None:
                    bucket.pop(range_value, None)
                    if not bucket:
                        del table.items[hash_value]
            elif before is not None:
                table.items[hash_value] = before
            else:
                table.items.pop(hash_value, None)

    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    for item in transact_items:
        original_item: dict[str, Any] | None = None
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            condition_expression = op.get("ConditionExpression")
            expression_attribute_names = op.get("ExpressionAttributeNames")
            expression_attribute_values = op.get("ExpressionAttributeValues")
            return_values_on_condition_check_failure = op.get("ReturnValuesOnConditionCheckFailure")
            if op_type == "Put":
                attrs = op["Item"]
                table = self.get_table(table_name)
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            check_unicity(table_name, key)
            if op_type != "ConditionCheck":
                mark_stream(table_name)
                back_up(table_name, key)  # before anything can change it
            current = self.get_item(table_name, key)
            if condition_expression is not None:
                condition_op = get_filter_expression(
                    condition_expression, expression_attribute_names, expression_attribute_values
                )
                if not condition_op.expr(current):
                    if return_values_on_condition_check_failure == "ALL_OLD" and current:
                        original_item = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original_item)
            if op_type == "Put":
                self.put_item(
                    table_name,
                    op["Item"],
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Delete":
                self.delete_item(
                    table_name,
                    key,
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            rollback()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore[arg-type]
        except Exception as e:  # moto's own catch-all: the reason names the error
            errors.append((type(e).__name__, str(e), original_item))  # type: ignore[arg-type]
    if any(code is not None for code, _, _ in errors):
        rollback()
        raise TransactionCanceledException(errors)


def _capped_stream_add(original: Callable[..., None], kept: int) -> Callable[..., None]:
    def add(self: Any, old: Any, new: Any) -> None:
        original(self, old, new)
        extra = len(self.items) - kept
        if extra > 0:  # the sequence numbers go on from where they were
            del self.items[:extra]
            self.starting_sequence_number += extra

    add.horcrux_capped = True  # type: ignore[attr-defined]
    return add


def install_item_undo_log(*, version: str | None = None) -> Callable[[], None]:
    """Replace moto's table-copying `transact_write_items`; returns the undo of the patch.
    Refuses (UnsupportedMoto) any moto but the one the code was copied from."""
    found = version or _moto_version()
    if found != PATCHED_MOTO_VERSION:
        raise UnsupportedMoto(
            f"horcrux's local DynamoDB patches moto {PATCHED_MOTO_VERSION}'s "
            f"transact_write_items; moto {found} is installed: check its rollback "
            "and update horcrux_tools/local/dynamo_process.py"
        )
    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.transact_write_items
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]

    def uninstall() -> None:
        DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]

    return uninstall


def cap_stream_records(kept: int = STREAM_RECORDS_KEPT) -> Callable[[], None]:
    """Keep only the last `kept` records of every table's stream (a read from before the
    oldest starts at the oldest) and the last `SHARD_ITERATORS_KEPT` shard iterators;
    returns the undo."""
    from moto.dynamodb.models.table import StreamShard
    from moto.dynamodbstreams.models import DynamoDBStreamsBackend

    original = StreamShard.add
    if getattr(original, "horcrux_capped", False):
        return lambda: None
    original_get = StreamShard.get
    original_iterator = DynamoDBStreamsBackend.get_shard_iterator
    original_records = DynamoDBStreamsBackend.get_records

    def get(self: Any, start: int, quantity: int) -> list[dict[str, Any]]:
        return original_get(self, max(start, self.starting_sequence_number), quantity)

    def forget_old(backend: Any) -> None:
        iterators = backend.shard_iterators
        extra = len(iterators) - SHARD_ITERATORS_KEPT
        for arn in list(itertools.islice(iterators, max(0, extra))):
            del iterators[arn]

    def get_shard_iterator(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = original_iterator(self, *args, **kwargs)
        forget_old(self)
        return found

    def get_records(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = original_records(self, *args, **kwargs)
        forget_old(self)
        return found

    StreamShard.add = _capped_stream_add(original, kept)  # type: ignore[method-assign]
    StreamShard.get = get  # type: ignore[method-assign]
    DynamoDBStreamsBackend.get_shard_iterator = get_shard_iterator  # type: ignore[method-assign]
    DynamoDBStreamsBackend.get_records = get_records  # type: ignore[method-assign]

    def uninstall() -> None:
        StreamShard.add = original  # type: ignore[method-assign]
        StreamShard.get = original_get  # type: ignore[method-assign]
        DynamoDBStreamsBackend.get_shard_iterator = original_iterator  # type: ignore[method-assign]
        DynamoDBStreamsBackend.get_records = original_records  # type: ignore[method-assign]

    return uninstall


def partition_queries() -> Callable[[], None]:
    """A Query on a table's own key reads only its partition; returns the undo.

    moto 5.2.5's `Table.query` without an index filters `all_items()`: every item of the
    table, sorted, per query (the events of one game read by sorting every event of every
    game). Here `all_items()` answers that query's partition only, in range-key order: the
    same items in the same order. Requests are serialised, so the per-table marker is safe.
    """
    from moto.dynamodb.models.table import Table

    original_query = Table.query
    original_all = Table.all_items
    if getattr(original_query, "horcrux_partitioned", False):
        return lambda: None

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        scoped = index_name is None and hash_key is not None and self.range_key_attr is not None
        if scoped:
            self.horcrux_partition = hash_key
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            if scoped:
                self.horcrux_partition = None

    def all_items(self: Any) -> list[Any]:
        partition = getattr(self, "horcrux_partition", None)
        if partition is None:
            return original_all(self)
        bucket = self.items.get(partition) or {}
        return sorted(bucket.values(), key=lambda item: item.range_key)

    query.horcrux_partitioned = True  # type: ignore[attr-defined]
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]

    def uninstall() -> None:
        Table.query = original_query  # type: ignore[method-assign]
        Table.all_items = original_all  # type: ignore[method-assign]

    return uninstall


@contextmanager
def patched_moto(*, stream_records_kept: int = STREAM_RECORDS_KEPT) -> Iterator[None]:
    """Every patch for the duration (tests use it with moto's in-process mock)."""
    undo = [install_item_undo_log(), cap_stream_records(stream_records_kept), partition_queries()]
    try:
        yield
    finally:
        for step in reversed(undo):
            step()


class Faults:
    """The faults a test switches on (`--faults`): `stall_commits_s`, the seconds every
    TransactWriteItems answer is held back after the transaction was applied."""

    def __init__(self) -> None:
        self.stall_commits_s = 0.0
        self.stalled = 0

    def control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        """`POST /_horcrux/faults` `{"stall_commits_s": S}`: the faults now in force."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            asked = json.loads(environ["wsgi.input"].read(length) or b"{}")
            self.stall_commits_s = max(0.0, float(asked.get("stall_commits_s", 0.0)))
        except (ValueError, TypeError, AttributeError) as exc:
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [json.dumps({"error": str(exc)}).encode()]
        start_response("200 OK", [("Content-Type", "application/json")])
        body = {"stall_commits_s": self.stall_commits_s, "stalled": self.stalled}
        return [json.dumps(body).encode()]


def serialised(app: WsgiApp, faults: Faults | None = None) -> WsgiApp:
    """`app` called by one request at a time, its whole body produced under the lock (a
    stalled commit's answer is held back outside it: the database goes on serving)."""
    lock = threading.Lock()

    def locked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if faults is not None and environ.get("PATH_INFO") == FAULTS_PATH:
            return faults.control(environ, start_response)
        with lock:
            result = app(environ, start_response)
            try:
                body = [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if (
            faults is not None
            and faults.stall_commits_s > 0
            and target.endswith(".TransactWriteItems")
        ):
            faults.stalled += 1
            time.sleep(faults.stall_commits_s)  # applied; the answer comes too late
        return body

    return locked


def by_target(dynamodb: WsgiApp, streams: WsgiApp) -> WsgiApp:
    """The streams API's requests (`X-Amz-Target: DynamoDBStreams_...`) to `streams`, the
    rest to `dynamodb`: one endpoint for both, as DynamoDB Local serves them."""

    def route(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        app = streams if target.startswith("DynamoDBStreams_") else dynamodb
        return app(environ, start_response)

    return route


def dynamodb_app(*, faults: Faults | None = None) -> WsgiApp:
    """moto's DynamoDB and DynamoDB Streams Flask apps, patched and serialised."""
    import logging

    from moto.moto_server.werkzeug_app import create_backend_app

    install_item_undo_log()
    cap_stream_records()
    partition_queries()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is N"
    app: WsgiApp = by_target(create_backend_app("dynamodb"), create_backend_app("dynamodbstreams"))
    return serialised(app, faults)


def _exit_on_eof() -> None:
    while os.read(0, 4096):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m horcrux_tools.local.dynamo_process")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--faults", action="store_true", help=f"serve POST {FAULTS_PATH} (tests: a stalled commit)"
    )
    parser.add_argument(
        "--exit-with-stdin", action="store_true", help="exit when stdin closes (the parent died)"
    )
    args = parser.parse_args(argv)
    from waitress.server import create_server

    server = create_server(
        dynamodb_app(faults=Faults() if args.faults else None),
        host=args.host,
        port=args.port,
        threads=args.threads,
        backlog=1024,
        channel_timeout=60,
        ident="horcrux-dynamodb",
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        # the data lives in this process's memory only: nothing to flush, no request
        # worth finishing (the clients retry), so exit at once
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.exit_with_stdin:
        threading.Thread(target=_exit_on_eof, name="stdin-watch", daemon=True).start()
    host, port = server.effective_host, server.effective_port
    print(f"{BANNER} http://{host}:{port}", flush=True)
    server.run()
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process
    sys.exit(main())
