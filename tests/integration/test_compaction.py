"""The compaction Lambda and its pure logic, against both store adapters (moto 5 for DynamoDB).

Games are played for real through `horcrux_tools.selfplay`; the stream records are built
from the stored event items as DynamoDB Streams delivers them (NewImage in DynamoDB JSON).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import pathlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from api_fixtures import memory_or_moto
from aws_lambda_powertools.metrics import EphemeralMetrics
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from conftest import Clock, commit_moves, set_aws_env
from moto import mock_aws
from test_store import belief_stub

from horcrux import compaction, engine, rng
from horcrux.models import AnyAction, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC
from horcrux.settings import compaction_settings
from horcrux.store import (
    Conflict,
    DynamoDbStore,
    GameSnapshot,
    MemoryStore,
    NotFound,
    SeatInfo,
)
from horcrux.store.port import AnyEvent, BeliefPoint, ResultStore, read_log
from horcrux.store.results import (
    RESULT_SK,
    GameSummary,
    decode_recent,
    encode_result,
    recent_key,
    result_key,
)
from horcrux_tools import sim
from horcrux_tools.local.tables import create_tables
from horcrux_tools.selfplay import play_to_end, start_game

ROOT = pathlib.Path(__file__).resolve().parents[2]
T0 = 1_700_000_000.0
DAY = 86400
AI_SEATS: dict[Any, SeatInfo] = {
    "harry": SeatInfo(kind="ai", brain="naive"),
    "voldemort": SeatInfo(kind="ai", brain="reference"),
}
SCOPE = ("naive", "reference")


def load_handler_module() -> ModuleType:
    """lambdas/ is no package (each function ships its own handler.py): load by path."""
    path = ROOT / "lambdas" / "compaction" / "handler.py"
    spec = importlib.util.spec_from_file_location("compaction_handler", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


H = load_handler_module()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    set_aws_env(monkeypatch)
    monkeypatch.delenv("HORCRUX_RESULTS_KEEP", raising=False)
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)


@pytest.fixture(params=["memory", "dynamodb"])
def store(
    request: pytest.FixtureRequest, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    yield from memory_or_moto(request.param, monkeypatch, Clock())


@pytest.fixture
def memory_store(aws_env: None) -> MemoryStore:
    return MemoryStore(clock=Clock())


# ---------------------------------------------------------------- helpers
def play(
    store: ResultStore, game_id: str, seed: int, seats: dict[Any, SeatInfo] | None = None
) -> GameSnapshot:
    start_game(store, game_id, CLASSIC, seed, dict(seats or AI_SEATS), now=T0, ttl_seconds=DAY)
    return play_to_end(store, game_id, belief=belief_stub(seed, size=64))


def event_items(store: Any, game_id: str) -> list[dict[str, Any]]:
    return [i for i in store.raw_items(game_id) if "seq" in i]


_DES, _SER = TypeDeserializer(), TypeSerializer()
_counter = iter(range(10**6))


def stream_record(image: dict[str, Any], event_name: str = "INSERT") -> dict[str, Any]:
    """One DynamoDB Streams record (NEW_IMAGE) for an events-table item `image`, given
    as low-level attribute values or as plain Python values."""
    plain = {k: _DES.deserialize(v) if _is_low(v) else v for k, v in image.items()}
    new_image = {k: _SER.serialize(v) for k, v in plain.items()}
    keys = {k: new_image[k] for k in ("pk", "seq") if k in new_image}
    n = next(_counter)
    dynamodb: dict[str, Any] = {
        "ApproximateCreationDateTime": int(T0),
        "Keys": keys,
        "SequenceNumber": f"{100000000000000000000 + n}",
        "SizeBytes": 200,
        "StreamViewType": "NEW_IMAGE",
    }
    if event_name != "REMOVE":
        dynamodb["NewImage"] = new_image
    record = {
        "eventID": f"ev-{n}",
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-west-1",
        "dynamodb": dynamodb,
        "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/test-events/stream/x",
    }
    # what arrives is JSON, binary values (an event's belief point) in base64
    arrived: dict[str, Any] = json.loads(
        json.dumps(record, default=lambda b: base64.b64encode(bytes(b)).decode())
    )
    return arrived


def _is_low(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPES


_TYPES = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}


def final_record(store: Any, game_id: str) -> dict[str, Any]:
    (item,) = [i for i in event_items(store, game_id) if "winner" in i]
    return stream_record(item)


def seq_of(record: dict[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def emf(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF blobs printed since the last call (Powertools prints one JSON per flush)."""
    out = []
    for line in capsys.readouterr().out.splitlines():
        try:
            blob = json.loads(line)
        except ValueError:
            continue
        if isinstance(blob, dict) and "_aws" in blob:
            out.append(blob)
    return out


def run(store: ResultStore, records: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    handler = H.make_handler(store, EphemeralMetrics(namespace="HorcruxTest"), **kw)
    response: dict[str, Any] = handler({"Records": records}, None)
    return response


def all_events(store: ResultStore, game_id: str) -> list[AnyEvent]:
    return compaction.read_events(store, game_id)


def whole_history(store: ResultStore, game_id: str) -> tuple[BeliefPoint, ...]:
    """Harry's whole belief history: one point in each of his moves' events."""
    return read_log(store, game_id)[1]


# ---------------------------------------------------------------- the handler
def test_replay_equals_snapshot_no_repair_and_the_record_lands_at_both_places(
    store: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    final = play(store, "g1", seed=3)
    records = [stream_record(i) for i in event_items(store, "g1")]
    assert sum("winner" in r["dynamodb"]["NewImage"] for r in records) == 1
    capsys.readouterr()
    response = run(store, records)
    assert response == {"batchItemFailures": []}
    assert store.load("g1") == final, "no repair: the snapshot is untouched"
    summary = store.result("g1")
    history = whole_history(store, "g1")
    assert history[-1:] == final.belief_history, "the snapshot keeps the latest point"
    expected = compaction.summarise_game(
        all_events(store, "g1"),
        game_id="g1",
        seats=final.seats,
        belief_history=history,
    )
    assert summary == expected
    # an independent account of the same game: the simulator's own counters
    ref = sim.play_game(CLASSIC, 3, "naive", "reference")
    assert (summary.winner, summary.end_reason, summary.turns, summary.destroyed) == (
        ref.winner,
        ref.end_reason,
        ref.turns,
        ref.destroyed,
    )
    assert (summary.attacks_wasted_decoy, summary.attacks_wasted_empty) == (
        ref.wasted_decoy,
        ref.wasted_empty,
    )
    assert summary.harry == "naive" and summary.voldemort == "reference"
    assert summary.belief is not None and summary.belief.points == len(history) == ref.turns
    # (b) where the next game's start reads: this scope's recent results
    recent = store.recent_results(*SCOPE)
    assert recent.version == 1 and recent.results == (summary,)
    blobs = emf(capsys)
    assert blobs, "metrics are flushed once per invocation"
    assert all("ReplayMismatch" not in b for b in blobs)
    assert (blobs[-1]["ResultsWritten"], blobs[-1]["RecordsFailed"]) == ([1.0], [0.0])
    assert blobs[-1]["StreamRecords"] == [float(len(records))]


def test_the_next_games_start_reads_exactly_what_the_last_end_wrote(store: Any) -> None:
    """The hot-path rule: the record is written where a later Harry start-up reads it."""
    play(store, "g1", seed=5)
    assert store.recent_results(*SCOPE).results == ()
    run(store, [final_record(store, "g1")])
    written = store.result("g1")
    # what an AI Harry seated as `naive` against `reference` reads at its next game's start
    next_seats = {**AI_SEATS, "voldemort": SeatInfo(kind="ai", brain="reference:1")}
    scope = compaction.scope_of(next_seats)
    assert scope == SCOPE == written.scope
    assert store.recent_results(*scope).results[-1] == written
    # nobody else's scope got it
    assert store.recent_results("naive", "random").results == ()
    assert store.recent_results("naive:16", "reference").results == ()


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda s: {"attacks_left": s.attacks_left + 2}, id="attacks_left"),
        pytest.param(
            lambda s: {
                "horcruxes": tuple(
                    sorted(
                        [
                            *s.horcruxes[1:],
                            next(
                                loc
                                for loc in CLASSIC.locations
                                if loc not in s.horcruxes and loc not in s.decoys
                            ),
                        ]
                    )
                )
                if s.horcruxes
                else ("hogwarts",)
            },
            id="true_position",
        ),
    ],
)
def test_a_corrupted_snapshot_is_repaired_from_the_events(
    store: Any,
    corrupt: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    final = play(store, "g1", seed=1)
    bad_state = final.state.model_copy(update=corrupt(final.state))
    assert bad_state != final.state
    corrupted = final.model_copy(update={"state": bad_state, "version": final.version + 1})
    store.repair_snapshot(final.version, corrupted)
    assert store.load("g1").state == bad_state
    mismatch = compaction.check_snapshot(all_events(store, "g1"), store.load("g1"))
    assert mismatch is not None and mismatch.fields
    capsys.readouterr()

    response = run(store, [final_record(store, "g1")])

    assert response == {"batchItemFailures": []}
    repaired = store.load("g1")
    assert repaired.state == final.state, "the state is rebuilt from the events"
    assert repaired.version == corrupted.version + 1
    assert (repaired.seats, repaired.belief_history, repaired.beliefs) == (
        final.seats,
        final.belief_history,
        final.beliefs,
    )
    assert compaction.check_snapshot(all_events(store, "g1"), repaired) is None
    out = capsys.readouterr().out
    blobs = [json.loads(x) for x in out.splitlines() if x.startswith('{"_aws"')]
    assert [b["ReplayMismatch"] for b in blobs if "ReplayMismatch" in b] == [[1.0]]
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "replay" in warnings[0].getMessage()
    assert getattr(warnings[0], "mismatch")["fields"] == list(mismatch.fields)  # noqa: B009
    assert store.result("g1").winner == final.state.winner
    assert store.recent_results(*SCOPE).version == 1


def test_a_failing_record_is_reported_and_the_batchs_other_records_are_kept(
    store: Any,
) -> None:
    play(store, "a", seed=2)
    play(store, "b", seed=4)
    malformed = stream_record({"seq": 9, "winner": "harry", "type": "harry_moved"})
    ghost = stream_record({"pk": "GAME#ghost", "seq": 41, "winner": "voldemort"})
    non_final = stream_record(event_items(store, "a")[1])
    ttl_removal = stream_record(event_items(store, "b")[0], event_name="REMOVE")
    records = [
        final_record(store, "a"),
        malformed,
        non_final,
        ghost,
        ttl_removal,
        final_record(store, "b"),
    ]
    response = run(store, records)
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": seq_of(malformed)},
            {"itemIdentifier": seq_of(ghost)},
        ]
    }
    assert store.result("a").game_id == "a" and store.result("b").game_id == "b"
    assert [s.game_id for s in store.recent_results(*SCOPE).results] == ["a", "b"]
    with pytest.raises(NotFound):
        store.result("ghost")


def test_a_batch_whose_every_record_fails_is_reported_not_raised(store: Any) -> None:
    ghost = stream_record({"pk": "GAME#ghost", "seq": 3, "winner": "harry"})
    assert run(store, [ghost]) == {"batchItemFailures": [{"itemIdentifier": seq_of(ghost)}]}


def test_a_retried_batch_writes_nothing_new(store: Any) -> None:
    play(store, "g1", seed=6)
    play(store, "g2", seed=7)
    records = [final_record(store, "g1"), final_record(store, "g2")]
    assert run(store, records) == {"batchItemFailures": []}
    before = (store.result("g1"), store.result("g2"), store.recent_results(*SCOPE))
    writes = {op: store.op_counts[op] for op in ("PutItem", "TransactWriteItems")}

    assert run(store, records) == {"batchItemFailures": []}
    assert run(store, records[1:]) == {"batchItemFailures": []}

    assert (store.result("g1"), store.result("g2"), store.recent_results(*SCOPE)) == before
    assert before[2].version == 2
    assert {op: store.op_counts[op] for op in ("PutItem", "TransactWriteItems")} == writes


def test_the_recent_results_stay_bounded_and_in_order(store: Any) -> None:
    ids = [f"g{i}" for i in range(4)]
    for i, game_id in enumerate(ids):
        play(store, game_id, seed=10 + i)
        assert run(store, [final_record(store, game_id)], keep=3) == {"batchItemFailures": []}
        recent = store.recent_results(*SCOPE)
        assert recent.version == i + 1
        assert [s.game_id for s in recent.results] == ids[: i + 1][-3:]
    # every game still has its own record, the scope only the last three
    assert [store.result(g).game_id for g in ids] == ids


def test_the_keep_bound_comes_from_the_settings(memory_store: MemoryStore) -> None:
    settings = compaction_settings({"HORCRUX_RESULTS_KEEP": "2"})
    for i in range(3):
        play(memory_store, f"g{i}", seed=20 + i)
        run(memory_store, [final_record(memory_store, f"g{i}")], settings=settings)
    assert [s.game_id for s in memory_store.recent_results(*SCOPE).results] == ["g1", "g2"]


def test_records_are_byte_identical_across_adapters_and_runs(aws_env: None) -> None:
    memory = MemoryStore(clock=Clock())
    play(memory, "g1", seed=8)
    run(memory, [final_record(memory, "g1")])
    mem_items = [memory._games[(k["pk"]["S"], k["sk"]["S"])] for k in _record_keys(memory)]
    with mock_aws():
        dynamo = DynamoDbStore(clock=Clock())
        create_tables(dynamo)
        play(dynamo, "g1", seed=8)
        run(dynamo, [final_record(dynamo, "g1")])
        table = dynamo.settings.games_table
        dyn_items = [
            dynamo.client.get_item(TableName=table, Key=k)["Item"] for k in _record_keys(dynamo)
        ]
    assert dyn_items == mem_items
    assert dyn_items[0]["sk"]["S"] == RESULT_SK and "bhist" in dyn_items[0]
    # and the pure function: the same events, the same bytes
    snap = memory.load("g1")
    twice = [
        encode_result(
            compaction.summarise_game(
                all_events(memory, "g1"),
                game_id="g1",
                seats=snap.seats,
                belief_history=whole_history(memory, "g1"),
            )
        )
        for _ in range(2)
    ]
    assert twice[0] == twice[1]
    assert twice[0]["summary"] == mem_items[0]["summary"]


def _record_keys(store: Any) -> list[dict[str, Any]]:
    return [result_key("g1"), recent_key(*SCOPE)]


def test_a_human_harry_gets_a_record_but_no_agent_scope(memory_store: MemoryStore) -> None:
    token_hash = "ab" * 32
    seats = {
        "harry": SeatInfo(kind="human", token_hash=token_hash),
        "voldemort": SeatInfo(kind="ai", brain="reference"),
    }
    snap = play(memory_store, "h1", seed=9, seats=seats)
    assert snap.state.over
    assert run(memory_store, [final_record(memory_store, "h1")]) == {"batchItemFailures": []}
    summary = memory_store.result("h1")
    assert summary.harry == "player:" + token_hash[:16] and summary.harry_kind == "human"
    assert summary.scope is None
    assert not any(k[0].startswith("AGENT#") for k in memory_store._games)


def test_the_opponent_scope_is_a_persons_player_id(memory_store: MemoryStore) -> None:
    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="naive:16"),
        "voldemort": SeatInfo(kind="human", token_hash="cd" * 32),
    }
    # a person's Voldemort, played here by the reference brain's moves
    start_game(memory_store, "p1", CLASSIC, 11, seats, now=T0, ttl_seconds=DAY)
    brains = sim.play_game(CLASSIC, 11, "naive:16", "reference", keep_events=True)
    commit_moves(memory_store, "p1", brains.events)
    run(memory_store, [final_record(memory_store, "p1")])
    recent = memory_store.recent_results("naive:16", "player:" + "cd" * 8)
    assert [s.game_id for s in recent.results] == ["p1"]


def test_the_sample_stream_event_is_processed(memory_store: MemoryStore) -> None:
    """events/compaction_stream.json is the stream batch of the game `sample-1` (seed 2)."""
    sample = json.loads((ROOT / "events" / "compaction_stream.json").read_text())
    play(memory_store, "sample-1", seed=2)
    assert run(memory_store, sample["Records"]) == {"batchItemFailures": []}
    assert memory_store.result("sample-1").game_id == "sample-1"
    finals = [r for r in sample["Records"] if "winner" in r["dynamodb"].get("NewImage", {})]
    assert len(finals) == 1
    stored = event_items(memory_store, "sample-1")
    image = finals[0]["dynamodb"]["NewImage"]
    (match,) = [i for i in stored if i["seq"] == image["seq"]]
    assert match["body"] == image["body"], "the sample's final event is the real one"


def test_the_module_handler_uses_a_replaceable_default_store(
    memory_store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    play(memory_store, "g1", seed=12)
    H.set_store(memory_store)
    try:
        assert H.handler({"Records": [final_record(memory_store, "g1")]}, None) == {
            "batchItemFailures": []
        }
    finally:
        H.set_store(None)
    assert memory_store.result("g1").game_id == "g1"


# ---------------------------------------------------------------- the pure logic
def test_check_snapshot_is_none_when_equal_and_names_the_fields_otherwise(
    memory_store: MemoryStore,
) -> None:
    final = play(memory_store, "g1", seed=13)
    events = all_events(memory_store, "g1")
    assert compaction.check_snapshot(events, final) is None
    bad = final.model_copy(
        update={"state": final.state.model_copy(update={"destroyed": 9, "decoys_left": 0})}
    )
    mismatch = compaction.check_snapshot(events, bad)
    assert mismatch is not None
    assert set(mismatch.fields) == {"destroyed", "decoys_left"} - (
        {"decoys_left"} if final.state.decoys_left == 0 else set()
    )
    fixed = compaction.repair(bad, events)
    assert fixed.state == final.state and fixed.version == bad.version + 1


def test_replay_refuses_a_log_the_engine_does_not_produce(memory_store: MemoryStore) -> None:
    play(memory_store, "g1", seed=14)
    events = all_events(memory_store, "g1")
    compaction.replay(events)  # the real log replays
    harry = next(e for e in events[1:] if e.type == "harry_moved" and e.observations)
    assert harry.type == "harry_moved"
    flipped = harry.observations[0].model_copy(update={"outcome": "negative"})
    if harry.observations[0].outcome == "negative":
        flipped = harry.observations[0].model_copy(update={"outcome": "positive"})
    tampered = [
        harry.model_copy(update={"observations": (flipped, *harry.observations[1:])})
        if e is harry
        else e
        for e in events
    ]
    with pytest.raises(compaction.CompactionError, match="differs"):
        compaction.replay(tampered)
    with pytest.raises(compaction.CompactionError, match="gap"):
        compaction.replay([*events[:5], *events[6:]])
    with pytest.raises(compaction.CompactionError, match="missing"):
        compaction.replay([])
    with pytest.raises(compaction.CompactionError, match="not over"):
        compaction.summarise_game(events[:9], game_id="g1", seats=AI_SEATS)


def scripted_game() -> tuple[list[AnyEvent], dict[str, str]]:
    """A game with known relocations, decoys and wasted attacks (Voldemort wins by Harry
    running out of attacks). Returns the events and the named locations."""
    seed = next(s for s in range(1000) if rng.unit(s, "sensor", 1, 0) < CLASSIC.sensor_of(None).d)
    state, started = engine.new_game(CLASSIC, seed)
    events: list[AnyEvent] = [started]
    h0 = state.horcruxes[0]
    free = [loc for loc in CLASSIC.locations if loc not in state.horcruxes]
    names = {"h0": h0, "moved_to": free[0], "d1": free[1], "d2": free[2], "empty": free[3]}

    def act(action: AnyAction) -> None:
        nonlocal state
        state, event = engine.apply(state, action)
        events.append(event)

    act(Search(location=h0))  # turn 1: positive at a real Horcrux
    act(Pass())
    act(Search(location=names["empty"]))  # turn 2
    act(Pass())
    act(Search(location=names["empty"]))  # turn 3
    act(Relocate(from_location=h0, to_location=names["moved_to"]))  # 2 turns after positive
    act(Search(location=names["empty"]))  # turn 4
    act(PlantDecoy(location=names["d1"]))  # at Harry's top (belief below)
    act(Attack(location=names["d1"]))  # turn 5: wasted on the decoy
    act(PlantDecoy(location=names["d2"]))  # not at Harry's top
    while not state.over:
        act(Attack(location=names["empty"]))  # wasted on nothing, until no attacks are left
        if not state.over:
            act(Pass())
    return events, names


def test_the_summary_of_a_scripted_game(memory_store: MemoryStore) -> None:
    events, n = scripted_game()
    history = (
        BeliefPoint(turn=1, entropy=3.5, top=((n["h0"], 0.6), ("x", 0.1))),
        BeliefPoint(turn=4, entropy=2.25, top=(("y", 0.2), (n["d1"], 0.7))),
        BeliefPoint(turn=5, entropy=2.0, top=((n["moved_to"], 0.5),)),
    )
    summary = compaction.summarise_game(
        events, game_id="s1", seats=AI_SEATS, belief_history=history
    )
    assert summary.winner == "voldemort" and summary.end_reason.startswith("Harry has no attacks")
    assert summary.attacks_used == CLASSIC.attacks
    assert (summary.attacks_wasted_decoy, summary.attacks_wasted_empty) == (1, CLASSIC.attacks - 1)
    assert [(r.turn, r.from_location, r.turns_since_positive) for r in summary.relocations] == [
        (3, n["h0"], 2)
    ]
    assert [(d.turn, d.location, d.at_harry_top, d.attacked_turn) for d in summary.decoys] == [
        (4, n["d1"], True, 5),
        (5, n["d2"], False, None),
    ]
    assert summary.belief is not None
    assert summary.belief.final_top == (n["moved_to"],)
    assert summary.belief.entropy_min == 2.0 and summary.belief.points == 3
    # turn 1's top held a Horcrux, turn 4's a decoy, turn 5's the moved Horcrux: 2 of 3
    assert summary.belief.top_hit_rate == round(2 / 3, 4)
    # without a belief history: the decoys' `at_harry_top` is unknown, not False
    bare = compaction.summarise_game(events, game_id="s1", seats=AI_SEATS)
    assert bare.belief is None and [d.at_harry_top for d in bare.decoys] == [None, None]


def test_recent_results_decode_of_a_missing_item_is_empty() -> None:
    empty = decode_recent("naive", "reference", None)
    assert empty.version == 0 and empty.results == ()
    one = GameSummary.model_validate_json(
        compaction.summarise_game(scripted_game()[0], game_id="x", seats=AI_SEATS).model_dump_json()
    )
    assert empty.appended(one, keep=1).appended(one, keep=1).results == (one,)


# ---------------------------------------------------------------- the port's additions
def test_contract_put_result_once_then_nothing(store: Any) -> None:
    events, _ = scripted_game()
    summary = compaction.summarise_game(events, game_id="s1", seats=AI_SEATS)
    before = {op: store.op_counts[op] for op in ("GetItem", "TransactWriteItems", "PutItem")}
    assert store.put_result(summary) is True
    after = {op: store.op_counts[op] for op in ("GetItem", "TransactWriteItems", "PutItem")}
    assert {op: after[op] - before[op] for op in after} == {
        "GetItem": 1,
        "TransactWriteItems": 1,
        "PutItem": 0,
    }
    assert store.put_result(summary) is False
    assert store.result("s1") == summary
    recent = store.recent_results(*SCOPE)
    assert (recent.version, recent.results) == (1, (summary,))
    with pytest.raises(NotFound):
        store.result("nope")
    assert store.recent_results("nobody", "reference").version == 0


def test_contract_a_record_already_stored_is_not_appended_again(store: Any) -> None:
    """The RESULT item and the scope's append are one transaction: a summary whose
    RESULT exists (but which the scope no longer lists) writes nothing."""
    events, _ = scripted_game()
    first = compaction.summarise_game(events, game_id="s1", seats=AI_SEATS)
    others = [first.model_copy(update={"game_id": f"s{i}"}) for i in (2, 3)]
    assert store.put_result(first, keep=1)
    for other in others:
        assert store.put_result(other, keep=1)
    assert [s.game_id for s in store.recent_results(*SCOPE).results] == ["s3"]
    assert store.put_result(first, keep=1) is False
    recent = store.recent_results(*SCOPE)
    assert (recent.version, [s.game_id for s in recent.results]) == (3, ["s3"])


def test_contract_a_human_harrys_result_is_one_conditional_put(store: Any) -> None:
    events, _ = scripted_game()
    seats: dict[Any, SeatInfo] = {**AI_SEATS, "harry": SeatInfo(kind="human", token_hash="e" * 64)}
    summary = compaction.summarise_game(events, game_id="s1", seats=seats)
    puts = store.op_counts["PutItem"]
    assert store.put_result(summary) is True
    assert store.put_result(summary) is False
    assert store.op_counts["PutItem"] - puts == 2
    assert store.result("s1").harry == "player:" + "e" * 16


def test_contract_repair_snapshot_is_conditional_on_the_version(store: Any) -> None:
    snap = play(store, "g1", seed=15)
    fixed = snap.model_copy(update={"version": snap.version + 1})
    with pytest.raises(ValueError, match="expected_version"):
        store.repair_snapshot(snap.version, snap)
    with pytest.raises(Conflict) as info:
        store.repair_snapshot(snap.version - 1, fixed.model_copy(update={"version": snap.version}))
    assert info.value.reason == "version" and info.value.current == snap
    assert store.repair_snapshot(snap.version, fixed) == fixed
    assert store.load("g1") == fixed
    missing = fixed.model_copy(update={"game_id": "missing"})
    with pytest.raises(NotFound):
        store.repair_snapshot(fixed.version - 1, missing)
    assert isinstance(store, ResultStore)
