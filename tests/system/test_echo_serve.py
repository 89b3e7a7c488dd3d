"""`horcrux serve` learns across games: an AI-vs-AI game played to its end through a real
server process is compacted by the server's stand-in for the compaction Lambda (the same
record handler), and the operator then sees it in `GET /memory/...` (docs/ECHO.md)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from horcrux.store.port import hash_token
from horcrux_tools.local.harness import ServeProcess, get_json, request_json

pytestmark = pytest.mark.server

OPERATOR = "a-local-operator-token-for-the-memory-routes"
DEADLINE_S = 120.0


def _poll(what: str, probe: Any, deadline_s: float = DEADLINE_S) -> Any:
    """`probe()` until it returns something truthy, or fail naming `what`."""
    deadline = time.monotonic() + deadline_s
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_finished_ai_game_on_serve_shows_in_get_memory() -> None:
    env = {"HORCRUX_OPERATOR_TOKEN_SHA256": hash_token(OPERATOR)}
    with ServeProcess("--no-limits", env=env) as server:
        auth = {"authorization": f"Bearer {OPERATOR}"}
        memory_url = f"{server.url}/memory/planner?opponent=reference"
        status, _, before = request_json("GET", memory_url, headers=auth)
        assert status == 200, before
        assert before["games"] == 0 and before["items"] == []
        status, _, created = request_json(
            "POST",
            f"{server.url}/games",
            {
                "rules": "classic",
                "seed": 7,
                "seats": {
                    "harry": {"kind": "ai", "brain": "planner"},
                    "voldemort": {"kind": "ai", "brain": "reference"},
                },
            },
        )
        assert status == 201, created
        game_id = created["game_id"]

        def over() -> bool:
            code, _, game = get_json(f"{server.url}/games/{game_id}")
            return code == 200 and game["status"] == "over"

        _poll("the AI game to end", over)

        def learned() -> Any:
            code, _, body = request_json("GET", memory_url, headers=auth)
            assert code == 200, body
            return body if body["games"] >= 1 else None

        memory = _poll("the game's end in GET /memory", learned)
        assert memory["last_game"] == game_id and memory["games"] == 1
        assert memory["version"] >= 1
        assert {i["level"] for i in memory["items"]} >= {"experience"}
        # the finished game is compacted once: reading it again does not run it again
        get_json(f"{server.url}/games/{game_id}")
        status, _, again = request_json("GET", memory_url, headers=auth)
        assert status == 200 and again["version"] == memory["version"] and again["games"] == 1
