"""Database faults under a running `horcrux serve`: a real local DynamoDB process used as the
user's endpoint (`AWS_ENDPOINT_URL_DYNAMODB`) is killed, restarted empty on the same port,
and frozen (SIGSTOP) while games are played over HTTP."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from horcrux_tools.local.harness import DynamoProcess, ServeProcess, get_json, request_json

pytestmark = pytest.mark.server

HUMANS = {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}}
ANSWER_S = 10.0
"""A frozen database: every answer within this (the store's timeouts and retries)."""


@pytest.fixture
def dynamo() -> Iterator[list[DynamoProcess]]:
    started = [DynamoProcess()]
    try:
        yield started  # a test that restarts it appends the new process
    finally:
        for process in started:
            process.stop()


def _serve(endpoint: str) -> ServeProcess:
    return ServeProcess(
        "--no-limits",
        own_dynamodb=False,
        env={
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": "eu-west-1",
        },
    )


def _until(what: str, check: Any, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(min(0.02 * 1.5**attempt, 0.5))
        attempt += 1


def _game(url: str, game_id: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    status, _, body = request_json("GET", f"{url}/games/{game_id}", headers=headers)
    return status, body


def _harry_vs_ai(url: str, seed: int) -> tuple[str, str]:
    status, _, body = request_json(
        "POST",
        f"{url}/games",
        {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}, "seed": seed},
    )
    assert status == 201, body
    return body["game_id"], body["token"]


def _move(
    url: str, game_id: str, token: str, location: str, key: str | None = None
) -> tuple[int, dict[str, str], Any]:
    headers = {"authorization": f"Bearer {token}"}
    if key is not None:
        headers["idempotency-key"] = key
    return request_json(
        "POST",
        f"{url}/games/{game_id}/moves",
        {"type": "search", "location": location},
        headers=headers,
        timeout_s=ANSWER_S + 5,
    )


def _harry_to_move(url: str, game_id: str, token: str, turn: int) -> bool:
    status, game = _game(url, game_id, token)
    return status == 200 and game["to_move"] == "harry" and game["turn"] == turn


def test_killed_restarted_empty_and_frozen_database(dynamo: list[DynamoProcess]) -> None:
    db = dynamo[0]
    server = _serve(db.endpoint)
    try:
        url = server.url
        assert server.dynamo_pid() is None  # the user's endpoint: nothing started
        game_id, token = _harry_vs_ai(url, seed=3)
        status, _, _ = _move(url, game_id, token, "hogwarts")
        assert status == 200
        _until("the AI Voldemort's reply", lambda: _harry_to_move(url, game_id, token, 2))

        # ---- killed: 503 with Retry-After on every route, the health check says so
        db.signal(signal.SIGKILL)
        db.process.wait()
        routes = [
            ("GET", f"/games/{game_id}", None),
            ("GET", f"/games/{game_id}/events?after=0", None),
            ("GET", "/games?status=open", None),
            (
                "POST",
                "/games",
                {"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}},
            ),
            ("POST", f"/games/{game_id}/moves", {"type": "search", "location": "azkaban"}),
        ]
        for method, path, body in routes:
            headers = {"authorization": f"Bearer {token}"}
            status, got, reply = request_json(
                method, url + path, body, headers=headers, timeout_s=ANSWER_S
            )
            assert status == 503, (method, path, reply)
            assert reply["error"] == "store_unavailable" and reply["message"], reply
            assert int(got["retry-after"]) >= 1
        status, got, health = _until("an unhealthy /healthz", lambda: _unhealthy(server))
        assert health["ok"] is False and health["problem"] == "dynamodb unreachable"
        assert int(got["retry-after"]) >= 1

        # ---- back on the same port, empty: tables recreated, a message, new games work
        dynamo.append(DynamoProcess(db.port))
        server.wait_for_output(r"lost its data \(restarted\?\): tables recreated", 20)
        health = server.wait_healthy(20)
        assert health["ok"] is True and health["tables_recreated"] == 1
        assert _game(url, game_id, token)[0] == 404  # the games from before are gone
        new_id, new_token = _harry_vs_ai(url, seed=4)
        assert _move(url, new_id, new_token, "hogwarts")[0] == 200
        _until(
            "the AI's reply after the restart", lambda: _harry_to_move(url, new_id, new_token, 2)
        )

        # ---- frozen: bounded 503s; thawed: the AI turn that was due is played
        status, _, body = request_json(
            "POST",
            f"{url}/games",
            {
                "seats": {"harry": {"kind": "ai", "brain": "planner"}, "voldemort": {"kind": "ai"}},
                "rules": "standard",
                "seed": 5,
            },
        )
        assert status == 201, body
        ai_game = body["game_id"]
        frozen = dynamo[-1]
        direct = _direct(frozen.endpoint)
        # the stream has handed the game to the workers: its turns are being played
        _until("the AI game under way", lambda: direct.load(ai_game).state.turn >= 2)
        frozen.signal(signal.SIGSTOP)  # an AI turn of `ai_game` is due (or being played)
        try:
            started = time.monotonic()
            status, got, reply = _move(url, new_id, new_token, "azkaban", key="frozen-1")
            assert status == 503 and reply["error"] == "store_unavailable", reply
            # the transaction may have reached the frozen database: said, never "not written"
            assert reply["reason"] in ("outcome_unknown", "unreachable", "timeout"), reply
            assert int(got["retry-after"]) >= 1
            assert time.monotonic() - started < ANSWER_S
            _until("a failed AI turn", lambda: server.health(ANSWER_S)[2]["ai_failures"] > 0)
        finally:
            frozen.signal(signal.SIGCONT)
        # no read of the game in between: only the worker's retries can finish it
        _until(
            "the AI game's end",
            lambda: (h := server.health(ANSWER_S))[0] == 200 and h[2]["ai_pending"] == 0,
            timeout_s=60,
        )
        status, game = _game(url, ai_game)
        assert status == 200 and game["status"] == "over", game
        # no read of the person's game either: if the thawed database applied the move,
        # the workers (told of the 503) have played the AI's reply by now
        _until(
            "the workers idle",
            lambda: (
                (h := server.health(ANSWER_S))[0] == 200
                and h[2]["ai_pending"] == 0
                and h[2]["ai_retrying"] == 0
            ),
            timeout_s=60,
        )
        # the first read since: it answers the game as the workers left it (an AI turn it
        # would queue is played after the answer), so Voldemort is never left to move
        status, game = _game(url, new_id, new_token)
        assert status == 200 and game["to_move"] == "harry", game
        assert game["turn"] in (2, 3), game  # 3: the move was applied, and the reply played
        # the move's outcome was unknown: the retry with the same key answers the move,
        # whether the thawed database applied it or the retry plays it, and only once
        status, _, moved = _move(url, new_id, new_token, "azkaban", key="frozen-1")
        assert status == 200, moved
        assert moved["event"]["turn"] == 2 and moved["event"]["action"]["location"] == "azkaban"
        _until("the AI's reply", lambda: _harry_to_move(url, new_id, new_token, 3))
    finally:
        code, seconds = server.terminate()
    assert code == 0 and seconds <= 5.0, server.output()


def _unhealthy(server: ServeProcess) -> tuple[int, dict[str, str], Any] | None:
    status, headers, body = get_json(f"{server.url}/healthz", ANSWER_S)
    return (status, headers, body) if status == 503 else None


# ---------------------------------------------------------------- the stalled commit
STALL_S = 1.2
"""Longer than the store's read timeout (0.8 s): the client gives up on an applied move."""
REPLY_S = 2.0
TRIALS = 20


def _direct(endpoint: str) -> Any:
    """A store on the database itself (never through the server: no read of the game
    reaches `horcrux serve`)."""
    import boto3

    from horcrux.settings import store_settings
    from horcrux.store import DynamoDbStore

    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="eu-west-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    settings = store_settings().model_copy(update={"endpoint_url": endpoint, "region": "eu-west-1"})
    return DynamoDbStore(settings, client=client)


def test_a_stalled_commit_gets_its_ai_reply_without_a_read() -> None:
    """The database applies the move and answers too late (the client's timeout): the
    API answers 503 `outcome_unknown` (or 200 if its second try learns the outcome), and
    the AI's reply is played from the committed event within 2 s, no one reading the game."""
    db = DynamoProcess(faults=True)
    server = _serve(db.endpoint)
    direct = _direct(db.endpoint)
    outcomes: list[int] = []
    replies_s: list[float] = []
    try:
        url = server.url
        for trial in range(TRIALS):
            game_id, token = _harry_vs_ai(url, seed=100 + trial)
            assert db.stall_commits(STALL_S)["stall_commits_s"] == STALL_S
            try:
                status, got, reply = _move(url, game_id, token, "hogwarts")
            finally:
                db.stall_commits(0)
            answered = time.monotonic()
            outcomes.append(status)
            if status == 503:
                assert reply["reason"] == "outcome_unknown", reply
                assert int(got["retry-after"]) >= 1
            else:
                assert status == 200, reply
            assert [e.seq for e in direct.events(game_id).events][:2] == [0, 1]  # committed

            def replied(game: str = game_id) -> bool:
                state = direct.load(game).state
                return state.turn == 2 and state.phase == "harry"

            _until("the AI's reply", replied, timeout_s=REPLY_S)
            replies_s.append(time.monotonic() - answered)
        assert max(replies_s) < REPLY_S
        assert 503 in outcomes  # the fault did what it is for
    finally:
        server.terminate()
        db.stop()
    print(
        f"stalled commits: {outcomes.count(503)} x 503, {outcomes.count(200)} x 200; "
        f"AI reply after the answer: max {max(replies_s):.2f} s"
    )


# ---------------------------------------------------------------- the freeze
FROZEN_ANSWER_S = 3.0
RECOVERY_S = 1.0


def test_a_frozen_database_is_a_503_within_3_s_and_recovery_within_1_s_of_the_thaw() -> None:
    import concurrent.futures

    db = DynamoProcess()
    server = _serve(db.endpoint)
    try:
        url = server.url
        game_id, token = _harry_vs_ai(url, seed=7)
        db.signal(signal.SIGSTOP)
        try:
            auth = {"authorization": f"Bearer {token}"}
            requests: list[tuple[str, str, Any, dict[str, str]]] = [
                ("GET", f"/games/{game_id}", None, auth) for _ in range(12)
            ]
            requests += [
                ("GET", f"/games/{game_id}/events?after=0", None, {}),
                ("GET", "/games?status=active&limit=7", None, {}),
                ("POST", "/games", HUMANS, {}),
                (
                    "POST",
                    f"/games/{game_id}/moves",
                    {"type": "search", "location": "azkaban"},
                    {**auth, "idempotency-key": "frozen-k"},
                ),
            ]

            def timed(item: tuple[str, str, Any, dict[str, str]]) -> tuple[float, Any]:
                method, path, body, headers = item
                started = time.monotonic()
                answer = request_json(method, url + path, body, headers=headers, timeout_s=10)
                return time.monotonic() - started, answer

            with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
                answers = list(pool.map(timed, requests))
        finally:
            db.signal(signal.SIGCONT)
        thawed = time.monotonic()
        for seconds, (status, got, reply) in answers:
            assert status == 503 and reply["error"] == "store_unavailable", reply
            assert int(got["retry-after"]) >= 1
            assert seconds < FROZEN_ANSWER_S, (seconds, reply)

        def served() -> bool:
            return _game(url, game_id, token)[0] == 200

        _until("a read after the thaw", served, timeout_s=RECOVERY_S)
        recovered = time.monotonic() - thawed
        # the keyed move that failed did not strand its key: it plays now, once
        status, _, moved = _move(url, game_id, token, "azkaban", key="frozen-k")
        assert status in (200, 409), moved
        if status == 409:  # its release could not be written: the lock says when
            assert moved["error"] == "idempotency_in_progress"
    finally:
        server.terminate()
        db.stop()
    slowest = max(seconds for seconds, _ in answers)
    print(
        f"frozen: {len(answers)} requests, slowest 503 {slowest:.2f} s; "
        f"served {recovered:.2f} s after the thaw"
    )
