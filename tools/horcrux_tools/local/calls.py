"""A store's calls kept for reading: `CallRecorder`, given to a `DynamoDbStore`
(`DynamoDbStore(recorder=...)`, or set `store.recorder`) by the benchmarks and the tests
that read capacity. Tool code: a Lambda keeps nothing per call."""

from __future__ import annotations

from horcrux.store.dynamodb_client import CallRecord


class CallRecorder:
    """Keeps a `CallRecord` per API call of the stores it is given to."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []

    def record(self, call: CallRecord) -> None:
        self.calls.append(call)


__all__ = ["CallRecord", "CallRecorder"]
