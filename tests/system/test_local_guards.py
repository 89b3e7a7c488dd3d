"""`horcrux serve` against clients that hold or hog it: connections that trickle a byte at
a time (the read deadline, the per-client connection cap) and a lobby flood (route costs,
the cached lobby page), while another client's requests are answered."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
from typing import Any

import pytest

from horcrux_tools.local.harness import ServeProcess, get_json, request_json

pytestmark = pytest.mark.server

ATTACKER = "127.0.0.2"  # Linux routes all of 127/8 to loopback: a second client address


def _address(server: ServeProcess) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def test_trickling_connections_are_capped_and_cut_while_others_are_served() -> None:
    server = ServeProcess(
        "--no-limits",
        "--threads",
        "4",
        "--read-deadline",
        "3",
        "--max-client-connections",
        "40",
        "--max-connections",
        "150",
    )
    try:
        address = _address(server)
        status, _, game = request_json(
            "POST",
            f"{server.url}/games",
            {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}},
        )
        assert status == 201, game
        game_id = game["game_id"]

        # 200 connections from one address, each sending one header byte every 0.5 s: far
        # inside the 30 s idle timeout, so only the read deadline and the cap end them
        drips: list[socket.socket] = []
        for _ in range(200):
            sock = socket.socket()
            sock.settimeout(10)
            sock.bind((ATTACKER, 0))
            sock.connect(address)
            drips.append(sock)
        replies: dict[int, bytes] = {}
        stop = threading.Event()

        def drip() -> None:
            for sock in drips:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Drip: ")
            while not stop.is_set() and len(replies) < len(drips):
                open_ = [s for s in drips if s.fileno() not in replies]
                readable, _, _ = select.select(open_, [], [], 0.5)
                for sock in readable:
                    try:
                        replies[sock.fileno()] = sock.recv(4096)
                    except OSError:  # reset: the server closed it with our bytes unread
                        replies[sock.fileno()] = b""
                for sock in open_:
                    if sock.fileno() not in replies:
                        try:
                            sock.send(b"a")
                        except OSError:
                            replies[sock.fileno()] = b""

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        try:
            # meanwhile another client's requests are each answered (generous bounds)
            answered = 0
            started = time.monotonic()
            while dripper.is_alive() and time.monotonic() - started < 60:
                status, _, body = get_json(f"{server.url}/games/{game_id}", timeout_s=10)
                assert status == 200, body
                answered += 1
            dripper.join(60)
            assert not dripper.is_alive(), f"{len(replies)} of {len(drips)} connections ended"
        finally:
            stop.set()
            for sock in drips:
                sock.close()
        assert answered >= 1
        # every connection was ended by the server (a reply, or a reset when it closed with
        # the dripped bytes unread); none was answered as a request
        codes = [_status_of(reply) for reply in replies.values()]
        assert len(codes) == 200 and set(codes) <= {0, 408, 429}, sorted(codes)
        assert 429 in codes and 408 in codes, sorted(codes)
        status, _, health = server.health()
        assert status == 200, health
        # within the cap: cut at the read deadline; over it: refused at once
        assert health["dropped"] == {"read_deadline": 40, "per_client_cap": 160}, health
        refusal = next(r for r in replies.values() if _status_of(r) == 429)
        assert b'"error":"throttled"' in refusal.replace(b" ", b"") and ATTACKER.encode() in refusal
    finally:
        code, _ = server.terminate()
    assert code == 0, server.output()


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, Any]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null")


def test_a_lobby_flood_from_one_client_leaves_others_answered_and_healthz_200() -> None:
    server = ServeProcess("--threads", "4")  # the default limits
    try:
        host, port = _address(server)
        games = []
        for seed in range(8):  # active games: a person against the AI
            status, _, body = request_json(
                "POST",
                f"{server.url}/games",
                {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}, "seed": seed},
            )
            assert status == 201, body
            games.append(body["game_id"])

        flood_codes: list[int] = []
        stop = threading.Event()

        def flood() -> None:
            conn = http.client.HTTPConnection(host, port, timeout=30, source_address=(ATTACKER, 0))
            try:
                while not stop.is_set():
                    status, _ = _get(conn, "/games?status=active&limit=100")
                    flood_codes.append(status)
            finally:
                conn.close()

        flooders = [threading.Thread(target=flood, daemon=True) for _ in range(4)]
        for thread in flooders:
            thread.start()
        try:
            mine = http.client.HTTPConnection(host, port, timeout=10)
            answers = []
            healths = []
            for number in range(40):
                answers.append(_get(mine, f"/games/{games[number % len(games)]}")[0])
                if number % 10 == 0:
                    healths.append(server.health(10))
            mine.close()
        finally:
            stop.set()
            for thread in flooders:
                thread.join(30)
        assert answers == [200] * 40, answers
        assert all(h[0] == 200 and h[2]["ok"] for h in healths), healths
        # the flood was throttled by its cost (11 tokens a page) and mostly served from the
        # one-second copy: far fewer lobby computations than lobby pages answered
        assert 429 in flood_codes and 200 in flood_codes, set(flood_codes)
        status, _, health = server.health()
        assert status == 200, health
        cache = health["lobby_cache"]
        assert cache["hits"] + cache["misses"] >= flood_codes.count(200)
        assert cache["hits"] > cache["misses"], cache
    finally:
        code, _ = server.terminate()
    assert code == 0, server.output()
