"""What every route shares: the bearer token, the error response, the request body's
checks (size, UTF-8, JSON), and the OpenAPI error entries."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from pydantic import BeforeValidator

from horcrux.api import errors
from horcrux.service.errors import BadRequest, Unauthorized

HEADER_MAX_CHARS = 512
"""The longest `Authorization`, `If-Match` or `If-None-Match` value read: a longer one is
refused by the check that owns the header (401 for a token, 400 for a precondition)."""

Authorization = Annotated[
    str | None,
    Header(description="`Bearer <token>` of a seat; omit to spectate"),
]

ERRORS: dict[int, Any] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }
    for status, description in (
        (400, "a body that is not UTF-8 JSON, or nested too deep"),
        (401, "missing or wrong token"),
        (403, "the other seat's action; a private game's seat without its invite"),
        (404, "no such game (or it expired)"),
        (409, "not your turn / game over / conflict"),
        (413, "body over the limit"),
        (415, "a content type other than JSON (or a charset other than UTF-8)"),
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
    if len(authorization) > HEADER_MAX_CHARS:
        raise Unauthorized(
            f"the Authorization header is {len(authorization)} characters; a bearer token "
            f"header is at most {HEADER_MAX_CHARS}"
        )
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("expected 'Authorization: Bearer <token>'")
    return token.strip()


def _decimal_digits(value: Any) -> Any:
    """A query integer as decimal digits only (`3`, `-1`): never `3.0`, `3e0` or ` 3`."""
    if isinstance(value, str) and not _DECIMAL.fullmatch(value):
        raise ValueError(f"expected an integer in decimal digits, such as 3; got {value[:40]!r}")
    return value


_DECIMAL = re.compile(r"-?[0-9]{1,19}")
DIGITS = BeforeValidator(_decimal_digits)
"""On an integer query parameter (`Annotated[int, DIGITS, Query(...)]`): decimal digits
only, as the OpenAPI document's `integer` says."""

ETAGS_PATTERN = r'^\s*(\*\s*|(W/)?"[^",]*"\s*(,\s*(W/)?"[^",]*"\s*)*)?$'
"""`*` or a comma-separated list of quoted entity tags: what `etag_versions` accepts (the
document's pattern; the server's own check answers 400 naming the problem), or nothing:
an empty value is an empty list, no condition (RFC 9110's lists), as if the header were
absent. The length limit (`HEADER_MAX_CHARS`) is in the description only: schemathesis's
coverage phase takes a value over a `maxLength` beside a `pattern` for a valid one (its
issue 2978)."""
IfMatch = Annotated[
    str | None,
    Header(
        description='the version you last saw, as its ETag (`"7"`), or `*`: a move at any '
        "other version is refused (412, nothing written); at most 512 characters",
        json_schema_extra={"pattern": ETAGS_PATTERN},
    ),
]
IfNoneMatch = Annotated[
    str | None,
    Header(
        description='the ETag you hold (`"7"`): 304 with no body while the game is at it; '
        "at most 512 characters",
        json_schema_extra={"pattern": ETAGS_PATTERN},
    ),
]

_ENTITY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*')


def etag(version: int) -> str:
    """A game's ETag: its version, quoted (a strong validator)."""
    return f'"{version}"'


def etag_versions(value: str, name: str = "If-Match") -> frozenset[int] | None:
    """The versions an `If-Match` / `If-None-Match` value names (None: `*`, any version).

    A weak tag (`W/"7"`) names the same version (compared weakly); a well-formed tag the
    API never issues names none. BadRequest (400) if the value is not `*` or a
    comma-separated list of quoted tags, or longer than `HEADER_MAX_CHARS`."""
    if len(value) > HEADER_MAX_CHARS:
        raise BadRequest(f"{name} is {len(value)} characters; it may be at most {HEADER_MAX_CHARS}")
    if value.strip() == "*":
        return None
    versions: set[int] = set()
    for part in value.split(","):
        match = _ENTITY_TAG.fullmatch(part)
        if match is None:
            raise BadRequest(
                f'{name} must be * or quoted ETags such as "7" (the game\'s version); '
                f"got {value[:80]!r}"
            )
        tag = match.group(2)
        if tag.isdigit() and len(tag) <= 16:
            versions.add(int(tag))
    return frozenset(versions)


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


MAX_JSON_DEPTH = 32
"""The deepest nesting a body may have (the API's own bodies are 3 deep)."""

ACCEPTED_TYPES = (
    "application/json",
    "application/*+json",
    "application/x-www-form-urlencoded",
    "text/plain",
)
"""The content types a body may declare (all read as JSON; none declared is fine too):
`application/x-www-form-urlencoded` is curl's `-d`, `text/plain` a browser's simple
request."""

_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian BOM)"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian BOM)"),
    (b"\xef\xbb\xbf", "UTF-8 with a byte order mark"),
    (b"\xfe\xff", "UTF-16 (big-endian BOM)"),
    (b"\xff\xfe", "UTF-16 (little-endian BOM)"),
)


def _wide_encoding(body: bytes) -> str | None:
    """The encoding a body is in if it is UTF-16/32 (by its BOM, or by the NUL bytes an
    ASCII JSON text has in it: RFC 4627's detection), or UTF-8 with a BOM; else None."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    head = body[:4]
    if len(head) >= 4 and head[:3] == b"\x00\x00\x00":
        return "UTF-32 (big-endian)"
    if len(head) >= 4 and head[1:] == b"\x00\x00\x00":
        return "UTF-32 (little-endian)"
    if len(head) >= 2 and head[0] == 0:
        return "UTF-16 (big-endian)"
    if len(head) >= 2 and head[1] == 0:
        return "UTF-16 (little-endian)"
    return None


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep `text`'s arrays and objects nest, counted by one linear scan that skips
    strings (and their escapes); it stops as soon as the depth passes `limit`. Nothing is
    parsed, so a hostile body cannot exhaust the parser's recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def json_text(body: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> str:
    """The body as JSON text, whatever the request's content type said; BadBody if it is
    not UTF-8 (UTF-16/32, a byte order mark), nested deeper than `max_depth` or not JSON
    (curl's `-d` sends JSON as `application/x-www-form-urlencoded`)."""
    wide = _wide_encoding(body)
    if wide is not None:
        raise BadBody("invalid_body", f"the body is {wide}, not UTF-8 text; send UTF-8 JSON")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(
            "invalid_body", f"the body is not UTF-8 text (byte {exc.start}); send JSON"
        ) from None
    if json_depth(text, max_depth) > max_depth:
        raise BadBody(
            "invalid_json", f"the body is nested deeper than {max_depth} levels; send flat JSON"
        )
    try:
        json.loads(text)
    except ValueError as exc:
        where = getattr(exc, "msg", str(exc))
        pos = getattr(exc, "pos", None)
        at = f" at character {pos}" if pos is not None else ""
        raise BadBody("invalid_json", f"the body is not valid JSON: {where}{at}") from None
    return text


def _accepted_type(media_type: str) -> bool:
    if media_type in ("application/json", "application/x-www-form-urlencoded", "text/plain"):
        return True
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and subtype.endswith("+json") and len(subtype) > len("+json")


def check_content_type(value: str | None) -> None:
    """BadBody(`unsupported_media_type`, 415) unless the body's declared type is one of
    `ACCEPTED_TYPES` (any case, any parameters) with no charset or `charset=utf-8`."""
    if value is None or not value.strip():
        return
    media_type, *params = (part.strip() for part in value.split(";"))
    media_type = media_type.lower()
    accepted = ", ".join(ACCEPTED_TYPES)
    if not _accepted_type(media_type):
        raise BadBody(
            "unsupported_media_type",
            f"content type {media_type!r} is not accepted; send JSON as one of: {accepted}",
        )
    for param in params:
        name, _, raw = param.partition("=")
        charset = raw.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            raise BadBody(
                "unsupported_media_type",
                f"charset {charset!r} is not accepted; send UTF-8 (charset=utf-8 or none)",
            )


def header(event: Mapping[str, Any], name: str) -> str | None:
    """A request header's value (names compared case-insensitively; None if absent)."""
    wanted = name.lower()
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == wanted:
            return str(value)
    return None


def request_method(event: Mapping[str, Any]) -> str:
    """The request's HTTP method, upper-case (payload 2.0, or 1.0's `httpMethod`)."""
    http = (event.get("requestContext") or {}).get("http") or {}
    return str(http.get("method") or event.get("httpMethod") or "GET").upper()


def request_path(event: Mapping[str, Any]) -> str:
    """The request's path as sent (still percent-encoded)."""
    http = (event.get("requestContext") or {}).get("http") or {}
    return str(event.get("rawPath") or http.get("path") or event.get("path") or "/")


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
    """`WWW-Authenticate` on a 401; `Retry-After` (seconds) on a 429 or 503, and on any
    other error given one (a 409 `idempotency_in_progress`: the lock's remaining time)."""
    if status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if status in (429, 503):
        return {"Retry-After": str(retry_after_s or RETRY_AFTER_S)}
    if retry_after_s is not None:
        return {"Retry-After": str(retry_after_s)}
    return None


def error_response(
    code: str, message: str, *, retry_after_s: int | None = None, **extra: Any
) -> Response[Any]:
    status = errors.status_for(code)
    headers = error_headers(status, retry_after_s)
    return json_response(status, errors.error_body(code, message, **extra), headers)


def proxy_error(
    code: str, message: str, *, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """An error as a Lambda proxy response (answered before routing)."""
    status = errors.status_for(code)
    return {
        "statusCode": status,
        "headers": {
            "Content-Type": content_types.APPLICATION_JSON,
            **(error_headers(status) or {}),
            **(headers or {}),
        },
        "body": errors.error_json(code, message),
        "isBase64Encoded": False,
    }


__all__ = [
    "ACCEPTED_TYPES",
    "DIGITS",
    "ERRORS",
    "HEADER_MAX_CHARS",
    "MAX_JSON_DEPTH",
    "Authorization",
    "BadBody",
    "IfMatch",
    "IfNoneMatch",
    "bearer",
    "body_size",
    "check_content_type",
    "error_response",
    "etag",
    "etag_versions",
    "header",
    "json_depth",
    "json_response",
    "json_text",
    "proxy_error",
    "raw_body",
    "request_method",
    "request_path",
]
