"""Idempotent moves: an `Idempotency-Key` makes a retried move return the first response.

Powertools idempotency (`idempotent_function`) over a persistence layer: DynamoDB in AWS
(`DynamoDBPersistenceLayer`, table from `HORCRUX_IDEMPOTENCY_TABLE`, TTL attribute
`expiration`; built by the handler, lazily, so tests can start moto first) or
`horcrux.api.idempotency_memory.MemoryPersistenceLayer` for local play.

The key is scoped by game id + seat + the header's value (`[game_id, seat, key]`), so two
games or two seats never collide; the move itself is the payload that is validated, so the
same key with a different move is refused (`idempotency_key_reused`, 422). Only successful
responses are stored: an error deletes the in-progress record and nothing was written,
but for a 503 `outcome_unknown` (the database lost the answer to a sent move): then the
retry runs again and the move finds its own earlier write by its id (`moves.play_move`'s
`write_id`, a digest of the game, seat, key and move) and answers it.

A request holds its key's in-progress record (the lock) for at most `LOCK_S` seconds (the
layer is told the Lambda has no more time left than that): a request that fails releases
the record (Powertools deletes it), and when the release itself cannot be written (the
database down) the lock expires in seconds, not at the function's timeout. Meanwhile a
retry with the key is a 409 `idempotency_in_progress` whose `Retry-After` is the lock's
remaining time.

Powertools' idempotency package imports boto3 (about 90 ms): it is imported at the first
move with a key, not when the API function starts, and its two refusals become domain
errors here, so the error map answers them like any other.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from horcrux.errors import HorcruxError
from horcrux.store.port import StoreUnavailable

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import (
        BasePersistenceLayer,
        IdempotencyConfig,
    )
    from aws_lambda_powertools.utilities.typing import LambdaContext

DEFAULT_EXPIRY_SECONDS = 24 * 3600
KEY_PREFIX = "horcrux-move"
LOCK_S = 5.0
"""The longest a request holds its key's in-progress record: over a move's database budget
(`horcrux.store.budget`) and its CPU, far under the function's timeout."""

Payload = dict[str, Any]


class IdempotencyKeyReused(HorcruxError):
    """The same Idempotency-Key came with a different move."""

    code = "idempotency_key_reused"


class IdempotencyInProgress(HorcruxError):
    """A request with this Idempotency-Key is still running (or failed and could not
    release its lock): retry after `retry_after_s`, the lock's remaining time."""

    code = "idempotency_in_progress"

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LockContext:
    """The Lambda context as the idempotency layer reads it: at most `lock_s` left, so the
    in-progress record it writes expires within `lock_s`."""

    def __init__(self, context: Any, lock_s: float = LOCK_S) -> None:
        self._context = context
        self._lock_ms = int(lock_s * 1000)

    def get_remaining_time_in_millis(self) -> int:
        if self._context is None:
            return self._lock_ms
        return min(int(self._context.get_remaining_time_in_millis()), self._lock_ms)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class IdempotentMoves:
    """Runs a move at most once per (game, seat, Idempotency-Key)."""

    def __init__(
        self,
        persistence: Callable[[], BasePersistenceLayer],
        *,
        expires_after_seconds: int = DEFAULT_EXPIRY_SECONDS,
        lock_s: float = LOCK_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._factory = persistence
        self._expires = expires_after_seconds
        self.lock_s = lock_s
        self._clock = clock
        self._layer: BasePersistenceLayer | None = None
        self._wrapped: Callable[..., Payload] | None = None
        self._config: IdempotencyConfig | None = None

    @property
    def config(self) -> IdempotencyConfig:
        if self._config is None:
            from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

            self._config = IdempotencyConfig(
                event_key_jmespath="[game_id, seat, key]",
                payload_validation_jmespath="move",
                raise_on_no_idempotency_key=True,
                expires_after_seconds=self._expires,
            )
        return self._config

    def _function(self) -> Callable[..., Payload]:
        if self._wrapped is None:  # the persistence layer (a boto3 client) is built lazily
            from aws_lambda_powertools.utilities.idempotency import idempotent_function

            def apply_move(request: Payload, run: Callable[[], Payload]) -> Payload:
                return run()

            self._layer = self._factory()
            self._wrapped = idempotent_function(
                apply_move,
                data_keyword_argument="request",
                persistence_store=self._layer,
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
        self.config.register_lambda_context(LockContext(context, self.lock_s))  # type: ignore[arg-type]
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyPersistenceLayerError,
            IdempotencyValidationError,
        )

        request = {"game_id": game_id, "seat": seat, "key": key, "move": move}
        try:
            return self._function()(request=request, run=run)
        except IdempotencyValidationError:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used with a different move; use a new key per move"
            ) from None
        except IdempotencyAlreadyInProgressError:
            left = self._lock_left(request)
            raise IdempotencyInProgress(
                "a request with this Idempotency-Key is still running, or failed and could "
                f"not release its lock; retry in {left} s",
                retry_after_s=left,
            ) from None
        except IdempotencyPersistenceLayerError as exc:
            unavailable = _unavailable_cause(exc)
            if unavailable is None:
                raise
            raise unavailable from exc

    def _lock_left(self, request: Payload) -> int:
        """Whole seconds (at least 1) until the key's in-progress record expires; the
        longest a lock lasts if the record cannot be read."""
        try:
            record = self._layer.get_record(data=request) if self._layer is not None else None
        except Exception:  # gone meanwhile, or the database down: the lock's longest
            record = None
        expiry = getattr(record, "in_progress_expiry_timestamp", None)
        if expiry is None:
            return max(1, math.ceil(self.lock_s))
        return max(1, math.ceil(int(expiry) / 1000 - self._clock()))


def _unavailable_cause(exc: BaseException) -> StoreUnavailable | None:
    """The database outage behind a persistence-layer error (its cause chain), if any: the
    idempotency table is as unavailable as the game tables then (503, not 500)."""
    from horcrux.store.dynamodb_client import unavailable_error

    seen: BaseException | None = exc.__cause__
    while seen is not None:
        if isinstance(seen, StoreUnavailable):
            return seen
        found = unavailable_error(seen, "idempotency")
        if found is not None:
            return found
        seen = seen.__cause__
    return None
