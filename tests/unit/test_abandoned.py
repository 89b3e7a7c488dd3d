"""Abandoned games, derived: the heartbeat a write refreshes at most every `HEARTBEAT_S`, the
status a reader is told (`GameSnapshot.status_at`), the lobby key of an active game and the
key ranges the lobby reads (`common.lobby_range`), and what the page and the terminal say."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from horcrux import engine
from horcrux.rules import CLASSIC
from horcrux.settings import ABANDONED_AFTER_S, HEARTBEAT_S
from horcrux.store import GameSnapshot, SeatInfo, mapping, new_snapshot
from horcrux.store.common import LobbyRange, lobby_range
from horcrux.store.port import joined, live_since
from horcrux_tools.web.static import SITE_DIR
from horcrux_tools.web.words import left_sentence, words

T0 = 1_700_000_000
PEOPLE = {
    "harry": SeatInfo(kind="human", token_hash="a" * 64),
    "voldemort": SeatInfo(kind="human", token_hash="b" * 64),
}


def running_game(created: float = T0, game_id: str = "g1") -> GameSnapshot:
    state, _ = engine.new_game(CLASSIC, 3)
    return new_snapshot(game_id, state, dict(PEOPLE), now=created, ttl_seconds=30 * 86400)


def test_the_stated_idle_time_is_30_minutes_and_the_heartbeat_5() -> None:
    assert (ABANDONED_AFTER_S, HEARTBEAT_S) == (1800, 300)
    assert live_since(T0) == T0 - 2100


def test_an_active_game_is_abandoned_once_its_heartbeat_is_35_minutes_old() -> None:
    game = running_game()
    assert game.status == "active" and game.heartbeat == T0  # creation stands for it
    assert game.status_at(T0 + 2100) == "active"  # the heartbeat is exactly live_since
    assert game.status_at(T0 + 2100.9) == "active"  # whole seconds
    assert game.status_at(T0 + 2101) == "abandoned"
    assert game.status == "active"  # never stored: derived on every read


def test_open_and_over_games_are_never_abandoned() -> None:
    state, _ = engine.new_game(CLASSIC, 3)
    seats = {**PEOPLE, "voldemort": SeatInfo(kind="human")}
    waiting = new_snapshot("g2", state, seats, now=T0, ttl_seconds=86400)
    assert waiting.status_at(T0 + 10 * 86400) == "open"
    over = running_game().model_copy(
        update={"state": state.model_copy(update={"phase": "over", "winner": "harry"})}
    )
    assert over.status_at(T0 + 10 * 86400) == "over"


def test_the_heartbeat_moves_only_when_it_is_5_minutes_old() -> None:
    game = running_game()
    assert game.beating(T0 + 299.9) is game  # unchanged: nothing new to write
    beat = game.beating(T0 + 300.5)
    assert beat.active_at == T0 + 300 and beat.heartbeat == T0 + 300
    assert beat.beating(T0 + 599) is beat
    assert beat.beating(T0 + 100) is beat  # a clock that went back moves nothing


def test_a_join_that_starts_the_game_refreshes_the_heartbeat() -> None:
    state, _ = engine.new_game(CLASSIC, 3)
    seats = {**PEOPLE, "voldemort": SeatInfo(kind="human")}
    waiting = new_snapshot("g3", state, seats, now=T0, ttl_seconds=86400)
    late = joined(waiting, "voldemort", "c" * 64, now=T0 + 3600)  # an hour in the lobby
    assert late.status_at(T0 + 3600) == "active" and late.heartbeat == T0 + 3600
    assert joined(waiting, "voldemort", "c" * 64).active_at is None  # no clock: as before


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(min_value=0, max_value=2400), min_size=1, max_size=40),
    idle=st.integers(min_value=0, max_value=3000),
)
def test_abandoned_means_no_move_for_30_minutes_and_is_said_within_5_more(
    gaps: list[int], idle: int
) -> None:
    """Moves at any times, each refreshing the heartbeat as a store does: at `idle` seconds
    after the last one, the game is abandoned only if nobody moved for 30 minutes, and
    surely once nobody moved for 35."""
    game = running_game()
    now = T0
    for gap in gaps:
        now += gap
        game = game.beating(now)
    said = game.status_at(now + idle)
    if idle <= ABANDONED_AFTER_S:
        assert said == "active"
    if idle > ABANDONED_AFTER_S + HEARTBEAT_S:
        assert said == "abandoned"


def test_a_game_moving_every_10_seconds_refreshes_its_heartbeat_once_per_5_minutes() -> None:
    game = running_game()
    keys = {mapping.lobby_sort_key(game)}
    for step in range(1, 181):  # 30 minutes of moves
        game = game.beating(T0 + 10 * step)
        keys.add(mapping.lobby_sort_key(game))
    assert len(keys) == 1 + 1800 // HEARTBEAT_S  # 7 lobby keys in 180 moves


def test_an_active_games_lobby_key_is_its_heartbeat_and_the_others_their_creation() -> None:
    game = running_game(created=T0 + 0.25).beating(T0 + 400)
    assert mapping.lobby_sort_key(game) == f"{(T0 + 400) * 1000:015d}#g1"
    state, _ = engine.new_game(CLASSIC, 3)
    waiting = new_snapshot(
        "g2", state, {**PEOPLE, "voldemort": SeatInfo(kind="human")}, now=T0 + 0.25
    )
    assert mapping.lobby_sort_key(waiting) == f"{T0 * 1000 + 250:015d}#g2"
    item = mapping.encode_snapshot(game)
    assert item["beat"] == {"N": str(T0 + 400)} and item["lobby_sk"]["S"].endswith("#g1")
    assert mapping.decode_snapshot(item).active_at == T0 + 400
    assert "beat" not in mapping.encode_snapshot(running_game())  # an untouched game: none


def test_the_lobby_ranges_split_the_active_partition_at_the_heartbeat_cut() -> None:
    now = T0 + 5000
    cut = mapping.heartbeat_key(live_since(now))
    at_cut = f"{cut}#a"  # heartbeat exactly live_since: still being played
    before = f"{mapping.heartbeat_key(live_since(now) - 1)}#z"
    active, abandoned = lobby_range("active", now), lobby_range("abandoned", now)
    assert active == LobbyRange("active", after=cut) and abandoned.before == cut
    assert active.holds(at_cut) and not active.holds(before)
    assert abandoned.holds(before) and not abandoned.holds(at_cut)
    assert lobby_range("open", now, "c") == LobbyRange("open", after="c")
    assert lobby_range("over", now) == LobbyRange("over")
    # a cursor: strictly after it, on both sides of the cut
    assert lobby_range("active", now, before) == active  # a cursor below the cut: the cut
    assert not lobby_range("active", now, at_cut).holds(at_cut)
    earlier = mapping.heartbeat_key(live_since(now) - 100)
    paged = lobby_range("abandoned", now, f"{earlier}#g")
    assert not paged.holds(f"{earlier}#g") and paged.holds(f"{earlier}#g-2")
    assert not paged.holds(f"{earlier}#f")
    assert paged.holds(before) and not paged.holds(at_cut)
    assert lobby_range("abandoned", now, at_cut).empty  # nothing abandoned after the cut


@pytest.mark.parametrize(
    ("bounds", "condition"),
    [
        ({}, "#lobby = :status"),
        ({"after": "1#a"}, "#lobby = :status AND #lsk > :after"),
        ({"before": "2"}, "#lobby = :status AND #lsk < :before"),
        ({"after": "1#a", "before": "2"}, "#lobby = :status AND #lsk BETWEEN :after AND :before"),
    ],
)
def test_the_key_condition_is_the_range_the_memory_store_reads(
    bounds: dict[str, str], condition: str
) -> None:
    keys = LobbyRange("active", **bounds)
    said, names, values = keys.condition()
    assert said == condition
    assert values[":status"] == {"S": "active"} and names["#lobby"] == "lobby"
    if "after" in bounds and "before" in bounds:  # BETWEEN is inclusive: after + "#"
        assert values[":after"] == {"S": "1#a#"}
        assert keys.holds("1#a-") and not keys.holds("1#a") and not keys.holds("2#a")


def test_the_page_and_the_terminal_say_the_same_idle_time_as_the_server() -> None:
    left = words()["left"]
    assert left["minutes"] * 60 == ABANDONED_AFTER_S
    for voice in ("player", "waiting", "spectator"):
        said = left_sentence(voice, "Ginny")
        assert "30 minutes" in said and "{" not in said
    assert "Ginny moves" in left_sentence("waiting", "Ginny")
    assert "make your move" in left_sentence("player")
    page = "".join(p.read_text(encoding="utf-8") for p in sorted(SITE_DIR.glob("*.js")))
    assert "state.words.left" in page and 'g.status === "abandoned"' in page
    raw = json.loads((SITE_DIR / "words.json").read_text(encoding="utf-8"))
    assert "abandoned" not in json.dumps(raw["left"])  # the players' word is "left"
