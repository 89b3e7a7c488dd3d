"""What every route shares: the bearer token, the error response, the request body's
checks (size, UTF-8, JSON), and the OpenAPI error entries."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header

from horcrux.api import errors
from horcrux.service.errors import Unauthorized

Authorization = Annotated[
    str | None,
    Header(max_length=512, description="`Bearer <token>` of a seat; omit to spectate"),
]

ERRORS: dict[int, Any] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }
    for status, description in (
        (400, "a body that is not UTF-8 JSON"),
        (401, "missing or wrong token"),
        (403, "the other seat's action"),
        (404, "no such game (or it expired)"),
        (409, "not your turn / game over / conflict"),
        (413, "body over the limit"),
        (422, "invalid request or illegal move"),
        (429, "throttled"),
        (503, "the database is unavailable; retry after Retry-After seconds"),
    )
}
"""The error answers every route documents (the body is `ErrorResponse`)."""


def bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (None if there is none)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("expected 'Authorization: Bearer <token>'")
    return token.strip()


def raw_body(event: Mapping[str, Any]) -> bytes:
    """The request body's bytes, decoded if API Gateway base64-encoded it."""
    body = event.get("body")
    if not body:
        return b""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=False)
        except (binascii.Error, ValueError):
            return str(body).encode()
    return str(body).encode()


def body_size(event: Mapping[str, Any]) -> int:
    """The request body's size in bytes, decoded if API Gateway base64-encoded it."""
    return len(raw_body(event))


class BadBody(ValueError):
    """A body that is not UTF-8 or not JSON: `code` and `message` for the 400."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def json_text(body: bytes) -> str:
    """The body as JSON text, whatever the request's content type said; BadBody if it is
    not UTF-8 or not JSON (curl's `-d` sends JSON as `application/x-www-form-urlencoded`)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(
            "invalid_body", f"the body is not UTF-8 text (byte {exc.start}); send JSON"
        ) from None
    try:
        json.loads(text)
    except ValueError as exc:
        where = getattr(exc, "msg", str(exc))
        pos = getattr(exc, "pos", None)
        at = f" at character {pos}" if pos is not None else ""
        raise BadBody("invalid_json", f"the body is not valid JSON: {where}{at}") from None
    return text


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers=headers,
    )


RETRY_AFTER_S = 1
"""`Retry-After` of a 429 or 503 that names no other delay."""


def error_headers(status: int, retry_after_s: int | None = None) -> dict[str, str] | None:
    """`WWW-Authenticate` on a 401; `Retry-After` (seconds) on a 429 or 503."""
    if status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if status in (429, 503):
        return {"Retry-After": str(retry_after_s or RETRY_AFTER_S)}
    return None


def error_response(
    code: str, message: str, *, retry_after_s: int | None = None, **extra: Any
) -> Response[Any]:
    status = errors.status_for(code)
    headers = error_headers(status, retry_after_s)
    return json_response(status, errors.error_body(code, message, **extra), headers)


def proxy_error(code: str, message: str) -> dict[str, Any]:
    """An error as a Lambda proxy response (answered before routing)."""
    status = errors.status_for(code)
    return {
        "statusCode": status,
        "headers": {
            "Content-Type": content_types.APPLICATION_JSON,
            **(error_headers(status) or {}),
        },
        "body": errors.error_json(code, message),
        "isBase64Encoded": False,
    }


__all__ = [
    "ERRORS",
    "Authorization",
    "BadBody",
    "bearer",
    "body_size",
    "error_response",
    "json_response",
    "json_text",
    "proxy_error",
    "raw_body",
]
