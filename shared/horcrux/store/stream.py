"""The events table's DynamoDB stream read in order from a checkpoint: what the stack's
event source mappings do for the turn and compaction Lambdas, for a process that runs
them itself (`horcrux serve`). Its clients (`dynamodb`, `dynamodbstreams`) come from the
DynamoDB adapter (`dynamodb_client.new_client`, boto3 code) on first use, with the
store's timeouts.

`EventStream.read()` answers the committed changes after the checkpoint (INSERTs of event
items: the game, the event's `seq`, its `next_ai` and `winner` marks) and moves the
checkpoint past them. A stream that is gone or replaced (the table recreated) is found
again and read from its start; a shard iterator that expired is asked for again from the
checkpoint. A database that does not answer raises `StoreUnavailable`, the checkpoint kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from horcrux.settings import StoreSettings, store_settings
from horcrux.store.dynamodb_client import new_client, unavailable_error
from horcrux.store.mapping import game_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

GAME_PREFIX = game_pk("")
READ_LIMIT = 1000
"""Records per GetRecords call (DynamoDB's own maximum)."""
_RESTART_CODES = frozenset(
    {"ExpiredIteratorException", "TrimmedDataAccessException", "ResourceNotFoundException"}
)


@dataclass(frozen=True)
class EventChange:
    """One event item written (a stream INSERT): its game, seq and the marks the Lambdas'
    filters read."""

    game_id: str
    seq: int
    next_ai: str | None
    winner: str | None


class EventStream:
    """The events table's stream, read from `checkpoints` (shard id -> the last sequence
    number read)."""

    def __init__(
        self,
        settings: StoreSettings | None = None,
        *,
        client: DynamoDBClient | None = None,
        streams: Any = None,
    ) -> None:
        self.settings = settings or store_settings()
        self._client = client
        self._streams = streams
        self.stream_arn: str | None = None
        self._known_arn: str | None = None
        self.checkpoints: dict[str, str] = {}
        self._iterators: dict[str, str] = {}
        self.restarts = 0
        """Times the stream was found again (gone, replaced or its iterator expired)."""

    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            self._client = new_client("dynamodb", self.settings)
        return self._client

    @property
    def streams(self) -> Any:
        if self._streams is None:
            self._streams = new_client("dynamodbstreams", self.settings)
        return self._streams

    def read(self) -> list[EventChange]:
        """The changes committed since the last read (oldest first); [] if none. After a
        failed read the stream and its iterators are looked up again (from the checkpoint;
        from its start if the stream was replaced)."""
        try:
            return self._read()
        except Exception as exc:
            self.stream_arn = None
            self._iterators.clear()
            if _code(exc) in _RESTART_CODES:
                self.restarts += 1
                return []
            unavailable = unavailable_error(exc, "stream")
            if unavailable is not None:
                raise unavailable from exc
            raise

    def _read(self) -> list[EventChange]:
        if self.stream_arn is None:
            table = self.client.describe_table(TableName=self.settings.events_table)["Table"]
            arn = table.get("LatestStreamArn")
            if not arn:
                raise RuntimeError(f"the table {self.settings.events_table} has no stream")
            if arn != self._known_arn:  # a new stream (the table recreated): from its start
                self.checkpoints.clear()
            self.stream_arn = self._known_arn = arn
        changes: list[EventChange] = []
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in shards.get("Shards", []):
            changes.extend(self._read_shard(str(shard["ShardId"])))
        return changes

    def _read_shard(self, shard_id: str) -> list[EventChange]:
        iterator = self._iterators.get(shard_id)
        if iterator is None:
            after = self.checkpoints.get(shard_id)
            position: dict[str, Any] = (
                {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after}
                if after is not None
                else {"ShardIteratorType": "TRIM_HORIZON"}
            )
            iterator = self.streams.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard_id, **position
            )["ShardIterator"]
        response = self.streams.get_records(ShardIterator=iterator, Limit=READ_LIMIT)
        changes: list[EventChange] = []
        for record in response.get("Records", []):
            self.checkpoints[shard_id] = str(record["dynamodb"]["SequenceNumber"])
            change = _change(record)
            if change is not None:
                changes.append(change)
        following = response.get("NextShardIterator")
        if following:
            self._iterators[shard_id] = str(following)
        else:  # a closed shard, read to its end
            self._iterators.pop(shard_id, None)
        return changes


def _change(record: dict[str, Any]) -> EventChange | None:
    """The event change a stream record carries (None: not an event INSERT)."""
    if record.get("eventName") != "INSERT":
        return None
    image = record.get("dynamodb", {}).get("NewImage") or {}
    pk = str(image.get("pk", {}).get("S", ""))
    seq = image.get("seq", {}).get("N")
    if not pk.startswith(GAME_PREFIX) or seq is None:
        return None
    next_ai = image.get("next_ai", {}).get("S")
    winner = image.get("winner", {}).get("S")
    return EventChange(pk[len(GAME_PREFIX) :], int(seq), next_ai, winner)


def _code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    return None


__all__ = ["READ_LIMIT", "EventChange", "EventStream"]
