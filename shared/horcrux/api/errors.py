"""ONE map from domain error codes to HTTP status, and the error body every response uses.

Every error answers `{"error": <code>, "message": <text naming the problem>}` (plus a few
documented extras: `to_move` on `not_your_turn`, `game` on `conflict`, `detail` on
`validation_error`, `version`/`turn`/`to_move` on `precondition_failed` and
`stale_version`). Codes are the `code` of `horcrux.errors.HorcruxError` subclasses, or
the API's own (`invalid_json`, `payload_too_large`, `route_not_found`, ...).
"""

from __future__ import annotations

import json
from typing import Any

STATUS_BY_CODE: dict[str, int] = {
    # 400: the request is not even JSON (or not UTF-8 text)
    "invalid_json": 400,
    "invalid_body": 400,
    "bad_request": 400,
    "unsupported_transfer_encoding": 400,  # local server: a transfer coding but `chunked`
    # 401: no token, or a token that holds no seat of this game
    "unauthorized": 401,
    # 403: a valid token playing the other seat's action
    "wrong_seat": 403,
    "forbidden": 403,  # not the operator's token (memory routes), or out of its scope
    "invite_required": 403,  # a private game's seat, joined without ?invite=
    "wrong_invite": 403,  # a private game's seat, joined with another game's code
    # 404: no such game (also an expired one), no such route
    "not_found": 404,
    "route_not_found": 404,
    # 405: the path exists, not with this method (the answer carries `Allow`)
    "method_not_allowed": 405,
    # 408: the local server's read deadline (a request trickled in too slowly)
    "request_timeout": 408,
    # 409: the request is fine but the game is not in a state to accept it
    "not_your_turn": 409,
    "game_over": 409,
    "conflict": 409,
    "seat_taken": 409,
    "waiting_for_player": 409,
    "not_over": 409,
    "idempotency_in_progress": 409,
    "stale_version": 409,  # ?expected_version= names a version the game is no longer at
    "memory_full": 409,  # a memory scope's corrections are at their budget: retire one first
    "memory_unreadable": 409,  # a stored memory item that does not decode: rebuilt on a write
    # 412: `If-Match` names a version the game is no longer at
    "precondition_failed": 412,
    # 413: a body over the limit
    "payload_too_large": 413,
    # 431: request headers over the local server's limit (waitress refuses them)
    "headers_too_large": 431,
    # 415: a declared content type that is not JSON, or a charset other than UTF-8
    "unsupported_media_type": 415,
    # 422: well-formed JSON that is not an acceptable request or a legal move
    "validation_error": 422,
    "invalid_request": 422,
    "unknown_brain": 422,
    "unknown_scope": 422,  # /memory: an agent that reads no memory, an opponent no brain/player
    "not_actionable": 422,  # /memory/corrections: names nothing the planner acts on
    "unknown_item": 404,  # /memory: no such item in the scope
    "llm_unavailable": 422,
    "illegal_action": 422,
    "unparsable_move": 422,
    "unknown_location": 422,
    "no_attacks_left": 422,
    "ally_unavailable": 422,
    "duplicate_location": 422,
    "invalid_relocation": 422,
    "occupied_location": 422,
    "no_charges_left": 422,
    "idempotency_key_reused": 422,
    # 429: DynamoDB throttled us; retry with backoff
    "throttled": 429,
    # 5xx
    "item_too_large": 500,
    "internal_error": 500,
    # the base classes' codes: raised as such, they are a bug (every refusal has its own)
    "horcrux_error": 500,
    "service_error": 500,
    "store_error": 500,
    "compaction_error": 500,
    # the AI-turn functions only: too little time left, the stream retries the record
    "deadline_too_short": 503,
    # the database is down, too slow or lost its tables: retry after `Retry-After`
    "store_unavailable": 503,
}

THROTTLING_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
    }
)


def status_for(code: str) -> int:
    """The HTTP status of an error code (500 for a code nobody mapped: a bug)."""
    return STATUS_BY_CODE.get(code, 500)


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}


def error_json(code: str, message: str, **extra: Any) -> str:
    return json.dumps(error_body(code, message, **extra), separators=(",", ":"))


def aws_error_code(exc: BaseException) -> str | None:
    """The AWS error code of a client error (read duck-typed: no SDK import here)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None
