"""The store's contract, run against both adapters: in memory and DynamoDB (moto 5)."""

from __future__ import annotations

import functools
import pathlib
import random
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from api_fixtures import memory_or_moto
from conftest import Clock, set_aws_env
from moto import mock_aws

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.models import Attack, HarryMoved, Pass, Search
from horcrux.rules import CLASSIC
from horcrux.store import (
    BELIEF_HISTORY_MAX,
    SNAPSHOT_BUDGET_BYTES,
    Conflict,
    DynamoDbStore,
    GameSnapshot,
    ItemTooLarge,
    MemoryStore,
    NotFound,
    SeatInfo,
    capacity,
    hash_token,
    mapping,
    new_snapshot,
    read_log,
    ttl_seconds_from_env,
)
from horcrux.store.port import BeliefPoint, GameStore
from horcrux.views import harry_view, voldemort_view
from horcrux_tools import sim
from horcrux_tools.local.calls import CallRecorder
from horcrux_tools.local.tables import create_tables
from horcrux_tools.selfplay import play_move, play_to_end, start_game

T0 = 1_700_000_000.0
DAY = 86400
AI_SEATS = {
    "harry": SeatInfo(kind="ai", brain="naive"),
    "voldemort": SeatInfo(kind="ai", brain="reference"),
}


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_aws_env(monkeypatch)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "dynamodb"])
def store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> Iterator[Any]:
    yield from memory_or_moto(request.param, monkeypatch, clock)


def make_game(
    store: GameStore, game_id: str = "g1", seed: int = 0, seats: dict[str, SeatInfo] | None = None
) -> GameSnapshot:
    return start_game(
        store, game_id, CLASSIC, seed, dict(seats or AI_SEATS), now=T0, ttl_seconds=30 * DAY
    )


def harry_search(snapshot: GameSnapshot, location: str) -> tuple[GameSnapshot, HarryMoved]:
    state, event = engine.apply(snapshot.state, Search(location=location))
    return snapshot.advanced(state), event


@functools.cache
def seed_reaching_turn_50() -> int:
    """A seed whose naive-vs-reference game lasts all 50 turns."""
    for seed in range(200):
        if sim.play_game(CLASSIC, seed, "naive", "reference").turns == 50:
            return seed
    raise AssertionError("no seed reaches turn 50")


def belief_stub(seed: int, size: int = 8192) -> Any:
    """Harry's Layer-2 stand-in: `size` random bytes (8 KB) and a (turn, entropy, top-3)
    point per Harry move."""
    rnd = random.Random(seed)
    locs = list(CLASSIC.locations)

    def hook(before: GameSnapshot, after: GameSnapshot) -> Any:
        if before.state.phase != "harry":
            return None
        top = [(loc, rnd.random()) for loc in rnd.sample(locs, 3)]
        point = BeliefPoint(turn=before.turn, entropy=rnd.uniform(0, 4), top=tuple(top))
        return {"harry": rnd.randbytes(size)}, point

    return hook


# ---------------------------------------------------------------- create / load
def test_create_then_load_round_trips_the_snapshot(store: Any) -> None:
    created = make_game(store)
    loaded = store.load("g1")
    assert loaded == created
    assert loaded.version == 0 and loaded.status == "active" and loaded.turn == 1
    assert store.events("g1").events[0].type == "game_started"


def test_an_ai_move_s_decision_note_round_trips_on_its_event_and_is_cut_never_lost(
    store: Any,
) -> None:
    from horcrux.decisions import NOTE_TEXT_MAX, DecisionRecord, DecisionTrace, decision_note

    snap = make_game(store)
    state, event = engine.apply(snap.state, Search(location="hogwarts"))
    trace = DecisionTrace(
        system="s", prompt="Turn 1/50.\n" + "x" * NOTE_TEXT_MAX, reply="search Hogwarts",
        offered=("search Hogwarts", "attack Azkaban"), llm_move="search Hogwarts",
        played="search Hogwarts", planner_move="search Azkaban",
    )  # fmt: skip
    record = DecisionRecord(
        turn=1, tier="compressed", source="llm", tokens_in=212, tokens_out=9,
        latency_ms=412.5, trace=trace,
    )  # fmt: skip
    note = decision_note("harry", "llm:local", 1, "search Hogwarts", record)
    assert note.cut == ("context",) and note.context == trace.prompt[:NOTE_TEXT_MAX]
    assert note.reply == "search Hogwarts" and note.planner_move == "search Azkaban"
    after = snap.advanced(state)
    store.commit_turn(0, after, event, note)
    page = store.events("g1")
    assert page.decisions == (note,)
    assert [e.seq for e in page.events] == [0, 1]
    assert store.load("g1") == after  # the snapshot carries no note
    later = store.events("g1", after=1)
    assert later.decisions == () and later.events == []


def test_snapshot_round_trips_beliefs_and_history(store: Any) -> None:
    snap = make_game(store)
    state, event = engine.apply(snap.state, Search(location="hogwarts"))
    point = BeliefPoint(turn=1, entropy=3.1234, top=(("hogwarts", 0.5), ("azkaban", 0.25)))
    after = snap.advanced(state, beliefs={"harry": b"\x00\xff" * 100}, belief_point=point)
    store.commit_turn(0, after, event)
    loaded = store.load("g1")
    assert loaded == after
    assert loaded.beliefs == {"harry": b"\x00\xff" * 100}
    assert loaded.belief_history == (point,)


def test_creating_an_existing_game_is_a_conflict(store: Any) -> None:
    make_game(store)
    with pytest.raises(Conflict) as info:
        make_game(store, seed=1)
    assert info.value.reason == "exists"
    assert info.value.current == store.load("g1")
    assert store.load("g1").state.seed == 0


def test_loading_a_missing_game_is_not_found(store: Any) -> None:
    with pytest.raises(NotFound):
        store.load("nope")


# ---------------------------------------------------------------- conditional writes
def test_two_commits_from_one_version_exactly_one_wins(store: Any) -> None:
    snap = make_game(store)
    first, first_event = harry_search(snap, "hogwarts")
    second, second_event = harry_search(snap, "azkaban")
    store.commit_turn(snap.version, first, first_event)
    with pytest.raises(Conflict) as info:
        store.commit_turn(snap.version, second, second_event)
    assert info.value.reason == "version"
    assert info.value.current == first
    assert store.load("g1") == first
    events = store.events("g1").events
    assert [e.seq for e in events] == [0, 1]
    assert events[1] == first_event


def test_recommitting_the_same_event_is_a_conflict_and_writes_nothing(store: Any) -> None:
    snap = make_game(store)
    after, event = harry_search(snap, "hogwarts")
    store.commit_turn(snap.version, after, event)
    before = store.raw_items("g1")
    with pytest.raises(Conflict) as info:
        store.commit_turn(snap.version, after, event)
    assert info.value.current == after
    assert store.raw_items("g1") == before


def test_a_stale_version_with_a_new_seq_writes_no_event(store: Any) -> None:
    """The event put and the snapshot put are one transaction: both or neither."""
    snap = make_game(store)
    after, event = harry_search(snap, "hogwarts")
    store.commit_turn(0, after, event)
    state2, event2 = engine.apply(after.state, Pass())
    with pytest.raises(Conflict):
        store.commit_turn(0, after.advanced(state2).model_copy(update={"version": 1}), event2)
    assert [e.seq for e in store.events("g1").events] == [0, 1]


def test_the_log_is_append_only_even_for_a_current_version(store: Any) -> None:
    """A caller that passes the current version but a stale state (a bug) cannot overwrite
    an event: the event's own condition refuses an existing seq."""
    snap = make_game(store)
    first, first_event = harry_search(snap, "hogwarts")
    store.commit_turn(0, first, first_event)
    stale, stale_event = harry_search(snap, "azkaban")  # seq 1 again, built on version 0
    with pytest.raises(Conflict) as info:
        store.commit_turn(1, stale.model_copy(update={"version": 2}), stale_event)
    assert info.value.reason == "duplicate_event"
    assert info.value.current == first
    assert store.events("g1").events[1] == first_event


def test_commit_checks_its_arguments(store: Any) -> None:
    snap = make_game(store)
    after, event = harry_search(snap, "hogwarts")
    with pytest.raises(ValueError, match="version"):
        store.commit_turn(5, after, event)
    with pytest.raises(ValueError, match="seq"):
        store.commit_turn(0, after, event.model_copy(update={"seq": 7}))
    assert store.load("g1") == snap


def test_committing_to_a_missing_game_is_not_found(store: Any) -> None:
    snap = new_snapshot("ghost", engine.new_game(CLASSIC, 0)[0], AI_SEATS, now=T0)
    after, event = harry_search(snap, "hogwarts")
    with pytest.raises(NotFound):
        store.commit_turn(0, after, event)
    assert store.events("ghost").events == []


def test_oversized_items_are_refused_before_writing(store: Any) -> None:
    snap = make_game(store)
    state, event = engine.apply(snap.state, Search(location="hogwarts"))
    huge = snap.advanced(state, beliefs={"harry": b"x" * 500_000})
    with pytest.raises(ItemTooLarge):
        store.commit_turn(0, huge, event)
    assert store.load("g1") == snap


def test_memory_store_serialises_concurrent_commits() -> None:
    store = MemoryStore(clock=Clock())
    snap = make_game(store)
    wins: list[int] = []
    conflicts: list[Conflict] = []

    def commit(i: int) -> None:
        after, event = harry_search(snap, CLASSIC.locations[i])
        try:
            store.commit_turn(0, after, event)
            wins.append(i)
        except Conflict as exc:
            conflicts.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(conflicts) == 7
    assert all(c.current == store.load("g1") for c in conflicts)
    assert [e.seq for e in store.events("g1").events] == [0, 1]


# ---------------------------------------------------------------- TTL
def test_every_item_carries_the_games_ttl(store: Any) -> None:
    make_game(store)
    for location in ("hogwarts", "azkaban"):
        play_move(store, "g1", lambda s, loc=location: _harry_or_pass(s, loc))
        play_move(store, "g1", lambda s: Pass())
    raw = store.raw_items("g1")
    assert len(raw) == 1 + 5  # the snapshot and events 0..4
    assert {mapping.ttl_of(i) for i in raw} == {int(T0) + 30 * DAY}


def test_ttl_defaults_to_30_days_and_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HORCRUX_TTL_DAYS", raising=False)
    assert ttl_seconds_from_env() == 30 * DAY
    snap = new_snapshot("g", engine.new_game(CLASSIC, 0)[0], AI_SEATS, now=T0)
    assert snap.expires_at == int(T0) + 30 * DAY
    monkeypatch.setenv("HORCRUX_TTL_DAYS", "2")
    assert new_snapshot("g", snap.state, AI_SEATS, now=T0).expires_at == int(T0) + 2 * DAY
    monkeypatch.setenv("HORCRUX_TTL_DAYS", "0")
    with pytest.raises(ValueError):
        ttl_seconds_from_env()


def test_an_expired_game_reads_as_not_found(store: Any, clock: Clock) -> None:
    snap = make_game(store, seats={"harry": SeatInfo(kind="human"), **_ai_voldemort()})
    after, event = harry_search(snap, "hogwarts")
    clock.now = T0 + 30 * DAY + 1
    with pytest.raises(NotFound):
        store.load("g1")
    with pytest.raises(NotFound):
        store.commit_turn(0, after, event)
    with pytest.raises(NotFound):
        store.join_seat("g1", "harry", hash_token("t"))
    assert store.events("g1").events == []
    assert store.list_open_games().games == []
    assert len(store.raw_items("g1")) == 2  # deletion is lazy: both items are still there
    clock.now = T0 + 30 * DAY - 1
    assert store.load("g1") == snap


# ---------------------------------------------------------------- events
def test_events_paginate_without_gap_or_duplicate(store: Any) -> None:
    make_game(store)
    for i in range(10):
        play_move(store, "g1", lambda s, i=i: _harry_or_pass(s, CLASSIC.locations[i]))
    all_events = store.events("g1", limit=1000)
    assert [e.seq for e in all_events.events] == list(range(11))
    assert all_events.next_after is None

    seen: list[int] = []
    after, pages = -1, 0
    while True:
        page = store.events("g1", after=after, limit=4)
        pages += 1
        seen += [e.seq for e in page.events]
        if page.next_after is None:
            break
        assert page.next_after == page.events[-1].seq
        after = page.next_after
    assert seen == list(range(11)) and pages == 3

    exact = store.events("g1", after=6, limit=4)  # exactly the last 4: no further page
    assert [e.seq for e in exact.events] == [7, 8, 9, 10] and exact.next_after is None
    assert store.events("g1", after=10).events == []
    with pytest.raises(ValueError):
        store.events("g1", limit=0)


# ---------------------------------------------------------------- lobby and seats
def _ai_voldemort() -> dict[str, SeatInfo]:
    return {"voldemort": SeatInfo(kind="ai", brain="reference")}


def test_lobby_lists_games_with_a_free_human_seat_oldest_first(store: Any) -> None:
    human = SeatInfo(kind="human")
    for i, seats in enumerate(
        [
            {"harry": human, **_ai_voldemort()},
            AI_SEATS,
            {"harry": human, "voldemort": human},
            {"harry": SeatInfo(kind="human", token_hash=hash_token("a")), **_ai_voldemort()},
            {"harry": human, **_ai_voldemort()},
        ]
    ):
        start_game(store, f"g{i}", CLASSIC, i, dict(seats), now=T0 + i, ttl_seconds=DAY)
    lobby = store.list_open_games()
    assert [g.game_id for g in lobby.games] == ["g0", "g2", "g4"]
    assert lobby.cursor is None
    assert lobby.games[1].open_seats == ("harry", "voldemort")
    assert lobby.games[0].rules_name == "classic" and lobby.games[0].created_at == T0

    first = store.list_open_games(limit=2)
    assert [g.game_id for g in first.games] == ["g0", "g2"] and first.cursor is not None
    rest = store.list_open_games(limit=2, cursor=first.cursor)
    assert [g.game_id for g in rest.games] == ["g4"] and rest.cursor is None

    store.join_seat("g2", "harry", hash_token("b"))
    assert store.list_open_games().games[1].open_seats == ("voldemort",)
    store.join_seat("g2", "voldemort", hash_token("c"))
    store.join_seat("g0", "harry", hash_token("d"))
    assert [g.game_id for g in store.list_open_games().games] == ["g4"]
    assert store.load("g2").status == "active"


def test_a_private_game_round_trips_its_invite_hash_and_is_never_listed(store: Any) -> None:
    human = SeatInfo(kind="human")
    seats = {"harry": human, "voldemort": human}
    state, started = engine.new_game(CLASSIC, 7)
    hidden = new_snapshot(
        "hidden", state, dict(seats), now=T0, ttl_seconds=DAY, invite_hash=hash_token("code")
    )
    assert hidden.private and store.create_game(hidden, started) == hidden
    start_game(store, "shown", CLASSIC, 8, dict(seats), now=T0 + 1, ttl_seconds=DAY)
    loaded = store.load("hidden")
    assert loaded == hidden and loaded.invite_hash == hash_token("code") and loaded.private
    assert not store.load("shown").private and store.load("shown").invite_hash is None
    assert [g.game_id for g in store.list_open_games().games] == ["shown"]
    # joined and played, it keeps its hash and stays out of every listing
    joined = store.join_seat("hidden", "harry", hash_token("a"))
    joined = store.join_seat("hidden", "voldemort", hash_token("b"))
    assert joined.invite_hash == hash_token("code") and joined.status == "active"
    new_state, event = engine.apply(joined.state, Search(location="hogwarts"))
    committed = store.commit_turn(joined.version, joined.advanced(new_state), event)
    assert store.load("hidden") == committed and committed.private
    for status in ("open", "active", "over"):
        assert "hidden" not in [g.game_id for g in store.list_games(status).games]


def test_a_seat_taken_twice_is_a_conflict(store: Any) -> None:
    make_game(store, seats={"harry": SeatInfo(kind="human"), **_ai_voldemort()})
    joined = store.join_seat("g1", "harry", hash_token("alice"))
    assert joined.version == 1 and joined.seats["harry"].token_hash == hash_token("alice")
    with pytest.raises(Conflict) as info:
        store.join_seat("g1", "harry", hash_token("bob"))
    assert info.value.reason == "seat_taken"
    assert info.value.current == joined
    with pytest.raises(Conflict):
        store.join_seat("g1", "voldemort", hash_token("bob"))  # an AI seat
    assert store.load("g1") == joined


def test_a_join_moves_the_version_so_a_stale_commit_conflicts(store: Any) -> None:
    snap = make_game(
        store,
        seats={"harry": SeatInfo(kind="ai", brain="naive"), "voldemort": SeatInfo(kind="human")},
    )
    after, event = harry_search(snap, "hogwarts")
    store.join_seat("g1", "voldemort", hash_token("v"))
    with pytest.raises(Conflict) as info:
        store.commit_turn(0, after, event)
    assert info.value.current is not None
    assert info.value.current.seats["voldemort"].token_hash == hash_token("v")


# ---------------------------------------------------------------- a whole game
def test_a_whole_game_costs_one_read_and_one_write_per_move(store: Any) -> None:
    seed = seed_reaching_turn_50()
    make_game(store, seed=seed)
    per_move: list[tuple[int, dict[str, int]]] = []
    hook = belief_stub(seed)
    decide = make_decider(seed)
    snap = store.load("g1")
    while not snap.state.over:
        before = Counter(store.op_counts)
        snap = play_move(store, "g1", decide, hook)
        per_move.append((snap.turn, dict(Counter(store.op_counts) - before)))
    assert snap.turn == 50 and snap.state.winner == "voldemort"
    assert {tuple(sorted(c.items())) for _, c in per_move} == {
        (("GetItem", 1), ("TransactWriteItems", 1))
    }
    assert per_move[0][0] == 1 and per_move[-1][0] == 50

    events = store.events("g1", limit=1000).events
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].winner == "voldemort"
    assert sim.play_game(CLASSIC, seed, "naive", "reference", keep_events=True).events == events

    # the hot path's item stays within budget at turn 50 with an opaque 8 KB belief; the
    # belief history is in the log (one point per Harry move), the snapshot keeps the last
    item = store.raw_items("g1")[0]
    size = capacity.item_size(item)
    history = read_log(store, "g1")[1]
    assert [p.turn for p in history] == list(range(1, 51))
    assert snap.belief_history == history[-1:]
    assert len(snap.beliefs["harry"]) == 8192
    assert 8192 < size <= SNAPSHOT_BUDGET_BYTES, size
    assert store.load("g1") == snap


def make_decider(seed: int) -> Any:
    """A fresh naive Harry and reference Voldemort for one game, kept across its moves."""
    harry = HARRY_BRAINS.create("naive", CLASSIC)
    voldemort = VOLDEMORT_BRAINS.create("reference", CLASSIC)

    def decide(s: GameSnapshot) -> Any:
        if s.state.phase == "harry":
            return harry.decide(harry_view(s.state), rng.stream(seed, "harry", s.turn))
        return voldemort.decide(voldemort_view(s.state), rng.stream(seed, "voldemort", s.turn))

    return decide


def test_play_to_end_matches_the_simulator(store: Any) -> None:
    make_game(store, seed=3)
    final = play_to_end(store, "g1")
    expected = sim.play_game(CLASSIC, 3, "naive", "reference")
    assert final.state.winner == expected.winner and final.turn == expected.turns


def _harry_or_pass(snapshot: GameSnapshot, location: str) -> Any:
    if snapshot.state.phase == "harry":
        return Search(location=location)
    return Pass()


def test_bounded_belief_history_keeps_the_last_points() -> None:
    snap = new_snapshot("g", engine.new_game(CLASSIC, 0)[0], AI_SEATS, now=T0)
    for turn in range(1, 2 * BELIEF_HISTORY_MAX):
        point = BeliefPoint(turn=turn, entropy=1.0, top=(("hogwarts", 0.9),))
        snap = snap.advanced(snap.state, belief_point=point)
    assert len(snap.belief_history) == BELIEF_HISTORY_MAX
    assert snap.belief_history[-1].turn == 2 * BELIEF_HISTORY_MAX - 1
    with pytest.raises(ValueError):
        GameSnapshot.model_validate(
            {**snap.model_dump(), "belief_history": [snap.belief_history[0]] * 51}
        )


# ---------------------------------------------------------------- DynamoDB specifics
@pytest.fixture
def dynamo(aws_env: None, clock: Clock) -> Iterator[DynamoDbStore]:
    with mock_aws():
        store = DynamoDbStore(clock=clock)
        create_tables(store)
        yield store


def test_tables_have_stream_ttl_and_a_sparse_lobby_index(dynamo: DynamoDbStore) -> None:
    client = dynamo.client
    events = client.describe_table(TableName="test-events")["Table"]
    assert events["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    games = client.describe_table(TableName="test-games")["Table"]
    assert [i["IndexName"] for i in games["GlobalSecondaryIndexes"]] == ["lobby"]
    for table in ("test-events", "test-games"):
        ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == "ttl"
    create_tables(dynamo)  # idempotent


def test_the_stream_carries_every_event_and_flags_the_end(dynamo: DynamoDbStore) -> None:
    make_game(dynamo, seed=3)
    play_to_end(dynamo, "g1")
    arn = dynamo.client.describe_table(TableName="test-events")["Table"]["LatestStreamArn"]
    import boto3

    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    images = [r["dynamodb"]["NewImage"] for r in records if r["eventName"] == "INSERT"]
    assert [int(i["seq"]["N"]) for i in images] == list(range(len(images)))
    assert [i for i in images if "winner" in i] == [images[-1]]


def test_calls_record_consumed_capacity_and_estimates(aws_env: None, clock: Clock) -> None:
    recorder = CallRecorder()
    with mock_aws():
        dynamo = DynamoDbStore(clock=clock, recorder=recorder)
        create_tables(dynamo)
        make_game(dynamo)
        recorder.calls.clear()
        play_move(dynamo, "g1", lambda s: Attack(location="hogwarts"))
    get, write = recorder.calls
    assert get.op == "GetItem" and get.reported_units is not None and get.read_units == 1.0
    assert get.target == "SNAPSHOT"
    assert write.op == "TransactWriteItems" and write.write_units >= 4.0
    assert write.item_bytes > get.item_bytes > 0


def test_by_default_a_store_keeps_nothing_per_call(dynamo: DynamoDbStore) -> None:
    """A Lambda container's store lives for thousands of calls: none may grow its memory."""

    def sizes() -> dict[str, int]:
        return {k: len(v) for k, v in vars(dynamo).items() if hasattr(v, "__len__")}

    make_game(dynamo, seed=3)
    play_move(dynamo, "g1", lambda s: Search(location="hogwarts"))
    dynamo.events("g1")
    before = sizes()
    final = play_to_end(dynamo, "g1")
    for _ in range(50):
        dynamo.load("g1")
        dynamo.events("g1")
    assert final.version > 10 and sum(dynamo.op_counts.values()) > 100  # many calls made
    assert dynamo.recorder is None
    assert sizes() == before  # op_counts: one key per operation name, all seen already


def test_the_client_is_created_lazily(aws_env: None) -> None:
    store = DynamoDbStore()
    assert store._client is None
    assert store.settings.games_table == "test-games"
    assert store.settings.events_table == "test-events"


def test_only_the_dynamodb_adapter_imports_boto3() -> None:
    root = pathlib.Path(__file__).resolve().parents[2] / "shared" / "horcrux"
    users = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "import boto3" in p.read_text() or "botocore" in p.read_text()
    )
    assert users == ["store/dynamodb.py", "store/dynamodb_client.py"]
    code = "import sys, horcrux.store; assert 'boto3' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- capacity
def test_item_size_counts_names_and_values_as_dynamodb_does() -> None:
    assert capacity.item_size({"ab": {"S": "xyz"}}) == 5
    assert capacity.item_size({"n": {"N": "12345"}}) == 1 + 4
    assert capacity.item_size({"n": {"N": "-0.0100"}}) == 1 + 2
    assert capacity.item_size({"b": {"B": b"\x00" * 10}}) == 11
    assert capacity.item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1
    assert capacity.item_size({"l": {"L": [{"BOOL": True}, {"NULL": True}]}}) == 1 + 3 + 2 + 2
    assert capacity.read_units(4096) == 1.0 and capacity.read_units(4097) == 2.0
    assert capacity.write_units(1025, transactional=True) == 4.0


def test_display_names_are_stored_on_seats_and_projected_into_the_lobby(store: Any) -> None:
    alice = SeatInfo(kind="human", token_hash=hash_token("a"), name="Zoë O'Brien")
    start_game(
        store, "g1", CLASSIC, 1, {"harry": alice, "voldemort": SeatInfo(kind="human")}, now=T0
    )
    loaded = store.load("g1")
    assert loaded.seats["harry"].name == "Zoë O'Brien" and loaded.seats["voldemort"].name is None
    (entry,) = store.list_games("open").games
    assert entry.names == {"harry": "Zoë O'Brien"}
    joined = store.join_seat("g1", "voldemort", hash_token("b"), "Tom")
    assert joined.seats["voldemort"] == SeatInfo(
        kind="human", token_hash=hash_token("b"), name="Tom"
    )
    assert store.load("g1") == joined
    (entry,) = store.list_games("active").games
    assert entry.names == {"harry": "Zoë O'Brien", "voldemort": "Tom"}
    # a join without a name stores none; an AI seat or a free seat cannot carry one
    start_game(
        store, "g2", CLASSIC, 2, {"harry": SeatInfo(kind="human"), **_ai_voldemort()}, now=T0
    )
    assert store.join_seat("g2", "harry", hash_token("c")).seats["harry"].name is None
    assert store.list_games("active").games[1].names == {}
    with pytest.raises(ValueError, match="only a taken human seat has a name"):
        SeatInfo(kind="ai", brain="reference", name="Bot")
    with pytest.raises(ValueError, match="only a taken human seat has a name"):
        SeatInfo(kind="human", name="Nobody yet")
