"""The HTTP API: an `APIGatewayHttpResolver` (Powertools) over `horcrux.service.GameService`.

`build_app(service, idempotency=...)` returns the resolver; the Lambda handler calls
`app.resolve(event, context)`. docs/API.md documents the routes, errors and auth.

The names below are loaded on first use (PEP 562), so that the AI-turn handlers, which
import only `horcrux.api.stream_handler`, do not pay for the resolver and its OpenAPI models at
cold start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horcrux.lazy import lazy_attributes

if TYPE_CHECKING:
    from horcrux.api.app import MAX_BODY_BYTES, HorcruxResolver, build_app
    from horcrux.api.errors import STATUS_BY_CODE, status_for
    from horcrux.api.idempotency import IdempotentMoves
    from horcrux.api.idempotency_memory import MemoryPersistenceLayer

__getattr__ = lazy_attributes(
    __name__,
    {
        "MAX_BODY_BYTES": "horcrux.api.app:MAX_BODY_BYTES",
        "HorcruxResolver": "horcrux.api.app:HorcruxResolver",
        "build_app": "horcrux.api.app:build_app",
        "STATUS_BY_CODE": "horcrux.api.errors:STATUS_BY_CODE",
        "status_for": "horcrux.api.errors:status_for",
        "IdempotentMoves": "horcrux.api.idempotency:IdempotentMoves",
        "MemoryPersistenceLayer": "horcrux.api.idempotency_memory:MemoryPersistenceLayer",
    },
)


__all__ = [
    "MAX_BODY_BYTES",
    "STATUS_BY_CODE",
    "HorcruxResolver",
    "IdempotentMoves",
    "MemoryPersistenceLayer",
    "build_app",
    "status_for",
]
