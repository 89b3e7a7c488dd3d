"""A request's time budget for the database: the time all its calls together may take.

The API sets one per request (`request_budget`, `DEFAULT_REQUEST_BUDGET_S`); the store
(`DynamoDbStore`) counts the time each attempt (and each back-off) takes against it, and
starts an attempt only while the rest covers that attempt's read timeout, so a database
that is down or frozen costs a request at most its budget (then `StoreUnavailable`: 503
with `Retry-After`), however many calls the request would have made. Only the time spent
waiting for the database counts: a request slow on its own work (a cold start's imports,
a busy CPU) is never refused for it. The budget is per thread (one request per thread,
as in a Lambda execution environment or one of `horcrux serve`'s threads). Without a
budget (the turn functions: the stream retries a record) a call is bounded by its own
attempts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from horcrux.store.port import StoreUnavailable

DEFAULT_REQUEST_BUDGET_S = 1.6
"""The database's share of an API request: with the idempotency record's put and release
(one attempt each, `read_timeout_s`) a frozen database is a 503 within 3 s of the
request's start."""


class BudgetSpent(StoreUnavailable):
    """The request's time for the database is spent: the call was not sent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="timeout")


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0


_local = threading.local()


@contextmanager
def request_budget(seconds: float | None) -> Iterator[None]:
    """Calls to the database inside the block share `seconds` (None: no budget)."""
    before = getattr(_local, "budget", None)
    _local.budget = None if seconds is None else _Budget(seconds)
    try:
        yield
    finally:
        _local.budget = before


def remaining() -> float | None:
    """Seconds left of this thread's budget (None: no budget; negative: overspent)."""
    budget: _Budget | None = getattr(_local, "budget", None)
    return None if budget is None else budget.seconds - budget.spent


def spend(seconds: float) -> None:
    """Count `seconds` spent waiting for the database against this thread's budget."""
    budget: _Budget | None = getattr(_local, "budget", None)
    if budget is not None:
        budget.spent += seconds


__all__ = ["DEFAULT_REQUEST_BUDGET_S", "BudgetSpent", "remaining", "request_budget", "spend"]
