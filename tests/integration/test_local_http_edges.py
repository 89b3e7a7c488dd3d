"""`horcrux serve`'s HTTP server (waitress, `server.LocalHttpServer`) at the edges it answers
itself, before the API: a transfer coding it does not read is the client's 400, a declared
body over the limit with `Expect: 100-continue` is an immediate 413 (no "100 Continue"),
both with the API's JSON error body and `nosniff`. A stub WSGI app stands in for the API:
it must never be called. The request log shows query keys, never their values."""

from __future__ import annotations

import io
import json
import re
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from horcrux.api.app import MAX_BODY_BYTES
from horcrux_tools.local.server import LocalHttpServer, ServerOptions
from horcrux_tools.local.wsgi import ApiGatewayWsgi

SOCKET_TIMEOUT_S = 30.0  # a hang fails the test instead of blocking it


@pytest.fixture
def server() -> Iterator[tuple[LocalHttpServer, list[str]]]:
    called: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        called.append(str(environ.get("PATH_INFO")))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    http = LocalHttpServer(app, "127.0.0.1", 0, ServerOptions(threads=2))
    loop = threading.Thread(target=http.serve_forever, daemon=True)
    loop.start()
    try:
        yield http, called
    finally:
        http.stop()
        http.shutdown_threads()


def exchange(http: LocalHttpServer, request: bytes) -> bytes:
    """Send `request`, then read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", http.port), timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def json_error(reply: bytes) -> tuple[bytes, dict[str, Any]]:
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.lower(), json.loads(body)


def test_a_transfer_coding_other_than_chunked_is_a_json_400(
    server: tuple[LocalHttpServer, list[str]],
) -> None:
    http, called = server
    body = b"5\r\nhello\r\n0\r\n\r\n"
    request = (
        b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: gzip, chunked\r\n\r\n" + body
    )
    reply = exchange(http, request)
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    head, error = json_error(reply)
    assert error["error"] == "unsupported_transfer_encoding"
    assert "Transfer-Encoding other than chunked" in error["message"]
    assert b"content-type: application/json" in head
    assert b"x-content-type-options: nosniff" in head
    assert called == []


def test_a_declared_body_over_the_limit_with_expect_continue_is_an_immediate_413(
    server: tuple[LocalHttpServer, list[str]],
) -> None:
    http, called = server
    request = (
        b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10000000\r\nExpect: 100-continue\r\n\r\n"
    )
    reply = exchange(http, request)  # no body is ever sent: a hang would time out
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"100 Continue" not in reply
    head, error = json_error(reply)
    assert error["error"] == "payload_too_large"
    assert b"x-content-type-options: nosniff" in head
    assert called == []


def test_a_declared_body_over_the_apis_limit_with_expect_continue_is_an_immediate_413(
    server: tuple[LocalHttpServer, list[str]],
) -> None:
    # under waitress's 1 MiB but over the API's own limit: refused before it is sent
    http, called = server
    request = (
        b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {MAX_BODY_BYTES + 1}\r\nExpect: 100-continue\r\n\r\n".encode()
    )
    reply = exchange(http, request)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"100 Continue" not in reply
    _, error = json_error(reply)
    assert error["error"] == "payload_too_large"
    assert str(MAX_BODY_BYTES) in error["message"]
    assert called == []


def test_a_body_within_the_limit_with_expect_continue_still_gets_100_continue(
    server: tuple[LocalHttpServer, list[str]],
) -> None:
    http, called = server
    with socket.create_connection(("127.0.0.1", http.port), timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(
            b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
            b"Expect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        interim = sock.recv(64)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim
        sock.sendall(b"{}")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert b"HTTP/1.1 200" in reply
    assert called == ["/games"]


# ---------------------------------------------------------------- the request log
def test_the_request_log_shows_query_keys_never_their_values() -> None:
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        events.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    log = io.StringIO()
    app = ApiGatewayWsgi(handler, log_to=log)
    invite = "s3cr3t-invite-code-0123456789"
    token = "tok_" + "A" * 40
    targets = [
        f"/games/g1/seats/harry?invite={invite}",
        f"/games?status=open&limit=5&cursor={invite}",
        f"/games/g1?{token}",  # a token sent as a key: shown as *
        "/games/g1",
    ]
    for target in targets:
        path, _, query = target.partition("?")
        environ = {
            "REQUEST_METHOD": "GET",
            "REQUEST_URI": target,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(b""),
        }
        body = b"".join(app(environ, lambda status, headers: None))
        assert body == b"{}"
    lines = log.getvalue().splitlines()
    assert [line.split(" -> ")[0] for line in lines] == [
        "GET /games/g1/seats/harry?invite",
        "GET /games?status&limit&cursor",
        "GET /games/g1?*",
        "GET /games/g1",
    ]
    assert invite not in log.getvalue() and token not in log.getvalue()
    assert "open" not in log.getvalue()
    # the handler itself still gets the whole query
    assert events[0]["queryStringParameters"] == {"invite": invite}


def test_head_through_the_bridge_keeps_the_apis_content_length_and_sends_no_body() -> None:
    # the API answers HEAD with GET's headers, Content-Length included, and no body
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Content-Length": "17"}
        return {"statusCode": 200, "headers": headers, "body": ""}

    app = ApiGatewayWsgi(handler)
    sent: list[tuple[str, list[tuple[str, str]]]] = []
    environ = {
        "REQUEST_METHOD": "HEAD",
        "REQUEST_URI": "/games/g1",
        "PATH_INFO": "/games/g1",
        "QUERY_STRING": "",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(b""),
    }
    body = b"".join(app(environ, lambda status, headers: sent.append((status, headers))))
    assert body == b""
    lengths = [v for k, v in sent[0][1] if k.lower() == "content-length"]
    assert lengths == ["17"]


# ---------------------------------------------------------------- never from the request path
class RecordingAi:
    """The AI workers' entry points, recorded (the app may only ask for their counts)."""

    failures = 0

    def __init__(self) -> None:
        self.calls: list[str] = []

    def notice(self, status: int, body: bytes) -> None:
        self.calls.append(f"notice {status}")

    def enqueue(self, game_id: str) -> None:
        self.calls.append(f"enqueue {game_id}")

    def pending(self) -> int:
        return 0

    def retrying(self) -> int:
        return 0


def test_the_request_path_never_queues_an_ai_turn() -> None:
    """AI turns come from the committed events (the local stream), never from an answer:
    a move answered 503, a game that shows an AI seat to move, a read, a refusal."""
    replies = iter(
        [
            (503, "{}"),
            (
                200,
                '{"game_id": "g2", "status": "active", "to_move": "voldemort", '
                '"seats": {"voldemort": {"kind": "ai"}}}',
            ),
            (200, '{"game_id": "g3", "status": "over"}'),
            (409, "{}"),
        ]
    )

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        status, body = next(replies)
        return {"statusCode": status, "headers": {}, "body": body}

    ai = RecordingAi()
    app = ApiGatewayWsgi(handler, ai=ai)  # type: ignore[arg-type]
    answered = []
    for method, target in (
        ("POST", "/games/g%201/moves"),
        ("POST", "/games/g2/moves"),
        ("GET", "/games/g3"),
        ("POST", "/games/g4/moves"),
        ("GET", "/healthz"),
    ):
        environ = {
            "REQUEST_METHOD": method,
            "REQUEST_URI": target,
            "PATH_INFO": target,
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(b""),
        }
        b"".join(app(environ, lambda status, headers: answered.append(status)))
    assert [s.split()[0] for s in answered] == ["503", "200", "200", "409", "200"]
    assert ai.calls == []


# ---------------------------------------------------------------- log lines, the create limit
def _environ(method: str, target: str, body: bytes = b"", client: str = "127.0.0.1") -> Any:
    path, _, query = target.partition("?")
    return {
        "REQUEST_METHOD": method,
        "REQUEST_URI": target,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "REMOTE_ADDR": client,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }


class SplitWrites(io.StringIO):
    """A stream whose every write lets another thread in before it lands (as a terminal's
    pipe does): two writes per line interleave unless a line is one write."""

    def write(self, text: str) -> int:
        threading.Event().wait(0.001)
        return super().write(text)


def test_every_request_is_one_whole_log_line_under_concurrency() -> None:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "headers": {}, "body": "{}"}

    log = SplitWrites()
    app = ApiGatewayWsgi(handler, log_to=log)
    requests = 16 * 25

    def client(number: int) -> None:
        for i in range(25):
            b"".join(app(_environ("GET", f"/games/g{number}-{i}"), lambda *a: None))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOCKET_TIMEOUT_S)
    lines = log.getvalue().split("\n")
    assert lines[-1] == ""  # the text ends with a line's end
    lines = lines[:-1]
    assert len(lines) == requests
    shape = re.compile(r"GET /games/g\d+-\d+ -> 200 \(\d+ ms\)")
    assert all(shape.fullmatch(line) for line in lines), [
        line for line in lines if not shape.fullmatch(line)
    ][:3]


def test_the_create_limit_counts_valid_requests_only() -> None:
    """After more malformed creates than the burst, a client still gets the 4xx naming its
    mistake, and then its valid creates, up to the burst, before a 429."""
    from horcrux_tools.local.wsgi import Rate, RateLimiter

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            json.loads(event.get("body") or "")
        except ValueError:
            return {"statusCode": 400, "headers": {}, "body": '{"error": "invalid_json"}'}
        return {"statusCode": 201, "headers": {}, "body": "{}"}

    frozen = 100.0
    limiter = RateLimiter(Rate(50, 100), Rate(1, 3), clock=lambda: frozen)
    app = ApiGatewayWsgi(handler, limiter=limiter)
    statuses: list[str] = []

    def create(body: bytes) -> str:
        sent: list[str] = []
        b"".join(app(_environ("POST", "/games", body), lambda s, h: sent.append(s)))
        return sent[0].split()[0]

    statuses = [create(b"{not json") for _ in range(10)]
    assert statuses == ["400"] * 10  # never a 429: they took nothing
    valid = [create(b"{}") for _ in range(4)]
    assert valid == ["201", "201", "201", "429"]  # the burst (3), then the limit


def test_lobby_pages_computed_draw_on_a_server_wide_budget() -> None:
    """Clients on other addresses, each within its own limit, share one budget for the
    lobby pages the database must compute; a page from the cache costs it nothing."""
    from horcrux_tools.local.guard import CostBudget, LobbyCache

    computed: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        computed.append(event["rawQueryString"])
        return {"statusCode": 200, "headers": {}, "body": '{"games": []}'}

    frozen = 100.0
    budget = CostBudget(1.0, 12.0, clock=lambda: frozen)
    cache = LobbyCache(60.0, clock=lambda: frozen)
    app = ApiGatewayWsgi(handler, read_budget=budget, lobby_cache=cache)

    def page(query: str, client: str) -> tuple[str, dict[str, str], bytes]:
        sent: list[tuple[str, list[tuple[str, str]]]] = []
        body = b"".join(
            app(_environ("GET", f"/games?{query}", client=client), lambda *a: sent.append(a))
        )
        return sent[0][0].split()[0], dict(sent[0][1]), body

    first = page("status=active&limit=100", "127.0.0.2")  # costs 11 of 12
    assert first[0] == "200"
    second = page("status=active&limit=99", "127.0.0.3")  # another address: 10.9 > 1 left
    assert second[0] == "429"
    assert second[1]["Retry-After"] == "10"
    assert "for all clients" in json.loads(second[2])["message"]
    cached = page("status=active&limit=100", "127.0.0.4")  # the cached page: free
    assert cached[0] == "200"
    small = page("status=open&limit=0", "127.0.0.5")  # cost 1.1: still over what is left
    assert small[0] == "429"
    assert computed == ["status=active&limit=100"]
    assert budget.stats() == {"spent": 11.0, "refused": 2}
