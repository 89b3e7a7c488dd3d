"""Soak `horcrux serve`: a bounded, realistic mix of requests against a real server process.

    .venv/bin/python benchmarks/soak.py [--requests 10000] [--concurrency 16] [--json]

Starts `horcrux serve --no-limits` on 127.0.0.1 (its own moto DynamoDB process), then
`--concurrency` clients, each a browser page playing one game after another over one
keep-alive connection:

* 60%: a person as Harry against the AI Voldemort (create, read the game, move, read);
* 20%: two people (create, the second joins Voldemort's seat, both move in turn);
* 20%: AI against AI (create, then watch it as a spectator);

and every page polls its game's events about once a second with `after` (what it has seen),
as the web page does. It stops at `--requests` requests and prints throughput and p50/p99
latency of the first and the last thousand, the RSS of the server and of its DynamoDB child
before and after, errors by kind, connection resets, and the time SIGTERM took to stop it.
The acceptance targets (issue #14) are checked at the end; the exit code is 1 if one is
missed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from horcrux_tools.local.harness import ServeProcess

WINDOW = 1000
POLL_S = 1.0
AI_WAIT_S = 0.25
"""A page waiting for the AI's move reads the game again after this long (never a busy
loop: the web page waits 1 s, backing off when idle)."""

TARGETS = {
    "errors": 0,
    "resets": 0,
    "last_p99_ms": 200.0,
    "throughput_drop": 0.20,
    "rss_growth_mb": 100.0,
    "sigterm_s": 5.0,
}


@dataclass
class Sample:
    index: int
    started: float
    seconds: float
    status: int
    kind: str


@dataclass
class Run:
    limit: int
    samples: list[Sample] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    resets: int = 0
    games: Counter[str] = field(default_factory=Counter)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ticket(self) -> int | None:
        with self._lock:
            if self._count >= self.limit:
                return None
            self._count += 1
            return self._count - 1

    def record(
        self, sample: Sample, error: str | None, *, reset: bool = False, example: str = ""
    ) -> None:
        with self._lock:
            self.samples.append(sample)
            if error is not None:
                self.errors[error] += 1
                self.examples.setdefault(error, example)
            self.resets += int(reset)


class Done(Exception):
    """The run has made its requests."""


class Page:
    """One client: a keep-alive connection, requests counted against the run."""

    def __init__(self, host: str, port: int, run: Run, rng: random.Random) -> None:
        self.host, self.port, self.run, self.rng = host, port, run, rng
        self.conn: http.client.HTTPConnection | None = None
        self.last_poll = 0.0

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        *,
        kind: str,
        ok: tuple[int, ...] = (200, 201),
    ) -> Any:
        index = self.run.ticket()
        if index is None:
            raise Done
        headers = {"content-type": "application/json"} if body is not None else {}
        if token:
            headers["authorization"] = f"Bearer {token}"
        data = json.dumps(body) if body is not None else None
        started = time.perf_counter()
        status, payload, error, reset, example = 0, None, None, False, ""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
            payload = json.loads(raw) if raw else None
            if status not in ok:
                code = payload.get("error") if isinstance(payload, dict) else ""
                error = f"{kind}: HTTP {status} {code}"
                example = f"{method} {path} {data or ''} -> {raw[:300]!r}"
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
            reset = True
            error = f"{kind}: {type(exc).__name__}"
            self._drop()
        except (OSError, http.client.HTTPException, ValueError) as exc:
            error = f"{kind}: {type(exc).__name__}"
            self._drop()
        seconds = time.perf_counter() - started
        sample = Sample(index, started, seconds, status, kind)
        self.run.record(sample, error, reset=reset, example=example)
        return payload if error is None else None

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def poll(self, game_id: str, token: str | None, after: int) -> int:
        """The events since `after`, if a second has passed since the last poll."""
        if time.monotonic() - self.last_poll < POLL_S:
            return after
        self.last_poll = time.monotonic()
        page = self.call(
            "GET", f"/games/{game_id}/events?after={after}", token=token, kind="events"
        )
        if isinstance(page, dict) and page.get("events"):
            return int(page["events"][-1]["seq"])
        return after

    # ------------------------------------------------------------ the games
    def play_forever(self) -> None:
        try:
            while True:
                roll = self.rng.random()
                if roll < 0.6:
                    self.against_ai()
                elif roll < 0.8:
                    self.two_people()
                else:
                    self.ai_vs_ai()
        except Done:
            pass
        finally:
            self._drop()

    def _create(self, harry: dict[str, Any], voldemort: dict[str, Any], kind: str) -> Any:
        body = {"seats": {"harry": harry, "voldemort": voldemort}, "rules": "standard"}
        self.run.games[kind] += 1
        return self.call("POST", "/games", body, kind="create")

    def _harry_action(self, legal: dict[str, Any]) -> dict[str, Any]:
        locations = legal.get("locations") or []
        if "attack" in legal.get("types", []) and self.rng.random() < 0.05 and locations:
            return {"type": "attack", "location": self.rng.choice(locations)}
        return {"type": "search", "location": self.rng.choice(locations)}

    def against_ai(self) -> None:
        created = self._create({"kind": "human"}, {"kind": "ai"}, "harry-vs-ai")
        if created is None:
            return
        game_id, token = created["game_id"], created["token"]
        after, game = -1, created["game"]
        for _ in range(60):
            after = self.poll(game_id, token, after)
            if game is None or game["status"] == "over":
                return
            if game["to_move"] == "harry" and game.get("legal"):
                moved = self.call(
                    "POST",
                    f"/games/{game_id}/moves",
                    self._harry_action(game["legal"]),
                    token,
                    kind="move",
                )
                game = moved["game"] if moved else None
            else:  # the AI is thinking: the page reads again after a short wait (the web
                # page waits a second; a quarter of one here keeps the load above a page's)
                time.sleep(AI_WAIT_S)
                game = self.call("GET", f"/games/{game_id}", token=token, kind="view")

    def two_people(self) -> None:
        created = self._create({"kind": "human"}, {"kind": "human"}, "two-people")
        if created is None:
            return
        game_id, tokens = created["game_id"], {"harry": created["token"]}
        joined = self.call("POST", f"/games/{game_id}/seats/voldemort", kind="join")
        if joined is None:
            return
        tokens["voldemort"] = joined["token"]
        after, game = -1, created["game"]
        for _ in range(30):
            after = self.poll(game_id, tokens["harry"], after)
            seat = game["to_move"]
            view = self.call("GET", f"/games/{game_id}", token=tokens[seat], kind="view")
            if view is None or view["status"] == "over" or not view.get("legal"):
                return
            action = self._harry_action(view["legal"]) if seat == "harry" else {"type": "pass"}
            moved = self.call("POST", f"/games/{game_id}/moves", action, tokens[seat], kind="move")
            if moved is None:
                return
            game = moved["game"]

    def ai_vs_ai(self) -> None:
        created = self._create({"kind": "ai", "brain": "planner"}, {"kind": "ai"}, "ai-vs-ai")
        if created is None:
            return
        game_id, after = created["game_id"], -1
        for _ in range(20):
            after = self.poll(game_id, None, after)
            game = self.call("GET", f"/games/{game_id}", kind="view")
            if game is None or game["status"] == "over":
                return
            time.sleep(0.2)  # a spectator's page refreshes now and then


def _window(samples: list[Sample]) -> dict[str, float]:
    ms = sorted(s.seconds * 1000 for s in samples)
    span = max(s.started + s.seconds for s in samples) - min(s.started for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"requests_per_s": len(samples) / span, "p50_ms": q[49], "p99_ms": q[98]}


def soak(
    requests: int,
    concurrency: int,
    seed: int = 0,
    window: int = WINDOW,
    serve_args: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run the soak; the report (`targets`: each acceptance target met or not)."""
    with ServeProcess("--no-limits", *serve_args) as server:
        host, port = server.url.removeprefix("http://").split(":")
        serve_before, dynamo_before = server.rss()
        cpu_before = server.cpu()
        run = Run(requests)
        pages = [Page(host, int(port), run, random.Random(seed + n)) for n in range(concurrency)]
        threads = [threading.Thread(target=p.play_forever) for p in pages]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        health = server.health()[2]
        serve_after, dynamo_after = server.rss()
        cpu_after = server.cpu()
        code, sigterm_s = server.terminate()
    samples = sorted(run.samples, key=lambda s: s.index)
    first, last = _window(samples[:window]), _window(samples[-window:])
    mb = 1 / (1 << 20)
    report = {
        "requests": len(samples),
        "concurrency": concurrency,
        "window": window,
        "wall_s": wall,
        "requests_per_s": len(samples) / wall,
        "first_thousand": first,
        "last_thousand": last,
        "by_kind": dict(Counter(s.kind for s in samples)),
        "games": dict(run.games),
        "errors": dict(run.errors),
        "error_examples": dict(run.examples),
        "resets": run.resets,
        "rss_mb": {
            "serve_before": serve_before * mb,
            "serve_after": serve_after * mb,
            "dynamodb_before": dynamo_before * mb,
            "dynamodb_after": dynamo_after * mb,
            "growth": (serve_after + dynamo_after - serve_before - dynamo_before) * mb,
        },
        "cpu_s": {
            "serve": cpu_after[0] - cpu_before[0],
            "dynamodb": cpu_after[1] - cpu_before[1],
        },
        "ai_failures": health.get("ai_failures") if isinstance(health, dict) else None,
        "sigterm_exit_code": code,
        "sigterm_s": sigterm_s,
    }
    report["targets"] = {
        "errors": sum(run.errors.values()) <= TARGETS["errors"],
        "resets": run.resets <= TARGETS["resets"],
        "last_p99_ms": last["p99_ms"] <= TARGETS["last_p99_ms"],
        "throughput_drop": last["requests_per_s"]
        >= (1 - TARGETS["throughput_drop"]) * first["requests_per_s"],
        "rss_growth_mb": report["rss_mb"]["growth"] <= TARGETS["rss_growth_mb"],
        "sigterm_s": code == 0 and sigterm_s <= TARGETS["sigterm_s"],
    }
    return report


def _print(report: dict[str, Any]) -> None:
    first, last, rss = report["first_thousand"], report["last_thousand"], report["rss_mb"]
    print(
        f"soak: {report['requests']} requests at concurrency {report['concurrency']} in "
        f"{report['wall_s']:.1f} s ({report['requests_per_s']:.0f}/s); games {report['games']}"
    )
    print(f"  requests by kind: {report['by_kind']}")
    for name, w in (("first", first), ("last", last)):
        print(
            f"  {name} {report['window']}: {w['requests_per_s']:.0f} req/s, "
            f"p50 {w['p50_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms"
        )
    print(
        f"  RSS: serve {rss['serve_before']:.0f} -> {rss['serve_after']:.0f} MB, "
        f"DynamoDB {rss['dynamodb_before']:.0f} -> {rss['dynamodb_after']:.0f} MB "
        f"(growth {rss['growth']:+.0f} MB)"
    )
    cpu = report["cpu_s"]
    print(
        f"  CPU: serve {cpu['serve']:.1f} s, DynamoDB {cpu['dynamodb']:.1f} s "
        f"({(cpu['serve'] + cpu['dynamodb']) / report['wall_s']:.2f} cores)"
    )
    print(f"  errors: {report['errors'] or 0}; connection resets: {report['resets']}")
    for kind, example in report["error_examples"].items():
        print(f"    {kind}, e.g. {example}")
    print(f"  AI turn failures (retried): {report['ai_failures']}")
    print(f"  SIGTERM: exit {report['sigterm_exit_code']} in {report['sigterm_s']:.2f} s")
    missed = [name for name, ok in report["targets"].items() if not ok]
    print(f"  targets: {'all met' if not missed else 'MISSED ' + ', '.join(missed)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--serve-args", default="", help="more `horcrux serve` flags, e.g. '--ai-workers 2'"
    )
    args = parser.parse_args(argv)
    if args.requests < 2 * WINDOW:
        parser.error(f"--requests must be at least {2 * WINDOW} (two windows of {WINDOW})")
    report = soak(
        args.requests, args.concurrency, args.seed, serve_args=tuple(args.serve_args.split())
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0 if all(report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
