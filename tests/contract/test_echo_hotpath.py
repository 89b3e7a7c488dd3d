"""The memory hot path everywhere (issue 16, item 4): a person's stable player id (chosen
at create/join, returned with the seat token, validated, stored on both adapters) keys the
memory of a human opponent across games; memory is written only for brains that read it."""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any

import pytest
from api_fixtures import FakeContext, api_event
from conftest import commit_moves

from horcrux import compaction
from horcrux.api.app import build_app
from horcrux.echo import persist
from horcrux.rules import CLASSIC
from horcrux.service import GameService
from horcrux.service.models import player_id
from horcrux.store import MemoryStore
from horcrux.store.port import SeatInfo, hash_token
from horcrux_tools import sim
from horcrux_tools.selfplay import play_to_end, start_game

KEY = "my-own-player-key-0123456789"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def call(app: Any, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    response = app.resolve(api_event(method, path, **kw), FakeContext())
    raw = response.get("body") or ""
    return response["statusCode"], json.loads(raw) if raw else None


# ---------------------------------------------------------------- the player id
def test_create_and_join_take_a_player_key_and_return_the_stable_id(store: Any) -> None:
    app = build_app(GameService(store))
    humans = {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}
    seats = {**humans, "harry": {"kind": "human", "player_key": KEY}}
    status, created = call(app, "POST", "/games", body={"rules": "classic", "seats": seats})
    assert status == 201, created
    assert created["player"] == f"player:{player_id(KEY)}" and created["player_key"] == KEY
    game_id = created["game_id"]
    # a joiner who sends no key gets a new one, to keep and send next time
    status, joined = call(app, "POST", f"/games/{game_id}/seats/voldemort", body={})
    assert status == 200, joined
    fresh = joined["player_key"]
    assert len(fresh) >= 22 and joined["player"] == f"player:{player_id(fresh)}"
    snapshot = store.load(game_id)  # stored on both adapters
    assert snapshot.seats["harry"].player == player_id(KEY)
    assert snapshot.seats["voldemort"].player == player_id(fresh)
    # the same key in another game: the same id, whatever the seat token
    status, again = call(app, "POST", "/games", body={"rules": "classic", "seats": seats})
    assert again["player"] == created["player"] and again["token"] != created["token"]


@pytest.mark.parametrize(
    ("seats", "needle"),
    [
        ({"harry": {"kind": "human", "player_key": "short"}}, "player_key"),
        ({"harry": {"kind": "human", "player_key": "x" * 30 + "!"}}, "player_key"),
        ({"harry": {"kind": "ai", "player_key": KEY}}, "player_key"),
    ],
)
def test_a_bad_player_key_is_a_4xx_naming_it(seats: dict[str, Any], needle: str) -> None:
    app = build_app(GameService(MemoryStore()))
    body = {"seats": {"voldemort": {"kind": "ai"}, **seats}}
    status, answer = call(app, "POST", "/games", body=body)
    assert 400 <= status < 500, answer
    assert needle in json.dumps(answer), answer


def _human_voldemort_game(store: Any, game_id: str, seed: int, key: str, token: str) -> None:
    """Planner Harry against a person (their moves: the reference brain's) to the end."""
    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="human", token_hash=hash_token(token), player=player_id(key)),
    }
    start_game(store, game_id, CLASSIC, seed, seats)
    played = sim.play_game(CLASSIC, seed, "planner", "reference", keep_events=True)
    commit_moves(store, game_id, played.events)


def test_memory_of_a_human_opponent_builds_up_under_their_player_id(store: Any) -> None:
    for n in range(3):  # three games, three seat tokens, one player key
        _human_voldemort_game(store, f"h{n}", 20 + n, KEY, token=f"seat-token-{n}-abcdefgh")
        outcome = compaction.compact(store, f"h{n}")
        assert outcome.summary.voldemort == f"player:{player_id(KEY)}"
    memory, _ = persist.load(store, "planner", f"player:{player_id(KEY)}")
    assert memory is not None and memory.games == 3 and memory.last_game == "h2"
    recent = store.recent_results("planner", f"player:{player_id(KEY)}")
    assert [s.game_id for s in recent.results] == ["h0", "h1", "h2"]


# ---------------------------------------------------------------- who gets memory
@pytest.mark.parametrize(
    ("agent", "reads"),
    [
        ("planner", True),
        ("gated", True),
        ("planner:robust", False),
        ("naive", False),
        ("naive:16", False),
        ("late:3", False),
        ("no-such-brain", False),
    ],
)
def test_reads_memory_names_the_brains_whose_start_up_reads_it(agent: str, reads: bool) -> None:
    assert persist.reads_memory(agent) is reads


@pytest.mark.parametrize(("brain", "written"), [("planner", True), ("naive", False)])
def test_memory_is_written_only_for_a_brain_that_reads_it(
    store: Any, brain: str, written: bool
) -> None:
    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain=brain),
        "voldemort": SeatInfo(kind="ai", brain="reference"),
    }
    start_game(store, "w1", CLASSIC, 5, seats)
    play_to_end(store, "w1")
    outcome = compaction.compact(store, "w1")
    assert outcome.written  # the result is always recorded
    assert (outcome.memory is not None) is written
    memory, _ = persist.load(store, brain, "reference")
    assert (memory is not None) is written


# ---------------------------------------------------------------- the serve stand-in
def test_the_stand_in_uses_the_compaction_lambdas_filter_and_record_handler() -> None:
    from horcrux.compaction_records import FINAL_EVENT_FILTER
    from horcrux_tools.local.ai_turns import _matches, final_record

    text = (ROOT / "infra" / "names.py").read_text()
    assert '"winner": {"S": [{"exists": True}]}' in text  # the CDK's filter, the same
    assert FINAL_EVENT_FILTER["dynamodb"] == {"NewImage": {"winner": {"S": [{"exists": True}]}}}
    assert _matches(final_record("g", 9, "harry"), FINAL_EVENT_FILTER)
    turn = final_record("g", 9, "harry")
    del turn["dynamodb"]["NewImage"]["winner"]
    assert not _matches(turn, FINAL_EVENT_FILTER)  # a non-final event never reaches it
    handler = (ROOT / "lambdas" / "compaction" / "handler.py").read_text()
    assert "compaction_record_handler(" in handler  # the Lambda runs the shared function


def test_the_stand_in_retries_a_failed_compaction_until_it_lands(store: Any) -> None:
    """A compaction that fails (the store is down) is retried, never dropped."""
    from horcrux_tools.local.ai_turns import AiTurns

    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="reference"),
    }
    start_game(store, "r1", CLASSIC, 4, seats)
    play_to_end(store, "r1")
    real = compaction.compact
    failures = {"left": 2}

    def flaky(*args: Any, **kw: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("the database is down")
        return real(*args, **kw)

    import horcrux.compaction_records as records

    original = records.compact
    records.compact = flaky  # type: ignore[assignment]
    ai = AiTurns(GameService(store), workers=1, backoff_s=0.01, max_backoff_s=0.02)
    try:
        ai.enqueue("r1")
        deadline = time.monotonic() + 30
        while "r1" not in ai.compacted:
            assert time.monotonic() < deadline, "the compaction was dropped"
            time.sleep(0.01)
    finally:
        records.compact = original  # type: ignore[assignment]
        ai.stop(1.0)
    assert ai.failures == 2 and ai.metrics.counts["MemoryConsolidated"] == 1
    memory, _ = persist.load(store, "planner", "reference")
    assert memory is not None and memory.last_game == "r1"
