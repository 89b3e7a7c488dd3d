"""Powertools idempotency records in memory, for local play (Powertools ships no in-memory
layer): DynamoDB's put condition over a dict."""

from __future__ import annotations

import datetime as dt
import threading

from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import (
    STATUS_CONSTANTS,
    DataRecord,
)


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


__all__ = ["MemoryPersistenceLayer"]
