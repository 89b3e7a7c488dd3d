"""The DynamoDB adapter's client side: the boto3 clients (`new_client`, with our timeouts
and one attempt per call), what an error means (`unavailable_error`, the codes retried),
items as received, and each call's capacity record (`CallRecord`, given to the store's
recorder, if any). With `horcrux.store.dynamodb`, the only code that touches boto3
(imported lazily, on first use).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Protocol

from horcrux.settings import StoreSettings
from horcrux.store import budget, capacity
from horcrux.store.capacity import Item
from horcrux.store.port import StoreUnavailable

UNAVAILABLE_CODES = frozenset(
    {"InternalServerError", "ServiceUnavailable", "InternalFailure", "ServiceUnavailableException"}
)
RETRIED_CODES = frozenset(
    {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}
)
"""Refusals a call retries (within its attempts and budget), as botocore's `standard` mode
did; after the retries they are the callers' (the API: 429)."""


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


class CallSink(Protocol):
    """Where a store sends each call's `CallRecord` (`DynamoDbStore(recorder=...)`): the
    benchmarks and the tests that read capacity give one (horcrux_tools.local.calls.CallRecorder);
    without one a store records nothing."""

    def record(self, call: CallRecord) -> None: ...


def new_client(service: str, settings: StoreSettings) -> Any:
    """A boto3 client of `service` (`dynamodb`, or `dynamodbstreams` for the stream reader,
    `horcrux.store.stream`) on the settings' endpoint, with our timeouts."""
    import boto3

    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name=settings.region,
        endpoint_url=settings.endpoint_url,
        config=client_config(settings),
    )


def client_config(settings: StoreSettings) -> Any:
    """The botocore `Config` of every DynamoDB client of ours (the idempotency layer's too):
    short timeouts and one attempt per call (the store retries itself, within the
    request's budget; the idempotency layer's put and release are one attempt each)."""
    from botocore.config import Config

    return Config(
        connect_timeout=settings.connect_timeout_s,
        read_timeout=settings.read_timeout_s,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )


def check_budget(op: str, attempt_s: float) -> None:
    """StoreUnavailable(`timeout`) unless the request's budget covers one more attempt."""
    left = budget.remaining()
    if left is not None and left < attempt_s:
        raise budget.BudgetSpent(
            f"the request's time for the database is spent ({op} not sent; "
            f"{max(left, 0.0):.2f} s left, an attempt may take {attempt_s:g} s); retry shortly"
        )


def unavailable_error(exc: BaseException, op: str = "call") -> StoreUnavailable | None:
    """`StoreUnavailable` if `exc` says the database could not answer (the connection
    failed or timed out, the table is gone, a server-side fault after the retries); None
    for anything else (a condition that failed, a throttle, a bad request: the callers')."""
    from botocore import exceptions as bce

    if isinstance(exc, bce.ConnectTimeoutError | bce.ReadTimeoutError):
        return StoreUnavailable(
            f"the database did not answer in time ({op}); retry shortly", reason="timeout"
        )
    if isinstance(exc, bce.ConnectionError | bce.HTTPClientError):
        return StoreUnavailable(
            f"the database cannot be reached ({op}); retry shortly", reason="unreachable"
        )
    code = error_code(exc)
    if code == "ResourceNotFoundException":
        return StoreUnavailable(
            f"a table is missing ({op}): the database lost its data or the stack is not deployed",
            reason="tables_missing",
            retry_after_s=5,
        )
    if code in UNAVAILABLE_CODES:
        return StoreUnavailable(
            f"the database failed on its side ({code}, {op}); retry shortly",
            reason="server_error",
        )
    return None


def never_sent(exc: StoreUnavailable) -> bool:
    """Whether the call behind `exc` never reached the database: no connection could be
    made (refused, or no answer to the connect), so no request was sent."""
    from botocore import exceptions as bce

    return isinstance(exc, budget.BudgetSpent) or isinstance(
        exc.__cause__, bce.EndpointConnectionError
    )


def outcome_unknown(game_id: str, seq: int, why: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"the database stopped answering after the write of event {seq} of game {game_id} "
        f"was sent ({why}): it may or may not have been applied. Retry a move with the "
        "same Idempotency-Key (it answers the move's result if it was applied), or read "
        "the game before you play again",
        reason="outcome_unknown",
    )


def error_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def cancellation_reasons(exc: BaseException) -> list[dict[str, Any]] | None:
    """The reasons of a cancelled transaction, or None if `exc` is something else."""
    if error_code(exc) != "TransactionCanceledException":
        return None
    response: dict[str, Any] = getattr(exc, "response", {})
    reasons: list[dict[str, Any]] = response.get("CancellationReasons", [])
    return reasons


def binary_fixed(item: Item) -> Item:
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


def call_record(
    op: str,
    response: dict[str, Any],
    read: int,
    written: tuple[int, ...],
    secs: float,
    target: str,
) -> CallRecord:
    """One call's record: the capacity DynamoDB reported and the estimate from the sizes."""
    consumed = response.get("ConsumedCapacity")
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    reported = sum(float(e.get("CapacityUnits", 0.0)) for e in entries) if entries else None
    if op == "GetItem":
        item = response.get("Item")
        read = capacity.item_size(item) if item else 0
    transactional = op == "TransactWriteItems"
    return CallRecord(
        op=op,
        reported_units=reported,
        read_units=capacity.read_units(read) if op == "GetItem" else 0.0,
        write_units=sum(capacity.write_units(w, transactional=transactional) for w in written),
        item_bytes=read + sum(written),
        seconds=secs,
        target=target,
    )


__all__ = [
    "RETRIED_CODES",
    "UNAVAILABLE_CODES",
    "CallRecord",
    "CallSink",
    "binary_fixed",
    "call_record",
    "cancellation_reasons",
    "check_budget",
    "client_config",
    "error_code",
    "never_sent",
    "new_client",
    "outcome_unknown",
    "unavailable_error",
]
