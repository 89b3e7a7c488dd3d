"""`horcrux serve` as a real subprocess under hostile HTTP: clients that leave early, 40 at
once, chunked and conflicting bodies, half-sent requests, the rate limits, SIGTERM with AI
games running."""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from horcrux_tools.local.client import HorcruxClient
from horcrux_tools.local.harness import ServeProcess, children, get_json, request_json

pytestmark = pytest.mark.server

HUMANS = {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}}


@pytest.fixture(scope="module")
def served() -> Iterator[ServeProcess]:
    server = ServeProcess("--no-limits", "--threads", "4", "--channel-timeout", "2")
    try:
        yield server
    finally:
        code, _ = server.terminate()
    assert code == 0, server.output()


def _address(server: ServeProcess) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _connect(server: ServeProcess, timeout_s: float = 10.0) -> socket.socket:
    return socket.create_connection(_address(server), timeout=timeout_s)


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _open_games(server: ServeProcess) -> set[str]:
    status, _, body = get_json(f"{server.url}/games?status=open&limit=100")
    assert status == 200, body
    return {g["game_id"] for g in body["games"]}


def _request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# ---------------------------------------------------------------- SIGPIPE
def test_clients_that_leave_early_do_not_kill_the_server(served: ServeProcess) -> None:
    for _ in range(5):
        # a body announced as 100 bytes, 2 sent, then gone
        with _connect(served) as sock:
            sock.sendall(
                _request("POST", "/games", b"{}", Content_Type="application/json").replace(
                    b"Host: localhost", b"Host: localhost\r\nContent-Length: 100"
                )
            )
        # a large response (the OpenAPI document) asked for, the socket reset unread
        sock = _connect(served)
        sock.sendall(_request("GET", "/openapi.json"))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    # a response being written to a client that has already gone
    for _ in range(5):
        sock = _connect(served)
        sock.sendall(_request("GET", "/openapi.json") * 20)
        sock.recv(10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    status, _, body = served.health()
    assert status == 200 and body["ok"] is True
    status, _, document = get_json(f"{served.url}/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.")
    assert served.process.poll() is None


# ---------------------------------------------------------------- waitress
def test_forty_parallel_clients_get_no_connection_reset(served: ServeProcess) -> None:
    clients = 40
    barrier = threading.Barrier(clients)
    results: list[object] = [None] * clients

    def client(number: int) -> None:
        barrier.wait()
        try:
            with _connect(served, timeout_s=30) as sock:
                sock.sendall(_request("GET", "/games?status=open&limit=5", Connection="close"))
                results[number] = _read_all(sock).split(b"\r\n", 1)[0]
        except OSError as exc:
            results[number] = exc

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [b"HTTP/1.1 200 OK"] * clients
    # and the cause of the resets is gone: the listen backlog (ss's Send-Q of a listening
    # socket) is 1024, not 5 (a full queue resets or drops a client's connection)
    port = _address(served)[1]
    listing = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    somaxconn = int(pathlib.Path("/proc/sys/net/core/somaxconn").read_text())
    assert listing[0] == "LISTEN" and int(listing[2]) == min(1024, somaxconn), listing


def test_a_chunked_body_is_decoded_and_a_request_hidden_in_it_is_not_run(
    served: ServeProcess,
) -> None:
    before = _open_games(served)
    # a chunked JSON body is read as the body it is
    payload = json.dumps(HUMANS).encode()
    chunks = b"".join(
        f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (payload[:10], payload[10:])
    )
    with _connect(served) as sock:
        sock.sendall(
            _request(
                "POST",
                "/games",
                chunks + b"0\r\n\r\n",
                Content_Type="application/json",
                Transfer_Encoding="chunked",
                Connection="close",
            )
        )
        reply = _read_all(sock)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201"), reply
    created = json.loads(body)["game_id"]
    assert _open_games(served) - before == {created}
    # a whole request smuggled as the chunked body of another is that body, never run
    hidden = _request(
        "POST", "/games", payload, Content_Type="application/json", Content_Length=str(len(payload))
    )
    smuggled = f"{len(hidden):x}\r\n".encode() + hidden + b"\r\n0\r\n\r\n"
    with _connect(served) as sock:
        sock.sendall(
            _request(
                "POST",
                "/games/nope/moves",
                smuggled,
                Content_Type="application/json",
                Transfer_Encoding="chunked",
            )
            + _request("GET", "/healthz", Connection="close")
        )
        replies = _read_all(sock)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", replies)
    assert len(statuses) == 2, replies  # the outer request and the health check: no third
    assert statuses[0] in (b"400", b"401", b"404") and statuses[1] == b"200", replies
    assert _open_games(served) - before == {created}


@pytest.mark.parametrize(
    "lengths",
    [("10", "20"), ("abc",), ("-5",)],
    ids=["conflicting", "not-a-number", "negative"],
)
def test_a_bad_content_length_is_a_400_and_nothing_runs(
    served: ServeProcess, lengths: tuple[str, ...]
) -> None:
    before = _open_games(served)
    payload = json.dumps(HUMANS).encode()
    head = [b"POST /games HTTP/1.1", b"Host: localhost", b"Content-Type: application/json"]
    head += [b"Content-Length: " + n.encode() for n in lengths]
    with _connect(served) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + payload)
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 400"), reply
    head_part, _, body = reply.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head_part.lower()
    error = json.loads(body)  # the API's error body, not waitress's plain text
    assert error["error"] == "bad_request"
    assert "Content-Length" in error["message"] or "content-length" in error["message"].lower()
    assert _open_games(served) == before


def test_a_body_over_the_servers_limit_is_a_json_413_and_nothing_runs(
    served: ServeProcess,
) -> None:
    before = _open_games(served)
    size = (1 << 20) + 1  # waitress's limit (1 MiB); the API's own 4 KB limit is a JSON 413 too
    head = (
        b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {size}\r\n\r\n".encode()
    )
    with _connect(served) as sock:
        sock.sendall(head)  # the declared length alone is refused, before any body is read
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    error = json.loads(reply.partition(b"\r\n\r\n")[2])
    assert error["error"] == "payload_too_large"
    assert _open_games(served) == before


def test_trace_is_a_json_405(served: ServeProcess) -> None:
    with _connect(served) as sock:
        sock.sendall(_request("TRACE", "/games", Connection="close"))
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 405"), reply[:200]
    head_part, _, body = reply.partition(b"\r\n\r\n")
    assert json.loads(body)["error"] == "method_not_allowed"
    assert b"allow:" in head_part.lower()


def test_half_sent_requests_are_dropped_after_the_channel_timeout(served: ServeProcess) -> None:
    # the fixture's server: 4 threads, a 2 s channel timeout; 12 clients stall mid-request
    stalled = []
    for number in range(12):
        sock = _connect(served, timeout_s=20)
        if number % 2:
            sock.sendall(b"POST /games HTTP/1.1\r\nHost: localhost\r\nContent-Len")
        else:
            sock.sendall(
                _request("POST", "/games", b"{", Content_Type="application/json").replace(
                    b"Host: localhost", b"Host: localhost\r\nContent-Length: 50"
                )
            )
        stalled.append(sock)
    try:
        started = time.monotonic()
        # more stalled clients than threads, and the server still answers at once
        status, _, body = served.health()
        assert status == 200 and body["ok"]
        for sock in stalled:  # each is closed by the server (EOF), none held for ever
            assert sock.recv(1024) == b""
        assert time.monotonic() - started < 15
    finally:
        for sock in stalled:
            sock.close()


def test_a_json_body_sent_as_a_form_creates_the_game(served: ServeProcess) -> None:
    # what `curl -d` sends (README): the API reads the body as JSON whatever its type
    status, _, body = request_json(
        "POST",
        f"{served.url}/games",
        HUMANS,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert status == 201, body
    assert body["seat"] == "harry" and body["token"]


def test_the_first_requests_of_a_fresh_server_in_parallel_all_succeed() -> None:
    # AI games created at once, before any brain was ever loaded: each gets its brains
    with ServeProcess("--no-limits") as server:
        body = {
            "seats": {"harry": {"kind": "ai", "brain": "planner"}, "voldemort": {"kind": "ai"}},
            "rules": "standard",
        }
        results: list[tuple[int, Any]] = []
        barrier = threading.Barrier(8)

        def create() -> None:
            barrier.wait()
            status, _, reply = request_json("POST", f"{server.url}/games", body, timeout_s=30)
            results.append((status, reply))

        threads = [threading.Thread(target=create) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert [status for status, _ in results] == [201] * 8, results


# ---------------------------------------------------------------- limits
def test_the_rate_limits_answer_429_throttled_with_retry_after() -> None:
    with ServeProcess("--rate", "5/8", "--create-rate", "0.2/2") as server:
        created = [request_json("POST", f"{server.url}/games", HUMANS) for _ in range(3)]
        assert [status for status, _, _ in created] == [201, 201, 429]
        _, headers, body = created[2]
        assert body["error"] == "throttled" and "new games" in body["message"]
        assert int(headers["retry-after"]) >= 1
        statuses = [get_json(f"{server.url}/games/nope")[0] for _ in range(12)]
        assert 429 in statuses and statuses[0] == 404
        # the health check is never limited
        assert all(server.health()[0] == 200 for _ in range(10))


# ---------------------------------------------------------------- SIGTERM
def test_sigterm_with_ai_games_running_exits_0_within_5_s() -> None:
    server = ServeProcess("--no-limits")
    try:
        client = HorcruxClient(server.url, timeout_s=10)
        dynamo = server.dynamo_pid()
        assert dynamo is not None
        for seed in range(6):
            client.create_game(
                {"kind": "ai", "brain": "planner"},
                {"kind": "ai", "brain": "reference"},
                rules="standard",
                seed=seed,
            )
        assert server.health()[2]["ai_pending"] > 0  # AI turns are being played
    finally:
        code, seconds = server.terminate()
    assert code == 0, server.output()
    assert seconds <= 5.0, server.output()
    assert "horcrux serve: stopped" in server.output()
    assert children(server.pid) == []
    with pytest.raises(ProcessLookupError):  # the DynamoDB child stopped with it
        os.kill(dynamo, 0)
