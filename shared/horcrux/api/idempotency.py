"""Idempotent moves: an `Idempotency-Key` makes a retried move return the first response.

Powertools idempotency (`idempotent_function`) over a persistence layer: DynamoDB in AWS
(`DynamoDBPersistenceLayer`, table from `HORCRUX_IDEMPOTENCY_TABLE`, TTL attribute
`expiration`; built by the handler, lazily, so tests can start moto first) or
`MemoryPersistenceLayer` below for local play (Powertools ships no in-memory layer).

The key is scoped by game id + seat + the header's value (`[game_id, seat, key]`), so two
games or two seats never collide; the move itself is the payload that is validated, so the
same key with a different move is refused (`idempotency_key_reused`). Only successful
responses are stored: an error deletes the in-progress record and nothing was written.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import (
    STATUS_CONSTANTS,
    DataRecord,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

DEFAULT_EXPIRY_SECONDS = 24 * 3600
KEY_PREFIX = "horcrux-move"

Payload = dict[str, Any]


class MemoryPersistenceLayer(BasePersistenceLayer):
    """Powertools idempotency records in a dict, with DynamoDB's put condition."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        self.records: dict[str, DataRecord] = {}

    def _get_record(self, idempotency_key: str) -> DataRecord:
        with self._lock:
            try:
                return self.records[idempotency_key]
            except KeyError:
                raise IdempotencyItemNotFoundError from None

    def _put_record(self, data_record: DataRecord) -> None:
        now = dt.datetime.now().timestamp()
        with self._lock:
            old = self.records.get(data_record.idempotency_key)
            free = (
                old is None
                or (old.expiry_timestamp or 0) < now
                or (
                    old.status == STATUS_CONSTANTS["INPROGRESS"]
                    and old.in_progress_expiry_timestamp is not None
                    and old.in_progress_expiry_timestamp < now * 1000
                )
            )
            if not free:
                assert old is not None
                self._validate_payload(data_payload=data_record, stored_data_record=old)
                raise IdempotencyItemAlreadyExistsError(old_data_record=old)
            self.records[data_record.idempotency_key] = data_record

    def _update_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self.records[data_record.idempotency_key] = data_record

    def _delete_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self.records.pop(data_record.idempotency_key, None)


class IdempotentMoves:
    """Runs a move at most once per (game, seat, Idempotency-Key)."""

    def __init__(
        self,
        persistence: Callable[[], BasePersistenceLayer],
        *,
        expires_after_seconds: int = DEFAULT_EXPIRY_SECONDS,
    ) -> None:
        self._factory = persistence
        self._wrapped: Callable[..., Payload] | None = None
        self.config = IdempotencyConfig(
            event_key_jmespath="[game_id, seat, key]",
            payload_validation_jmespath="move",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=expires_after_seconds,
        )

    def _function(self) -> Callable[..., Payload]:
        if self._wrapped is None:  # the persistence layer (a boto3 client) is built lazily

            def apply_move(request: Payload, run: Callable[[], Payload]) -> Payload:
                return run()

            self._wrapped = idempotent_function(
                apply_move,
                data_keyword_argument="request",
                persistence_store=self._factory(),
                config=self.config,
                key_prefix=KEY_PREFIX,
            )
        return self._wrapped

    def run(
        self,
        *,
        game_id: str,
        seat: str,
        key: str,
        move: Payload,
        run: Callable[[], Payload],
        context: LambdaContext | None = None,
    ) -> Payload:
        """`run()`'s response, or the stored response of the first call with this key."""
        if context is not None:
            self.config.register_lambda_context(context)
        request = {"game_id": game_id, "seat": seat, "key": key, "move": move}
        return self._function()(request=request, run=run)
