"""`horcrux serve` under two abusive clients, with its default settings, against the figures
a legitimate client needs.

    .venv/bin/python benchmarks/bench_abuse.py [--trickle 1000] [--lobby-games 100] [--seconds 15]

1. Slow drip: `--trickle` connections from 127.0.0.2, each sending one header byte every
   10 s (waitress's idle timeout never fires), while a client on 127.0.0.1 reads a game
   every 100 ms. Target: every one of its requests answered within 1 s.
2. Lobby flood: `--lobby-games` active games, then 127.0.0.2 asks for
   `GET /games?status=active&limit=100` as fast as 4 threads can (within the default rate
   limit: the server answers 429 past it), while 127.0.0.1 reads a game every 100 ms.
   Targets: its p50 under 50 ms, and `/healthz` 200 throughout.

3. Slow drip from ten addresses: 127.0.0.2 to 127.0.0.11 each hold 100 connections (the
   per-address cap) trickling a header byte every 2 s, and reopen every one the server
   drops, while 127.0.0.1 reads a game every 100 ms. Target: its p99 under 1 s.
4. Lobby flood from ten addresses: each asks 4.5 lobby pages a second (within its own
   limit) of `GET /games?status=active&limit=N`, N varied so the cache never answers,
   while 127.0.0.1 reads a game every 100 ms. Targets: its p50 under 100 ms, p99 under 1 s.

Linux routes all of 127/8 to loopback, so each address is another client. Prints the
figures, the load average before and after each part (the machine's own load shows in
them), the server's own counts (`/healthz`: dropped connections, lobby cache, the read
budget), and exits 1 when a target is missed. `--parts 1,2,3,4` picks the parts.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import os
import socket
import statistics
import threading
import time

from horcrux_tools.local.harness import ServeProcess, request_json

ATTACKER = "127.0.0.2"
ADDRESSES = [f"127.0.0.{n}" for n in range(2, 12)]
"""Ten attacking addresses (the legitimate client is 127.0.0.1)."""
DRIPS_PER_ADDRESS = 100
DRIP_EVERY_S = 2.0
PAGES_PER_S = 4.5
TRICKLE_EVERY_S = 10.0
LEGIT_EVERY_S = 0.1


def _address(server: ServeProcess) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _reader(
    address: tuple[str, int], game_id: str, stop: threading.Event, out: list[float]
) -> None:
    """The legitimate client: GET /games/{id} every 100 ms on a fresh connection each time,
    recording each request's latency (inf for a failure)."""
    while not stop.is_set():
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(*address, timeout=10)
            conn.request("GET", f"/games/{game_id}")
            response = conn.getresponse()
            response.read()
            conn.close()
            out.append(time.perf_counter() - started if response.status == 200 else float("inf"))
        except OSError:
            out.append(float("inf"))
        stop.wait(LEGIT_EVERY_S)


def _health(address: tuple[str, int]) -> tuple[int, dict[str, object]]:
    status, _, body = request_json("GET", f"http://{address[0]}:{address[1]}/healthz", None)
    return status, body


def slow_drip(server: ServeProcess, game_id: str, count: int, seconds: float) -> bool:
    address = _address(server)
    drips: list[socket.socket] = []
    refused = 0
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(5)
        sock.bind((ATTACKER, 0))
        try:
            sock.connect(address)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Drip: ")
            drips.append(sock)
        except OSError:
            refused += 1
            sock.close()
    latencies: list[float] = []
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(address, game_id, stop, latencies))
    reader.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for sock in drips:
            with contextlib.suppress(OSError):  # the server ended it
                sock.send(b"a")
        time.sleep(min(TRICKLE_EVERY_S, max(0.0, deadline - time.monotonic())))
    stop.set()
    reader.join()
    for sock in drips:
        sock.close()
    status, health = _health(address)
    worst = max(latencies) if latencies else float("inf")
    met = bool(latencies) and worst <= 1.0
    print(
        f"slow drip: {count} trickling connections ({refused} refused at connect), "
        f"{len(latencies)} legitimate requests in {seconds:.0f} s: p50 "
        f"{statistics.median(latencies) * 1000:.1f} ms, max {worst * 1000:.1f} ms "
        f"(target: each within 1000 ms): {'met' if met else 'MISSED'}"
    )
    print(f"  /healthz {status}: dropped {health.get('dropped')}")
    return met


def lobby_flood(server: ServeProcess, game_id: str, seconds: float) -> bool:
    address = _address(server)
    stop = threading.Event()
    codes: list[int] = []

    def flood() -> None:
        conn = http.client.HTTPConnection(*address, timeout=10, source_address=(ATTACKER, 0))
        while not stop.is_set():
            try:
                conn.request("GET", "/games?status=active&limit=100")
                response = conn.getresponse()
                response.read()
                codes.append(response.status)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(
                    *address, timeout=10, source_address=(ATTACKER, 0)
                )

    flooders = [threading.Thread(target=flood) for _ in range(4)]
    for thread in flooders:
        thread.start()
    latencies: list[float] = []
    reader = threading.Thread(target=_reader, args=(address, game_id, stop, latencies))
    reader.start()
    health_codes: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        health_codes.append(_health(address)[0])
        time.sleep(1.0)
    stop.set()
    reader.join()
    for thread in flooders:
        thread.join()
    _, health = _health(address)
    p50 = statistics.median(latencies) if latencies else float("inf")
    healthy = all(code == 200 for code in health_codes)
    met = p50 < 0.050 and healthy
    served = sum(1 for c in codes if c == 200)
    print(
        f"lobby flood: {len(codes)} lobby pages asked by 4 threads of one client "
        f"({served} answered, {sum(1 for c in codes if c == 429)} throttled) in {seconds:.0f} s; "
        f"another client's {len(latencies)} reads: p50 {p50 * 1000:.1f} ms "
        f"(target < 50 ms), p99 {statistics.quantiles(latencies, n=100)[98] * 1000:.1f} ms; "
        f"/healthz {sorted(set(health_codes))}: {'met' if met else 'MISSED'}"
    )
    print(f"  lobby cache {health.get('lobby_cache')}")
    return met


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def _latency_figures(latencies: list[float]) -> tuple[float, float]:
    if len(latencies) < 2:
        return float("inf"), float("inf")
    return statistics.median(latencies), statistics.quantiles(latencies, n=100)[98]


def _drip_address(
    address: tuple[str, int], source: str, stop: threading.Event, counts: dict[str, int]
) -> None:
    """One attacking address: `DRIPS_PER_ADDRESS` connections trickling a header byte each
    `DRIP_EVERY_S`; one the server drops is opened again."""
    socks: list[socket.socket | None] = [None] * DRIPS_PER_ADDRESS
    while not stop.is_set():
        for i, held in enumerate(socks):
            if stop.is_set():
                break
            sock = held
            try:
                if sock is None:
                    sock = socket.socket()
                    sock.settimeout(2)
                    sock.bind((source, 0))
                    sock.connect(address)
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Drip: ")
                    counts["opened"] += 1
                else:
                    sock.send(b"a")
                socks[i] = sock
            except OSError:
                counts["dropped"] += 1
                if sock is not None:
                    sock.close()
                socks[i] = None
        stop.wait(DRIP_EVERY_S)
    for sock in socks:
        if sock is not None:
            sock.close()


def slow_drip_many(server: ServeProcess, game_id: str, seconds: float) -> bool:
    address = _address(server)
    print(f"slow drip from {len(ADDRESSES)} addresses: before, {_load()}")
    stop = threading.Event()
    counts = {"opened": 0, "dropped": 0}
    drippers = [
        threading.Thread(target=_drip_address, args=(address, source, stop, counts))
        for source in ADDRESSES
    ]
    for thread in drippers:
        thread.start()
    time.sleep(DRIP_EVERY_S)  # every connection open before the measure starts
    latencies: list[float] = []
    reader = threading.Thread(target=_reader, args=(address, game_id, stop, latencies))
    reader.start()
    time.sleep(seconds)
    stop.set()
    reader.join()
    for thread in drippers:
        thread.join()
    p50, p99 = _latency_figures(latencies)
    failed = sum(1 for x in latencies if x == float("inf"))
    met = p99 < 1.0 and failed == 0
    status, health = _health(address)
    print(
        f"  {len(ADDRESSES)} x {DRIPS_PER_ADDRESS} trickling connections "
        f"({counts['opened']} opened, {counts['dropped']} dropped and reopened) for "
        f"{seconds:.0f} s; another client's {len(latencies)} reads: p50 {p50 * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, {failed} failed (target: p99 < 1000 ms): "
        f"{'met' if met else 'MISSED'}"
    )
    print(f"  /healthz {status}: dropped {health.get('dropped')}; after, {_load()}")
    return met


def lobby_flood_many(server: ServeProcess, game_id: str, seconds: float) -> bool:
    address = _address(server)
    print(f"lobby flood from {len(ADDRESSES)} addresses: before, {_load()}")
    stop = threading.Event()
    codes: list[int] = []

    def flood(source: str, offset: int) -> None:
        conn = http.client.HTTPConnection(*address, timeout=10, source_address=(source, 0))
        n = 0
        while not stop.is_set():
            started = time.monotonic()
            limit = 80 + (offset * 7 + n) % 21  # 80..100: the cache never has the page
            n += 1
            try:
                conn.request("GET", f"/games?status=active&limit={limit}&n={n}")
                response = conn.getresponse()
                response.read()
                codes.append(response.status)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(*address, timeout=10, source_address=(source, 0))
            stop.wait(max(0.0, 1 / PAGES_PER_S - (time.monotonic() - started)))
        conn.close()

    flooders = [
        threading.Thread(target=flood, args=(source, i)) for i, source in enumerate(ADDRESSES)
    ]
    for thread in flooders:
        thread.start()
    latencies: list[float] = []
    reader = threading.Thread(target=_reader, args=(address, game_id, stop, latencies))
    reader.start()
    time.sleep(seconds)
    stop.set()
    reader.join()
    for thread in flooders:
        thread.join()
    p50, p99 = _latency_figures(latencies)
    met = p50 < 0.100 and p99 < 1.0
    status, health = _health(address)
    print(
        f"  {len(codes)} lobby pages asked ({sum(1 for c in codes if c == 200)} answered, "
        f"{sum(1 for c in codes if c == 429)} throttled, statuses "
        f"{dict(sorted(collections.Counter(codes).items()))}) in {seconds:.0f} s; another client's "
        f"{len(latencies)} reads: p50 {p50 * 1000:.1f} ms (target < 100 ms), p99 "
        f"{p99 * 1000:.1f} ms (target < 1000 ms): {'met' if met else 'MISSED'}"
    )
    print(
        f"  /healthz {status}: read budget {health.get('read_budget')}, lobby cache "
        f"{health.get('lobby_cache')}; after, {_load()}"
    )
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trickle", type=int, default=1000)
    parser.add_argument("--lobby-games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--parts", default="1,2,3,4", help="which parts to run (1-4)")
    parser.add_argument("--read-budget", help="serve's --read-budget (default: its own)")
    args = parser.parse_args(argv)
    parts = {int(p) for p in args.parts.split(",") if p.strip()}
    budget = ["--read-budget", args.read_budget] if args.read_budget else []
    server = ServeProcess("--create-rate", "off", *budget)  # the setup's games; else defaults
    try:
        games = []
        for seed in range(args.lobby_games):
            status, _, body = request_json(
                "POST",
                f"{server.url}/games",
                {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}, "seed": seed},
            )
            assert status == 201, body
            games.append(body["game_id"])
        ok = True
        if 1 in parts:
            ok = slow_drip(server, games[0], args.trickle, args.seconds) and ok
        if 2 in parts:
            ok = lobby_flood(server, games[0], args.seconds) and ok
        if 3 in parts:
            ok = slow_drip_many(server, games[0], args.seconds) and ok
        if 4 in parts:
            ok = lobby_flood_many(server, games[0], args.seconds) and ok
    finally:
        code, _ = server.terminate()
    print(f"  SIGTERM: exit {code}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
