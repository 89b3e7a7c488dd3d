"""The AI-turn Lambdas (lambdas/ai_turn/handler.py, per seat): DynamoDB-stream batches
built from events/stream_*.json, against moto; partial batch failures; idempotent retries."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from api_fixtures import (
    ROOT,
    FakeContext,
    StreamPump,
    load_handler,
    sample,
    set_aws_env,
    stream_matches,
    stream_record,
)

from horcrux.api.stream_handler import filter_pattern
from horcrux.models import Search
from horcrux.service import ECHO_KEY, GameService, SeatRequest
from horcrux.store import DynamoDbStore

AI = SeatRequest(kind="ai")
HUMAN = SeatRequest(kind="human")


def naive() -> SeatRequest:
    return SeatRequest(kind="ai", brain="naive")


def batch(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def test_the_samples_match_only_their_own_functions_filter() -> None:
    harry = sample("stream_harry_turn.json")["Records"][0]
    voldemort = sample("stream_voldemort_turn.json")["Records"][0]
    assert stream_matches(harry, filter_pattern("harry"))
    assert not stream_matches(harry, filter_pattern("voldemort"))
    assert stream_matches(voldemort, filter_pattern("voldemort"))
    ended = copy.deepcopy(harry)
    del ended["dynamodb"]["NewImage"]["next_ai"]
    assert not stream_matches(ended, filter_pattern("harry"))


def test_a_record_plays_one_turn_and_its_retry_is_a_no_op(dynamo: DynamoDbStore) -> None:
    service = GameService(dynamo)
    gid = service.create_game(naive(), HUMAN, rules="classic", seed=3)["game_id"]
    handler = load_handler("harry_turn")
    record = stream_record(gid, 0, "harry")
    assert handler.lambda_handler(batch(record), FakeContext()) == {"batchItemFailures": []}
    snap = dynamo.load(gid)
    assert (snap.state.seq, snap.state.phase, snap.version) == (1, "voldemort", 1)
    before = dynamo.raw_items(gid)
    again = handler.lambda_handler(batch(record), FakeContext())  # the stream's retry
    assert again == {"batchItemFailures": []}
    assert dynamo.raw_items(gid) == before


def test_the_voldemort_function_answers_a_persons_move(dynamo: DynamoDbStore) -> None:
    service = GameService(dynamo)
    created = service.create_game(HUMAN, AI, rules="standard", seed=4)
    gid = created["game_id"]
    service.move(gid, created["token"], Search(location="hogwarts"))
    items = dynamo.raw_items(gid)
    assert items[-1]["next_ai"] == {"S": "voldemort"} and "next_ai" not in items[1]
    handler = load_handler("voldemort_turn")
    response = handler.lambda_handler(batch(stream_record(gid, 1, "voldemort")), FakeContext())
    assert response == {"batchItemFailures": []}
    snap = dynamo.load(gid)
    assert (snap.state.seq, snap.state.phase, snap.turn) == (2, "harry", 2)
    assert "next_ai" not in dynamo.raw_items(gid)[-1]  # a person moves next


def test_records_for_another_seat_or_a_gone_game_do_nothing(dynamo: DynamoDbStore) -> None:
    service = GameService(dynamo)
    gid = service.create_game(naive(), HUMAN, rules="classic", seed=3)["game_id"]
    before = dynamo.raw_items(gid)
    harry = load_handler("harry_turn")
    voldemort = load_handler("voldemort_turn")
    foreign = stream_record(gid, 0, "harry")
    assert voldemort.lambda_handler(batch(foreign), FakeContext()) == {"batchItemFailures": []}
    unchanged = sample("stream_harry_turn.json")  # its game id exists nowhere: "gone"
    assert harry.lambda_handler(unchanged, FakeContext()) == {"batchItemFailures": []}
    assert dynamo.raw_items(gid) == before


def test_a_bad_record_fails_alone_and_a_short_deadline_is_retried(
    dynamo: DynamoDbStore,
) -> None:
    service = GameService(dynamo)
    one = service.create_game(naive(), HUMAN, rules="classic", seed=3)["game_id"]
    two = service.create_game(naive(), HUMAN, rules="classic", seed=4)["game_id"]
    handler = load_handler("harry_turn")
    broken = stream_record(one, 0, "harry", n=1)
    broken["dynamodb"]["NewImage"]["pk"] = {"S": "NOT-A-GAME"}
    good = stream_record(two, 0, "harry", n=2)
    response = handler.lambda_handler(batch(broken, good), FakeContext())
    assert response == {
        "batchItemFailures": [{"itemIdentifier": broken["dynamodb"]["SequenceNumber"]}]
    }
    assert dynamo.load(two).state.seq == 1 and dynamo.load(one).state.seq == 0
    hurried = handler.lambda_handler(
        batch(stream_record(one, 0, "harry", n=3)), FakeContext(remaining_ms=2100)
    )
    assert len(hurried["batchItemFailures"]) == 1
    assert dynamo.load(one).state.seq == 0  # nothing written: the stream retries it


def test_an_ai_game_runs_to_its_end_on_the_stream_and_keeps_harrys_belief(
    dynamo: DynamoDbStore,
) -> None:
    service = GameService(dynamo)
    gid = service.create_game(
        SeatRequest(kind="ai", brain="planner"), AI, rules="classic", seed=12
    )["game_id"]
    pump = StreamPump(
        dynamo,
        {"harry": load_handler("harry_turn"), "voldemort": load_handler("voldemort_turn")},
    )
    pump.pump()
    snap = dynamo.load(gid)
    assert snap.state.over
    seqs = [int(i["seq"]["N"]) for i in dynamo.raw_items(gid)[1:]]
    assert seqs == list(range(snap.state.seq + 1))  # no gap, no duplicate
    replay = service.replay(gid)
    history = replay["belief_history"]
    assert history and history[-1]["turn"] == snap.state.turn
    assert all(len(p["top"]) == 3 and p["entropy"] >= 0 for p in history)
    # the planner is rebuilt from its view at every turn: no blob; one point per turn
    assert "harry" not in snap.beliefs
    assert [p["turn"] for p in history] == list(range(1, snap.state.turn + 1))
    replay = StreamPump(dynamo, pump.handlers)  # the whole stream again, from its start
    assert replay.pump() >= 1
    assert dynamo.load(gid) == snap


def emitted_metrics(out: str) -> dict[str, float]:
    """The metrics of the EMF documents Powertools printed (one JSON object a line)."""
    found: dict[str, float] = {}
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict) or "_aws" not in doc:
            continue
        for spec in doc["_aws"]["CloudWatchMetrics"]:
            for metric in spec["Metrics"]:
                value = doc[metric["Name"]]
                found[metric["Name"]] = found.get(metric["Name"], 0) + sum(
                    value if isinstance(value, list) else [value]
                )
    return found


def test_an_ai_harrys_first_turn_reports_its_memory_read_or_rebuild(
    dynamo: DynamoDbStore, capsys: pytest.CaptureFixture[str]
) -> None:
    from horcrux import compaction
    from horcrux.store.results import memory_key

    service = GameService(dynamo)
    planner = SeatRequest(kind="ai", brain="planner")
    handler = load_handler("harry_turn")
    first = service.create_game(planner, AI, rules="classic", seed=12)["game_id"]
    capsys.readouterr()
    assert handler.lambda_handler(batch(stream_record(first, 0, "harry")), FakeContext()) == {
        "batchItemFailures": []
    }
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("MemoryRead") == 1 and "MemoryRebuilt" not in got  # nothing to check yet
    pump = StreamPump(dynamo, {"harry": handler, "voldemort": load_handler("voldemort_turn")})
    pump.pump()
    assert dynamo.load(first).state.over
    assert "MemoryRead" not in emitted_metrics(capsys.readouterr().out)  # the later turns
    compaction.compact(dynamo, first)  # the recent results and the memory of the scope
    dynamo.delete_scope_items(memory_key("planner", "reference"))  # a lost memory write
    second = service.create_game(planner, AI, rules="classic", seed=13)["game_id"]
    capsys.readouterr()
    handler.lambda_handler(batch(stream_record(second, 0, "harry", n=2)), FakeContext())
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("MemoryRebuilt") == 1 and "MemoryRead" not in got
    assert service.store.scope_item(memory_key("planner", "reference")) is not None
    # the next turn of that game reads nothing: the memory is pinned in its snapshot
    pump.pump()
    assert "MemoryRebuilt" not in emitted_metrics(capsys.readouterr().out)


def pin_game(store: DynamoDbStore, game_id: str, pin: bytes) -> None:
    """Put `pin` in the game's stored snapshot as its memory pin (a repair: version + 1)."""
    snap = store.load(game_id)
    beliefs = {**snap.beliefs, ECHO_KEY: pin}
    store.repair_snapshot(
        snap.version, snap.model_copy(update={"version": snap.version + 1, "beliefs": beliefs})
    )


def test_both_turn_functions_report_an_unreadable_pin_and_a_copied_one(
    dynamo: DynamoDbStore, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import asdict

    from horcrux.echo.use import joined_models, rate_models

    service = GameService(dynamo)
    players = (SeatRequest(kind="ai", brain="planner"), SeatRequest(kind="ai", brain="mirror"))
    harry, voldemort = load_handler("harry_turn"), load_handler("voldemort_turn")
    bad = service.create_game(*players, rules="classic", seed=12)["game_id"]
    pin_game(dynamo, bad, b"{not json")
    capsys.readouterr()
    harry.lambda_handler(batch(stream_record(bad, 0, "harry")), FakeContext())
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("MemoryPinUnreadable") == 1 and got.get("AiTurn_played") == 1
    assert "MemoryRead" not in got
    voldemort.lambda_handler(batch(stream_record(bad, 1, "voldemort")), FakeContext())
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("MemoryPinUnreadable") == 1 and got.get("AiTurn_played") == 1
    assert "MemoryCopied" not in got
    snap = dynamo.load(bad)
    assert snap.state.seq == 2 and snap.beliefs[ECHO_KEY] == b"{not json"  # kept for review
    models = joined_models(rate_models({"relocates": 0.9, "immediate": 0.2}))
    good = json.dumps({"v": 2, "models": [asdict(m) for m in models], "line": None}).encode()
    copied = service.create_game(*players, rules="classic", seed=13)["game_id"]
    pin_game(dynamo, copied, good)
    harry.lambda_handler(batch(stream_record(copied, 0, "harry", n=2)), FakeContext())
    assert "MemoryPinUnreadable" not in emitted_metrics(capsys.readouterr().out)
    voldemort.lambda_handler(batch(stream_record(copied, 1, "voldemort", n=2)), FakeContext())
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("MemoryCopied") == 1 and "MemoryPinUnreadable" not in got


def test_a_seat_whose_stored_brain_no_longer_builds_plays_its_default_and_alarms(
    dynamo: DynamoDbStore, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A runtime that no longer builds a stored seat's spec (a plugin uninstalled, a brain
    retired without a listed replacement) plays the seat's default brain: the game goes
    on, the stored spec is kept, the turn says so and its function emits the alarmed
    `AiBrainReplaced`."""
    service = GameService(dynamo)
    players = (SeatRequest(kind="ai", brain="planner"), SeatRequest(kind="ai", brain="shadow"))
    game = service.create_game(*players, rules="classic", seed=14)["game_id"]
    snap = dynamo.load(game)
    gone = {**snap.seats, "voldemort": snap.seats["voldemort"].model_copy(update={"brain": "gone"})}
    dynamo.repair_snapshot(
        snap.version, snap.model_copy(update={"version": snap.version + 1, "seats": gone})
    )
    harry, voldemort = load_handler("harry_turn"), load_handler("voldemort_turn")
    harry.lambda_handler(batch(stream_record(game, 0, "harry")), FakeContext())
    assert "AiBrainReplaced" not in emitted_metrics(capsys.readouterr().out)
    voldemort.lambda_handler(batch(stream_record(game, 1, "voldemort")), FakeContext())
    got = emitted_metrics(capsys.readouterr().out)
    assert got.get("AiBrainReplaced") == 1 and got.get("AiTurn_played") == 1
    (logged,) = [r for r in caplog.records if "no longer builds" in r.getMessage()]
    assert "'gone'" in logged.getMessage() and logged.getMessage().endswith("reference plays")
    after = dynamo.load(game)
    assert after.state.seq == 2 and after.seats["voldemort"].brain == "gone"  # kept


@pytest.mark.parametrize(
    ("name", "seat"), [("api", None), ("ai_turn", "harry"), ("ai_turn", "voldemort")]
)
def test_each_handler_imports_with_only_the_layer_and_boto3(
    name: str, seat: str | None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_aws_env(monkeypatch)
    if seat is not None:
        monkeypatch.setenv("HORCRUX_SEAT", seat)
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "import handler\n"
        "store = getattr(handler, 'store', None) or handler.service.store\n"
        "assert store._client is None, 'a client was built at import'\n"
        "assert callable(handler.lambda_handler)\n"
        "assert not [m for m in sys.modules if m.startswith(('tests', 'api_fixtures', 'moto'))]\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "shared"), str(ROOT / "lambdas" / name)],
        check=True,
        cwd=tmp_path,
        env=env,
    )


def test_a_turn_gets_the_secrets_key_as_a_setting_and_the_environment_stays_clean(
    dynamo: DynamoDbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3
    from aws_lambda_powertools.utilities import parameters

    from horcrux.agents import HARRY_BRAINS

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    parameters.clear_caches()
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(Name="horcrux/anthropic", SecretString="sk-ant-turn")["ARN"]
    monkeypatch.setenv("HORCRUX_ANTHROPIC_SECRET_ARN", arn)
    gid = GameService(dynamo).create_game(naive(), HUMAN, rules="classic", seed=3)["game_id"]
    handler = load_handler("harry_turn")
    seen: list[tuple[str, dict[str, Any]]] = []
    real = HARRY_BRAINS.create

    def spy(spec: str, rules: Any, **kw: Any) -> Any:
        seen.append((spec, dict(kw.get("settings") or {})))
        return real(spec, rules, **kw)

    monkeypatch.setattr(HARRY_BRAINS, "create", spy)
    try:
        response = handler.lambda_handler(batch(stream_record(gid, 0, "harry")), FakeContext())
    finally:
        parameters.clear_caches()
    assert response == {"batchItemFailures": []}
    assert dynamo.load(gid).state.seq == 1  # the turn was played
    assert "ANTHROPIC_API_KEY" not in os.environ
    assert [s.get("api_key") for spec, s in seen if spec == "naive"] == ["sk-ant-turn"]


def test_one_handler_plays_either_seat_by_its_environment(dynamo: DynamoDbStore) -> None:
    """Both turn functions run lambdas/ai_turn/handler.py; HORCRUX_SEAT picks the seat, the
    Powertools service and the memory metrics."""
    harry, voldemort = load_handler("harry_turn"), load_handler("voldemort_turn")
    assert harry.__file__ == voldemort.__file__
    assert (harry.seat, voldemort.seat) == ("harry", "voldemort")
    assert harry.metrics.service == "horcrux-harry-turn"
    assert voldemort.metrics.service == "horcrux-voldemort-turn"
    assert harry.MEMORY_METRICS[harry.seat]["pin-unreadable"] == "MemoryPinUnreadable"
    assert "copied" not in harry.MEMORY_METRICS[harry.seat]
    assert voldemort.MEMORY_METRICS[voldemort.seat] == {
        "copied": "MemoryCopied",
        "pin-unreadable": "MemoryPinUnreadable",
    }
    assert "HORCRUX_SEAT" not in os.environ  # set for the import only


@pytest.mark.parametrize("value", [None, "", "dumbledore", "Harry"])
def test_a_turn_function_without_a_seat_fails_at_cold_start(
    dynamo: DynamoDbStore, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    from horcrux.settings import SettingsError

    if value is None:
        monkeypatch.delenv("HORCRUX_SEAT", raising=False)
    else:
        monkeypatch.setenv("HORCRUX_SEAT", value)
    with pytest.raises(SettingsError, match="HORCRUX_SEAT"):
        load_handler("ai_turn")
