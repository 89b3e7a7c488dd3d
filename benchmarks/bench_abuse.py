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

Linux routes all of 127/8 to loopback, so the second address is a second client. Prints
the figures, the server's own counts (`/healthz`: dropped connections, lobby cache), and
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import socket
import statistics
import threading
import time

from horcrux_tools.local.harness import ServeProcess, request_json

ATTACKER = "127.0.0.2"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trickle", type=int, default=1000)
    parser.add_argument("--lobby-games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args(argv)
    server = ServeProcess("--create-rate", "off")  # the setup's games; every other default
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
        ok = slow_drip(server, games[0], args.trickle, args.seconds)
        ok = lobby_flood(server, games[0], args.seconds) and ok
    finally:
        code, _ = server.terminate()
    print(f"  SIGTERM: exit {code}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
