"""The local server's pools, in process: AI-turn workers (never two on one game, fair, a
failed turn retried with capped back-off and never dropped) and the API handler's
execution environments (each with its own Powertools metric set)."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from typing import Any

import pytest
from conftest import set_aws_env

from horcrux.service import TurnOutcome, TurnRequest
from horcrux_tools.local.ai_turns import AiTurns, FakeLambdaContext
from horcrux_tools.local.wsgi import (
    ApiEnvironment,
    HandlerPool,
    api_gateway_event,
    load_api_handler,
)

DEADLINE_S = 20.0


class FakeGames:
    """The two calls the turn workers make, on games that each need `turns` AI turns."""

    def __init__(self, games: list[str], turns: int, *, hold_s: float = 0.0) -> None:
        self.left = dict.fromkeys(games, turns)
        self.hold = threading.Event()
        self.hold_s = hold_s
        self.order: list[str] = []
        self.busy: Counter[str] = Counter()
        self.most_games_at_once = 0
        self.same_game_twice = 0
        self.fail_next: dict[str, int] = {}
        self.fail_pending: dict[str, int] = {}
        self._lock = threading.Lock()

    def pending_ai(self, game_id: str) -> TurnRequest | None:
        with self._lock:
            if self.fail_pending.get(game_id, 0):
                self.fail_pending[game_id] -= 1
                raise ConnectionError("the database is down")
            left = self.left[game_id]
        return TurnRequest(game_id=game_id, seq=left, seat="voldemort") if left else None

    def play_ai_turn(self, game_id: str, seat: str, after_seq: int, **_: Any) -> TurnOutcome:
        with self._lock:
            self.busy[game_id] += 1
            if self.busy[game_id] > 1:
                self.same_game_twice += 1
            self.most_games_at_once = max(self.most_games_at_once, self.busy.total())
            self.order.append(game_id)
            failing = self.fail_next.get(game_id, 0)
            if failing:
                self.fail_next[game_id] -= 1
        try:
            self.hold.wait(self.hold_s)  # a turn takes a while: room for overlaps
            if failing:
                raise ConnectionError("the database is down")
            with self._lock:
                self.left[game_id] -= 1
            return TurnOutcome(game_id=game_id, seat="voldemort", status="played")
        finally:
            with self._lock:
                self.busy[game_id] -= 1

    def done(self) -> bool:
        with self._lock:
            return not any(self.left.values())


def _wait(condition: Any, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_workers_play_games_in_parallel_never_one_game_twice() -> None:
    games = [f"g{i}" for i in range(8)]
    fake = FakeGames(games, turns=5, hold_s=0.01)
    ai = AiTurns(fake, workers=4)  # type: ignore[arg-type]

    def reads() -> None:  # every read of a game waiting for its AI queues it again
        while not fake.done():
            for game in games:
                ai.enqueue(game)
            fake.hold.wait(0.001)

    reader = threading.Thread(target=reads)
    try:
        reader.start()
        _wait(fake.done)
        reader.join(DEADLINE_S)
        assert ai.wait_idle(DEADLINE_S)
    finally:
        ai.stop()
    assert fake.same_game_twice == 0
    assert fake.most_games_at_once > 1  # a pool, not one thread
    assert Counter(fake.order) == dict.fromkeys(games, 5)


def test_games_share_a_worker_fairly() -> None:
    games = ["a", "b", "c"]
    fake = FakeGames(games, turns=3)
    fake.hold.set()
    ai = AiTurns(fake, workers=1)  # type: ignore[arg-type]
    try:
        with ai._cond:  # queue all three before the worker takes any
            for game in games:
                ai._queued.add(game)
                ai._queue.append(game)
            ai._cond.notify_all()
        _wait(fake.done)
        assert ai.wait_idle(DEADLINE_S)
    finally:
        ai.stop()
    assert fake.order == ["a", "b", "c"] * 3  # one turn per visit, round robin


def test_a_failed_turn_is_retried_with_capped_backoff_never_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeGames(["g"], turns=2)
    fake.hold.set()
    fake.fail_pending["g"] = 2  # the database is down when the game is read ...
    fake.fail_next["g"] = 4  # ... then when the turn is committed
    ai = AiTurns(fake, workers=2, backoff_s=0.01, max_backoff_s=0.04)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="horcrux_tools.local.ai_turns")
    try:
        ai.enqueue("g")
        _wait(fake.done)
        assert ai.wait_idle(DEADLINE_S)
    finally:
        ai.stop()
    assert ai.failures == 6 and ai.retrying() == 0
    delays = [
        float(m.group(1))
        for r in caplog.records
        if (m := re.search(r"retrying in ([\d.]+) s", r.getMessage()))
    ]
    assert delays == [0.01, 0.02, 0.04, 0.04, 0.04, 0.04]
    assert all("game g failed" in r.getMessage() for r in caplog.records)


def test_stop_abandons_a_turn_in_progress_quickly() -> None:
    fake = FakeGames(["slow"], turns=1, hold_s=30.0)  # a turn that would take 30 s
    ai = AiTurns(fake, workers=1)  # type: ignore[arg-type]
    ai.enqueue("slow")
    _wait(lambda: fake.order == ["slow"])
    started = time.monotonic()
    ai.stop(timeout_s=0.2)
    assert time.monotonic() - started < 1.0
    ai.enqueue("slow")  # nothing is taken once stopping
    assert ai.pending() == 1  # only the abandoned one, still marked running
    fake.hold.set()


# ---------------------------------------------------------------- handler environments
def test_each_execution_environment_has_its_own_event_and_metric_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aws_lambda_powertools.metrics import Metrics

    set_aws_env(monkeypatch)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    environments = [load_api_handler() for _ in range(2)]
    assert all(isinstance(e, ApiEnvironment) for e in environments)
    sets = [e.module.metrics.provider.metric_set for e in environments]  # type: ignore[attr-defined]
    assert sets[0] is not sets[1] and all(s is not Metrics._metrics for s in sets)
    pool = HandlerPool(4, load_api_handler)
    errors: list[BaseException] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    crossed: list[str] = []

    def hammer(number: int) -> None:
        for i in range(150):  # past Powertools' 100-value flush, on every thread
            try:
                path = f"/nowhere-{number}-{i}"
                response = pool(api_gateway_event("GET", path, [], b""), FakeLambdaContext())
                message = json.loads(response["body"])["message"]
                with lock:
                    statuses[response["statusCode"]] += 1
                    if message != f"no route GET {path}":  # another thread's request
                        crossed.append(message)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert crossed == []
    assert statuses == {404: 8 * 150}
    assert Metrics._metrics == {}  # the shared class-level set is never used


def test_an_environment_resolves_the_event_as_the_app_rewrote_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the app reads any body as JSON (it rewrites the event's content type before
    # resolving): the environment's own current event must be that rewritten one
    set_aws_env(monkeypatch)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    environment = load_api_handler()
    headers = [("content-type", "application/x-www-form-urlencoded")]
    event = api_gateway_event("POST", "/games", headers, b'{"seats": 5}')
    response = environment(event, FakeLambdaContext())
    body = json.loads(response["body"])
    assert response["statusCode"] == 422, body
    assert [d["loc"] for d in body["detail"]] == [["body", "seats"]], body
