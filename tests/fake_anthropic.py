"""A local fake of the Anthropic Messages endpoint, for tests through the real SDK.

`serve()` (or the `fake_anthropic` fixture) runs a real HTTP server on 127.0.0.1 at an
ephemeral port, in a thread. `POST /v1/messages` answers with the next scripted reply
(`script(...)`), else with the `responder` (a function of the request body), else 500.
Every request is recorded (`requests`): path, headers and JSON body.

Replies: `tool_reply` (a valid tool_use with usage), `text_reply` (no tool_use),
`status_reply` (429 with retry-after, 500, ...), and `HANG`: the handler waits on the
server's `release` event, which `close()` sets, so the client's own timeout fires first.
Also `sample_move(schema, rng)` / `schema_accepts(instance, schema)`: a random instance
of, and a validator for, the JSON-schema subset that `make_move` tools use.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    raw: bytes | None = None  # sent as is instead of the JSON body


HANG = Reply(hang=True)


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        """The text of the last user message."""
        content = self.body["messages"][-1]["content"]
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content)


_ids = itertools.count(1)


def _message(content: list[dict[str, Any]], usage: tuple[int, int], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": "MODEL",  # replaced by the request's model when sent
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def tool_reply(
    tool_input: Any, *, usage: tuple[int, int] = (120, 30), name: str = "make_move"
) -> Reply:
    """A tool_use reply with `tool_input` as the tool's input (anything JSON)."""
    block = {
        "type": "tool_use",
        "id": f"toolu_fake{next(_ids):06d}",
        "name": name,
        "input": tool_input,
    }
    return Reply(body=_message([block], usage, "tool_use"))


def text_reply(text: str = "I would rather not.", *, usage: tuple[int, int] = (120, 8)) -> Reply:
    """A reply with no tool_use block at all."""
    return Reply(body=_message([{"type": "text", "text": text}], usage, "end_turn"))


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def status_reply(status: int, *, retry_after: str | None = None) -> Reply:
    """An Anthropic-shaped error reply (429 with `retry-after`, 500, 529, ...)."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    error = {"type": _ERROR_TYPES.get(status, "api_error"), "message": f"fake {status}"}
    return Reply(status=status, body={"type": "error", "error": error}, headers=headers)


class FakeAnthropic:
    """The server, its script and what it received."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.release = threading.Event()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll
            name="fake-anthropic",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order before the responder."""
        with self._lock:
            self._script.extend(replies)

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def close(self) -> None:
        self.release.set()  # lets hanging handlers finish
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return status_reply(500)

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(path, headers, body))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet test output

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                fake._record(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(status_reply(404))
                    return
                reply = fake._next(body)
                if reply.hang:
                    fake.release.wait()  # set by close(): no sleep stands in for it
                    self.close_connection = True
                    return
                if reply.body is not None and reply.body.get("type") == "message":
                    model = body.get("model", "?")
                    reply = Reply(
                        reply.status, {**reply.body, "model": model}, reply.headers, raw=reply.raw
                    )
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = reply.raw if reply.raw is not None else json.dumps(reply.body or {}).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_fake{next(_ids):06d}")
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

        return Handler


@contextmanager
def serve() -> Iterator[FakeAnthropic]:
    """A running fake server, closed (and every hanging handler released) on exit."""
    fake = FakeAnthropic().start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """The fake server for one test (import this fixture, or use `serve()`)."""
    with serve() as fake:
        yield fake


# ---------------------------------------------------------------- schema helpers
def sample_move(schema: dict[str, Any], rng: random.Random) -> Any:
    """A random instance of the schema subset used by `make_move` tools."""
    if "anyOf" in schema:
        return sample_move(rng.choice(schema["anyOf"]), rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return {key: sample_move(sub, rng) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        low = schema.get("minItems", 0)
        n = rng.randint(low, schema.get("maxItems", low))
        items = schema["items"]
        if schema.get("uniqueItems") and "enum" in items:
            return rng.sample(items["enum"], n)
        return [sample_move(items, rng) for _ in range(n)]
    raise ValueError(f"schema outside the make_move subset: {schema}")


def schema_accepts(instance: Any, schema: dict[str, Any]) -> bool:
    """Validate against the same subset (anyOf, const, enum, object, array, string)."""
    if "anyOf" in schema and not any(schema_accepts(instance, s) for s in schema["anyOf"]):
        return False
    if "const" in schema and instance != schema["const"]:
        return False
    if "enum" in schema and instance not in schema["enum"]:
        return False
    kind = schema.get("type")
    if kind == "string":
        return isinstance(instance, str)
    if kind == "object":
        if not isinstance(instance, dict):
            return False
        props = schema.get("properties", {})
        if any(key not in instance for key in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and set(instance) - set(props):
            return False
        return all(schema_accepts(instance[k], s) for k, s in props.items() if k in instance)
    if kind == "array":
        if not isinstance(instance, list):
            return False
        if not schema.get("minItems", 0) <= len(instance) <= schema.get("maxItems", len(instance)):
            return False
        if schema.get("uniqueItems") and len({json.dumps(i) for i in instance}) != len(instance):
            return False
        return all(schema_accepts(i, schema["items"]) for i in instance)
    return True


def schema_responder(
    seed: int = 0, usage: tuple[int, int] = (150, 25)
) -> Callable[[dict[str, Any]], Reply]:
    """A 'model' that answers each request with a random move its make_move schema allows."""
    rng = random.Random(seed)

    def respond(body: dict[str, Any]) -> Reply:
        tool = next(t for t in body["tools"] if t["name"] == "make_move")
        return tool_reply(sample_move(tool["input_schema"], rng), usage=usage)

    return respond
