"""A request's time budget for the database: a deadline for every call it makes.

The API sets one per request (`request_budget`, `DEFAULT_REQUEST_BUDGET_S`); the store
(`DynamoDbStore`) starts an attempt only while the rest of the budget covers that
attempt's read timeout, and retries only within it, so a database that is down or frozen
costs a request at most its budget (then `StoreUnavailable`: 503 with `Retry-After`),
however many calls the request would have made. The deadline is per thread (one request
per thread, as in a Lambda execution environment or one of `horcrux serve`'s threads).
Without a budget (the turn functions: the stream retries a record) a call is bounded by
its own attempts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_REQUEST_BUDGET_S = 1.6
"""The database's share of an API request: with the idempotency record's put and release
(one attempt each, `read_timeout_s`) a frozen database is a 503 within 3 s of the
request's start."""

_local = threading.local()


@contextmanager
def request_budget(seconds: float | None) -> Iterator[None]:
    """Calls to the database inside the block share `seconds` (None: no budget)."""
    before = getattr(_local, "deadline", None)
    _local.deadline = None if seconds is None else time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = before


def remaining() -> float | None:
    """Seconds left of this thread's budget (None: no budget; negative: overspent)."""
    deadline: float | None = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


__all__ = ["DEFAULT_REQUEST_BUDGET_S", "remaining", "request_budget"]
