"""The HTTP API: an `APIGatewayHttpResolver` (Powertools) over `horcrux.service.GameService`.

`build_app(service, idempotency=...)` returns the resolver; the Lambda handler calls
`app.resolve(event, context)`. docs/API.md documents the routes, errors and auth.

The names below are loaded on first use (PEP 562), so that the AI-turn handlers, which
import only `horcrux.api.turns`, do not pay for the resolver and its OpenAPI models at
cold start.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from horcrux.api.app import MAX_BODY_BYTES, HorcruxResolver, build_app
    from horcrux.api.errors import STATUS_BY_CODE, status_for
    from horcrux.api.idempotency import IdempotentMoves
    from horcrux.api.idempotency_memory import MemoryPersistenceLayer

_WHERE = {
    "MAX_BODY_BYTES": "horcrux.api.app",
    "HorcruxResolver": "horcrux.api.app",
    "build_app": "horcrux.api.app",
    "STATUS_BY_CODE": "horcrux.api.errors",
    "status_for": "horcrux.api.errors",
    "IdempotentMoves": "horcrux.api.idempotency",
    "MemoryPersistenceLayer": "horcrux.api.idempotency_memory",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'horcrux.api' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "MAX_BODY_BYTES",
    "STATUS_BY_CODE",
    "HorcruxResolver",
    "IdempotentMoves",
    "MemoryPersistenceLayer",
    "build_app",
    "status_for",
]
