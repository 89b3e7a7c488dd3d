"""The HTTP API: an `APIGatewayHttpResolver` (Powertools) over `horcrux.service.GameService`.

`build_app(service, idempotency=...)` returns the resolver; the Lambda handler calls
`app.resolve(event, context)`. docs/API.md documents the routes, errors and auth.
"""

from horcrux.api.app import MAX_BODY_BYTES, HorcruxResolver, build_app
from horcrux.api.errors import STATUS_BY_CODE, status_for
from horcrux.api.idempotency import IdempotentMoves, MemoryPersistenceLayer

__all__ = [
    "MAX_BODY_BYTES",
    "STATUS_BY_CODE",
    "HorcruxResolver",
    "IdempotentMoves",
    "MemoryPersistenceLayer",
    "build_app",
    "status_for",
]
