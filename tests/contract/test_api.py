"""The HTTP API Lambda (lambdas/api/handler.py) against moto DynamoDB, driven with API
Gateway v2 events built from events/*.json; AI turns come from the turn Lambdas fed by the
events table's stream (moto, in process)."""

from __future__ import annotations

import base64
import importlib
import json
import pkgutil
import re
import threading
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from api_fixtures import (
    IDEMPOTENCY_TABLE,
    ROOT,
    ApiClient,
    StreamPump,
    api_event,
    leaks,
    load_handler,
    sample,
)

from horcrux import rng
from horcrux.agents import HARRY_BRAINS
from horcrux.errors import HorcruxError
from horcrux.rules import PRESETS
from horcrux.service import GameService, SeatRequest
from horcrux.store import DynamoDbStore, MemoryStore, mapping
from horcrux.views import HarryView
from horcrux_tools import sim

Store = DynamoDbStore


@pytest.fixture
def pump(dynamo: Store) -> Iterator[StreamPump]:
    yield StreamPump(
        dynamo,
        {"harry": load_handler("harry_turn"), "voldemort": load_handler("voldemort_turn")},
    )


def create(api: ApiClient, harry: dict[str, Any], voldemort: dict[str, Any], **kw: Any) -> Any:
    reply = api.call(
        "POST", "/games", body={"seats": {"harry": harry, "voldemort": voldemort}, **kw}
    )
    assert reply.status == 201, reply.body
    return reply.body


def counts(store: Store, game_id: str) -> tuple[int, int]:
    """(events stored, snapshot version): both must not move on an error."""
    items = store.raw_items(game_id)
    return len(items) - 1, int(items[0]["v"]["N"])


HUMAN = {"kind": "human"}


# ---------------------------------------------------------------- the routes
def test_every_route_answers_its_happy_path(api: ApiClient, dynamo: Store) -> None:
    created = api.send(sample("api_create_game.json"))
    assert created.status == 201 and created.body["seat"] == "harry"
    solo = create(api, HUMAN, HUMAN, rules="classic", seed=3)
    gid, harry = solo["game_id"], solo["token"]

    lobby = api.send(sample("api_list_games.json"))
    assert lobby.status == 200 and [g["game_id"] for g in lobby.body["games"]] == [gid]
    assert lobby.body["games"][0]["open_seats"] == ["voldemort"]

    joined = api.call("POST", f"/games/{gid}/seats/voldemort")
    assert joined.status == 200 and joined.body["seat"] == "voldemort"
    voldemort = joined.body["token"]
    assert api.call("GET", "/games", query={"status": "open"}).body["games"] == []
    assert api.call("POST", f"/games/{gid}/seats/voldemort").status == 409
    ai_seat = api.call("POST", f"/games/{created.body['game_id']}/seats/voldemort")
    assert ai_seat.status == 409 and ai_seat.body["error"] == "seat_taken"

    mine = api.call("GET", f"/games/{gid}", token=harry)
    assert mine.status == 200 and mine.body["your_seat"] == "harry"
    assert mine.body["to_move"] == "harry" and mine.body["legal"]["types"] == ["search", "attack"]
    spectator = api.call("GET", f"/games/{gid}")
    assert spectator.body["your_seat"] is None and spectator.body["legal"] is None

    moved = api.call(
        "POST", f"/games/{gid}/moves", token=harry, body={"type": "search", "location": "hogwarts"}
    )
    assert moved.status == 200 and moved.body["event"]["seq"] == 1
    theirs = api.call("GET", f"/games/{gid}", token=voldemort).body
    assert theirs["legal"]["types"][-1] == "pass" and theirs["view"]["horcrux_locations"]
    assert (
        api.call("POST", f"/games/{gid}/moves", token=voldemort, body={"type": "pass"}).status
        == 200
    )

    events = api.call(
        "GET", f"/games/{gid}/events", token=harry, query={"after": "0", "limit": "5"}
    )
    assert events.status == 200 and [e["type"] for e in events.body["events"]] == ["harry_moved"]
    replay = api.call("GET", f"/games/{gid}/replay")
    assert replay.status == 409 and replay.body["error"] == "not_over"

    doc = api.call("GET", "/openapi.json")
    assert doc.status == 200 and doc.body["openapi"].startswith("3.")
    assert {
        "/games",
        "/games/{game_id}",
        "/games/{game_id}/moves",
        "/games/{game_id}/events",
        "/games/{game_id}/replay",
        "/games/{game_id}/seats/{seat}",
    } <= set(doc.body["paths"])
    assert "ErrorResponse" in doc.body["components"]["schemas"]


def test_the_lobby_paginates_with_a_cursor(api: ApiClient) -> None:
    ids = [create(api, HUMAN, HUMAN, seed=i)["game_id"] for i in range(3)]
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = api.call("GET", "/games", query=query).body
        seen += [g["game_id"] for g in page["games"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 3


def test_the_creator_of_an_ai_harry_game_holds_voldemort(api: ApiClient) -> None:
    body = create(api, {"kind": "ai", "brain": "naive"}, HUMAN)
    assert body["seat"] == "voldemort" and body["game"]["view"]["horcrux_locations"]


def test_an_oracle_brain_is_refused_naming_the_known_ones(api: ApiClient) -> None:
    reply = api.call(
        "POST",
        "/games",
        body={"seats": {"harry": {"kind": "ai", "brain": "oracle"}, "voldemort": HUMAN}},
    )
    assert reply.status == 422 and reply.body["error"] == "unknown_brain"
    assert "naive" in reply.body["message"] and "oracle" in reply.body["message"]


def test_a_retired_planner_mode_is_refused_for_a_new_game_and_played_for_a_stored_one(
    api: ApiClient, dynamo: Store, pump: StreamPump
) -> None:
    reply = api.call(
        "POST",
        "/games",
        body={"seats": {"harry": {"kind": "ai", "brain": "planner:aware-lag"}, "voldemort": HUMAN}},
    )
    assert reply.status == 422 and reply.body["error"] == "unknown_brain"
    assert "aware-copy" in reply.body["message"]
    body = create(api, {"kind": "ai", "brain": "planner"}, HUMAN, rules="classic", seed=4)
    gid, token = body["game_id"], body["token"]
    snap = dynamo.load(gid)
    seats = {
        **snap.seats,
        "harry": snap.seats["harry"].model_copy(update={"brain": "planner:aware-exact"}),
    }
    dynamo.repair_snapshot(
        snap.version, snap.model_copy(update={"version": snap.version + 1, "seats": seats})
    )
    game = api.call("GET", f"/games/{gid}", who="spectator")
    assert game.status == 200
    assert game.body["seats"]["harry"] == {
        "kind": "ai",
        "taken": True,
        "brain": "planner:aware-exact",
        "brain_used": "planner",
        "name": None,
    }
    pump.pump()  # Harry's turn Lambda plays the stored seat: the default planner
    game = api.call("GET", f"/games/{gid}", token=token, who="voldemort").body
    assert game["turn"] == 1 and game["to_move"] == "voldemort"


# ---------------------------------------------------------------- whole games
def planner_move(view: dict[str, Any], seed: int) -> dict[str, Any]:
    """The person's move: a fresh planner reading only the view the API returned, drawing
    its private choices from the simulator's per-turn stream for Harry (so the game is
    the simulator's)."""
    harry_view = HarryView.model_validate(view)
    brain = HARRY_BRAINS.create("planner", harry_view.rules)
    stream = rng.stream(seed, "harry", harry_view.turn)
    return brain.decide(harry_view, stream).model_dump(mode="json")


def test_a_person_plays_a_whole_game_against_ai_voldemort(api: ApiClient, pump: StreamPump) -> None:
    seed = 8
    body = create(api, HUMAN, {"kind": "ai", "brain": "reference"}, rules="standard", seed=seed)
    gid, token = body["game_id"], body["token"]
    game = body["game"]
    reads = [
        lambda: api.call("GET", f"/games/{gid}", who="spectator"),
        lambda: api.call("GET", f"/games/{gid}/events", token=token, who="harry"),
        lambda: api.call("GET", f"/games/{gid}/events", who="spectator"),
    ]
    moves = 0
    while game["status"] != "over":
        assert game["to_move"] == "harry" and game["legal"]["types"][0] == "search"
        move = planner_move(game["view"], seed)
        moved = api.call("POST", f"/games/{gid}/moves", token=token, body=move, who="harry")
        assert moved.status == 200, moved.body
        moves += 1
        pump.pump()  # Voldemort's turn Lambda plays from the stream
        game = api.call("GET", f"/games/{gid}", token=token, who="harry").body
        if game["status"] != "over":  # (after the end a spectator may see everything)
            reads[moves % len(reads)]()
    # the same game as the simulator's planner vs reference on this seed
    expected = sim.play_game(PRESETS["standard"], seed, "planner", "reference")
    assert (game["winner"], moves) == (expected.winner, expected.turns)
    replay = api.call("GET", f"/games/{gid}/replay").body
    actors = [s["actor"] for s in replay["replay"]["steps"]]
    assert actors.count("harry") == moves and actors.count("voldemort") == moves - 1
    assert replay["belief_history"] == []  # a person's Harry keeps no server-side belief
    assert_no_leaks(api)


def assert_no_leaks(api: ApiClient) -> None:
    """Every body Harry or a spectator got while the game ran hides the truth."""
    scanned = 0
    for who, reply in api.log:
        if who not in ("harry", "spectator"):
            continue
        body = reply.body
        game = body.get("game", body)
        running = game.get("status") != "over" if "status" in game else True
        if "events" in body and body["events"] and "winner" in body["events"][-1]:
            running = running and body["events"][-1].get("winner") is None
        if running:
            assert leaks(body) == [], (who, leaks(body))
            assert "seed" not in reply.raw
            scanned += 1
    assert scanned > 10


def test_an_ai_game_created_over_the_api_runs_to_its_end_via_the_stream(
    api: ApiClient, pump: StreamPump
) -> None:
    body = create(api, {"kind": "ai"}, {"kind": "ai"}, rules="standard", seed=5)
    gid = body["game_id"]
    assert body["seat"] is None and body["game"]["seats"]["harry"]["brain"] in ("planner", "naive")
    for _ in range(500):  # one round of stream records at a time, watching as a spectator
        if not pump.step():
            break
        game = api.call("GET", f"/games/{gid}", who="spectator").body
        if game["status"] != "over":
            assert leaks(game) == []
    final = api.call("GET", f"/games/{gid}").body
    assert final["status"] == "over"
    # the local dispatcher plays the identical game (same service function per turn)
    local = GameService(MemoryStore())
    brain = body["game"]["seats"]["harry"]["brain"]
    lid = local.create_game(
        SeatRequest(kind="ai", brain=brain), SeatRequest(kind="ai"), rules="standard", seed=5
    )["game_id"]
    local.dispatch(lid)
    remote_events = api.call("GET", f"/games/{gid}/events", query={"limit": "200"}).body["events"]
    local_events = local.events(lid, None, limit=200)["events"]
    assert remote_events == local_events and len(remote_events) > 2
    latency = sorted(pump.seconds)
    print(
        f"\nturn handler latency vs moto: p50 {latency[len(latency) // 2] * 1000:.1f} ms, "
        f"max {latency[-1] * 1000:.1f} ms over {len(latency)} turns"
    )


# ---------------------------------------------------------------- concurrency, idempotency
def test_two_concurrent_moves_exactly_one_wins(dynamo: Store) -> None:
    setup = ApiClient(load_handler("api"))
    body = create(setup, HUMAN, {"kind": "ai"}, rules="classic", seed=4)
    gid, token = body["game_id"], body["token"]
    clients = [ApiClient(load_handler("api")) for _ in range(2)]
    barrier = threading.Barrier(2)
    for client in clients:  # both read version 0 before either writes
        store = client.handler.store
        real = store.load

        def load(game_id: str, real: Any = real) -> Any:
            snap = real(game_id)
            barrier.wait(timeout=10)
            return snap

        store.load = load
    replies: list[Any] = []
    threads = [
        threading.Thread(
            target=lambda c=c, loc=loc: replies.append(
                c.call(
                    "POST",
                    f"/games/{gid}/moves",
                    token=token,
                    body={"type": "search", "location": loc},
                )
            )
        )
        for c, loc in zip(clients, ("hogwarts", "azkaban"), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r.status for r in replies)
    assert statuses == [200, 409], [r.body for r in replies]
    lost = next(r for r in replies if r.status == 409)
    assert lost.body["error"] == "conflict" and lost.body["game"]["version"] == 1
    assert lost.body["game"]["to_move"] == "voldemort"
    seqs = [int(i["seq"]["N"]) for i in dynamo.raw_items(gid)[1:]]
    assert seqs == [0, 1]


def test_an_idempotent_retry_returns_the_first_response_and_writes_nothing(
    api: ApiClient,
    dynamo: Store,
) -> None:
    body = create(api, HUMAN, {"kind": "ai"}, rules="classic", seed=6)
    gid, token = body["game_id"], body["token"]
    move = {"type": "search", "location": "gringotts"}
    key = {"idempotency-key": "move-1-f00d"}
    first = api.call("POST", f"/games/{gid}/moves", token=token, body=move, headers=key)
    assert first.status == 200
    before = counts(dynamo, gid)
    again = api.call("POST", f"/games/{gid}/moves", token=token, body=move, headers=key)
    assert again.status == 200 and again.body == first.body
    assert again.raw == first.raw  # byte for byte, keys in the first response's order
    assert counts(dynamo, gid) == before == (2, 1)
    other = api.call(
        "POST",
        f"/games/{gid}/moves",
        token=token,
        body=move,
        headers={"idempotency-key": "move-1-beef"},
    )
    assert other.status == 409 and other.body["error"] == "not_your_turn"
    assert other.body["to_move"] == "voldemort" and "voldemort's turn" in other.body["message"]
    reused = api.call(
        "POST",
        f"/games/{gid}/moves",
        token=token,
        body={"type": "search", "location": "azkaban"},
        headers=key,
    )
    assert reused.status == 422 and reused.body["error"] == "idempotency_key_reused"
    assert counts(dynamo, gid) == before
    table = dynamo.client.scan(TableName=IDEMPOTENCY_TABLE)["Items"]
    assert len(table) == 1 and table[0]["status"]["S"] == "COMPLETED" and "expiration" in table[0]
    # the same key in another game is another move
    two = create(api, HUMAN, {"kind": "ai"}, rules="classic", seed=6)
    fresh = api.call(
        "POST", f"/games/{two['game_id']}/moves", token=two["token"], body=move, headers=key
    )
    assert fresh.status == 200 and fresh.body["game_id"] == two["game_id"]


# ---------------------------------------------------------------- bad input
BAD = "bad"


@pytest.mark.parametrize(
    ("case", "status", "code", "words"),
    [
        ("malformed_json", 400, "invalid_json", "not valid JSON"),
        ("unknown_location", 422, "unknown_location", "'narnia'"),
        ("unknown_action", 422, "validation_error", "'teleport'"),
        ("missing_field", 422, "validation_error", "location"),
        ("wrong_seat_action", 403, "wrong_seat", "voldemort action"),
        ("other_seat_token", 409, "not_your_turn", "harry's turn"),
        ("missing_token", 401, "unauthorized", "Bearer"),
        ("wrong_token", 401, "unauthorized", "holds no seat"),
        ("malformed_auth", 401, "unauthorized", "Bearer"),
        ("too_large", 413, "payload_too_large", "limit is 4096"),
        ("unknown_game", 404, "not_found", "no game"),
        ("no_attacks_left", 422, "no_attacks_left", "no attacks"),
    ],
)
def test_bad_input_is_refused_naming_the_problem_and_writes_nothing(
    api: ApiClient,
    dynamo: Store,
    case: str,
    status: int,
    code: str,
    words: str,
) -> None:
    body = create(api, HUMAN, HUMAN, rules="classic", seed=8)
    gid, harry = body["game_id"], body["token"]
    voldemort = api.call("POST", f"/games/{gid}/seats/voldemort").body["token"]
    if case == "no_attacks_left":
        snap = dynamo.load(gid)
        state = snap.state.model_copy(update={"attacks_left": 0})
        dynamo.client.put_item(  # a hand-made state: Harry with no attacks left
            TableName=dynamo.settings.games_table,
            Item=mapping.encode_snapshot(snap.model_copy(update={"state": state})),
        )
    path, token, move = f"/games/{gid}/moves", harry, {"type": "search", "location": "hogwarts"}
    raw: str | None = None
    headers: dict[str, str] = {}
    if case == "malformed_json":
        raw = '{"type": "search", "location": '
    elif case == "unknown_location":
        move = {"type": "search", "location": "narnia"}
    elif case == "unknown_action":
        move = {"type": "teleport", "location": "hogwarts"}
    elif case == "missing_field":
        move = {"type": "attack"}
    elif case == "wrong_seat_action":
        move = {"type": "plant_decoy", "location": "hogwarts"}
    elif case == "other_seat_token":
        token = voldemort
    elif case == "missing_token":
        token = None
    elif case == "wrong_token":
        token = "not-a-real-token"
    elif case == "malformed_auth":
        token, headers = None, {"authorization": f"Basic {harry}"}
    elif case == "too_large":
        move = {"type": "search", "location": "hogwarts", "pad": "x" * 5000}
    elif case == "unknown_game":
        path = "/games/no-such-game/moves"
    elif case == "no_attacks_left":
        move = {"type": "attack", "location": "hogwarts"}
    before = counts(dynamo, gid)
    reply = api.call(
        "POST", path, token=token, body=raw if raw is not None else move, headers=headers
    )
    assert reply.status == status, reply.body
    assert reply.body["error"] == code and words in reply.body["message"], reply.body
    assert set(reply.body) >= {"error", "message"}
    assert counts(dynamo, gid) == before
    if status == 401:
        assert reply.headers.get("WWW-Authenticate") == "Bearer"


def test_a_move_after_the_end_conflicts_and_writes_nothing(
    api: ApiClient,
    dynamo: Store,
) -> None:
    body = create(api, HUMAN, {"kind": "ai", "brain": "passive"}, rules="classic", seed=2)
    gid, token = body["game_id"], body["token"]
    service = GameService(dynamo)
    for loc in [
        "hogwarts",
        "hogsmeade",
        "forbidden-forest",
        "diagon-alley",
        "knockturn-alley",
        "gringotts",
        "ministry-of-magic",
    ]:
        reply = api.call(
            "POST", f"/games/{gid}/moves", token=token, body={"type": "attack", "location": loc}
        )
        assert reply.status == 200
        if reply.body["game"]["status"] == "over":
            break
        service.dispatch(gid)  # Voldemort (passive) through the same turn function
    before = counts(dynamo, gid)
    late = api.call(
        "POST", f"/games/{gid}/moves", token=token, body={"type": "search", "location": "hogwarts"}
    )
    assert (
        late.status == 409 and late.body["error"] == "game_over" and "over" in late.body["message"]
    )
    assert counts(dynamo, gid) == before
    assert api.call("GET", f"/games/{gid}/replay").status == 200


def test_a_bad_query_or_route_is_named(api: ApiClient) -> None:
    lobby = api.call("GET", "/games", query={"status": "closed"})
    assert lobby.status == 422 and "status" in lobby.body["message"]
    limit = api.call("GET", "/games/x/events", query={"limit": "0"})
    assert limit.status == 422 and "limit" in lobby.body["message"] + limit.body["message"]
    nowhere = api.call("GET", "/nowhere")
    assert nowhere.status == 404 and nowhere.body["error"] == "route_not_found"
    seat = api.call("POST", "/games/x/seats/dobby")
    assert seat.status == 422 and "seat" in seat.body["message"]


def test_an_expired_game_reads_as_not_found(api: ApiClient) -> None:
    body = create(api, HUMAN, {"kind": "ai"}, seed=1)
    gid, token = body["game_id"], body["token"]
    assert api.call("GET", f"/games/{gid}", token=token).status == 200
    store = api.handler.store
    store._clock = lambda: time.time() + 31 * 86400  # 30-day TTL passed; moto never deletes
    for method, path in (
        ("GET", f"/games/{gid}"),
        ("GET", f"/games/{gid}/events"),
        ("POST", f"/games/{gid}/seats/voldemort"),
    ):
        reply = api.call(method, path, token=token if method == "GET" else None)
        assert reply.status == 404 and reply.body["error"] == "not_found", (path, reply.body)
    late = api.call(
        "POST", f"/games/{gid}/moves", token=token, body={"type": "search", "location": "hogwarts"}
    )
    assert late.status == 404


def test_the_handler_module_builds_no_client_at_import(dynamo: Store) -> None:
    handler: ModuleType = load_handler("api")
    assert handler.store._client is None


def test_a_robust_planner_seat_plays_over_the_api_as_it_plays_in_process(
    api: ApiClient, pump: StreamPump
) -> None:
    harry = {"kind": "ai", "brain": "planner:robust"}
    body = create(api, harry, {"kind": "ai", "brain": "random"}, rules="classic", seed=11)
    gid = body["game_id"]
    assert body["game"]["seats"]["harry"]["brain"] == "planner:robust"
    for _ in range(500):
        if not pump.step():
            break
    final = api.call("GET", f"/games/{gid}").body
    assert final["status"] == "over"
    # restored from its snapshot every turn, it still decides as one brain kept in memory
    played = sim.play_game(PRESETS["classic"], 11, "planner:robust", "random")
    assert final["winner"] == played.winner and final["view"]["turn"] == played.turns
    bad = api.call(
        "POST",
        "/games",
        body={"seats": {"harry": {"kind": "ai", "brain": "planner:bold"}, "voldemort": HUMAN}},
    )
    assert bad.status == 422 and "unknown planner mode 'bold'" in bad.body["message"]
    # a memory window's rebuild prior: a name or a trust in [0, 1], and nothing else
    before = api.call("GET", "/games").body
    for brain, message in (
        ("planner-window:8:1.5", "trust must be in [0, 1], got '1.5'"),
        ("planner-window:8:hopeful", "got 'hopeful'"),
    ):
        bad = api.call(
            "POST",
            "/games",
            body={"seats": {"harry": {"kind": "ai", "brain": brain}, "voldemort": HUMAN}},
        )
        assert bad.status == 422 and message in bad.body["message"], bad.body
        assert "(seat harry)" in bad.body["message"]
    assert api.call("GET", "/games").body == before  # nothing half-created
    good = api.call(
        "POST",
        "/games",
        body={
            "seats": {"harry": {"kind": "ai", "brain": "planner-window:8:0.8"}, "voldemort": HUMAN}
        },
    )
    assert good.status == 201, good.body
    assert good.body["game"]["seats"]["harry"]["brain"] == "planner-window:8:0.8"


# ---------------------------------------------------------------- bodies and content types
CREATE = json.dumps({"seats": {"harry": HUMAN, "voldemort": {"kind": "ai"}}, "seed": 2})


def raw_call(api: ApiClient, body: str | bytes, content_type: str | None) -> Any:
    """POST /games with this body and content type, as API Gateway would pass them."""
    event = api_event("POST", "/games")
    if isinstance(body, bytes):
        event["body"] = base64.b64encode(body).decode()
        event["isBase64Encoded"] = True
    else:
        event["body"] = body
    event["headers"].pop("content-type", None)
    if content_type is not None:
        event["headers"]["content-type"] = content_type
    return api.send(event)


@pytest.mark.parametrize(
    "content_type",
    [
        "application/x-www-form-urlencoded",  # what `curl -d` sends
        "APPLICATION/JSON",
        "application/json; charset=utf-8",
        "text/plain",
        None,
    ],
)
def test_a_json_body_is_read_whatever_its_content_type(
    api: ApiClient, content_type: str | None
) -> None:
    reply = raw_call(api, CREATE, content_type)
    assert reply.status == 201, reply.body
    assert reply.body["seat"] == "harry" and reply.body["game"]["status"] == "active"


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        (b"\xff\xfe{}", "invalid_body", "not UTF-8"),
        ("seats=harry", "invalid_json", "not valid JSON"),
        ('{"seats": ', "invalid_json", "not valid JSON"),
    ],
)
def test_a_body_that_is_not_utf8_json_is_a_400_naming_the_problem(
    api: ApiClient, dynamo: Store, body: str | bytes, code: str, words: str
) -> None:
    for content_type in ("application/x-www-form-urlencoded", "application/json"):
        reply = raw_call(api, body, content_type)
        assert reply.status == 400 and reply.body["error"] == code, reply.body
        assert words in reply.body["message"]
    assert dynamo.client.scan(TableName=dynamo.settings.games_table)["Count"] == 0


# ---------------------------------------------------------------- the lobby's statuses
def test_the_lobby_lists_open_active_and_over_games(api: ApiClient, pump: StreamPump) -> None:
    opened = create(api, HUMAN, HUMAN, rules="classic", seed=1)["game_id"]
    active = create(api, HUMAN, {"kind": "ai"}, rules="classic", seed=2)["game_id"]
    over = create(api, {"kind": "ai", "brain": "naive"}, {"kind": "ai"}, rules="classic", seed=3)
    pump.pump()
    assert api.call("GET", f"/games/{over['game_id']}").body["status"] == "over"

    def listed(status: str) -> list[tuple[str, str]]:
        reply = api.call("GET", "/games", query={"status": status})
        assert reply.status == 200, reply.body
        return [(g["game_id"], g["status"]) for g in reply.body["games"]]

    assert listed("open") == [(opened, "open")]
    assert listed("active") == [(active, "active")]
    assert listed("over") == [(over["game_id"], "over")]
    joined = api.call("POST", f"/games/{opened}/seats/voldemort")
    assert joined.status == 200
    # both being played (their order, by last activity, is test_abandoned_api's: two games
    # made in the same millisecond tie, then go by id)
    assert listed("open") == [] and sorted(listed("active")) == sorted(
        [(opened, "active"), (active, "active")]
    )
    bad = api.call("GET", "/games", query={"status": "finished"})
    assert bad.status == 422 and "status" in bad.body["message"]


# ---------------------------------------------------------------- docs match what runs
def _readme_http_block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Playing over HTTP", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


def test_the_readme_and_api_docs_show_the_create_response_that_runs(api: ApiClient) -> None:
    real = create(api, HUMAN, {"kind": "ai"})
    block = _readme_http_block()
    shown = re.search(r"# -> (\{.*\})", block)
    assert shown is not None, "the README shows the create response"
    keys = re.findall(r'"(\w+)":', shown.group(1))
    assert keys == list(real) == ["game_id", "seat", "token", "player", "player_key", "game"]
    api_md = (ROOT / "docs" / "API.md").read_text()
    assert (
        "| `POST /games` | none | 201: `{game_id, seat, token, player, player_key, game}` "
        "(+ `invite`" in api_md
    )
    private = api.call(
        "POST", "/games", body={"seats": {"harry": HUMAN, "voldemort": HUMAN}, "private": True}
    )
    assert list(private.body) == [
        "game_id",
        "seat",
        "token",
        "player",
        "player_key",
        "game",
        "invite",
    ]
    for cited in ("GAME.md", "BELIEF.md", "the article"):
        assert cited not in api_md


# ---------------------------------------------------------------- the error map
TOOLS = ("horcrux_tools.local", "horcrux_tools.evaluation", "horcrux_tools.cli")


def _domain_errors() -> list[type[HorcruxError]]:
    import horcrux

    for info in pkgutil.walk_packages(horcrux.__path__, "horcrux."):
        if info.name.startswith(TOOLS):
            continue  # tools, not what the API raises
        importlib.import_module(info.name)
    found: list[type[HorcruxError]] = []
    todo: list[type[HorcruxError]] = [HorcruxError]
    while todo:
        cls = todo.pop()
        if not cls.__module__.startswith(TOOLS):  # imported by another test, still a tool
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_domain_error_code_is_in_the_error_map() -> None:
    from horcrux.api.errors import STATUS_BY_CODE

    classes = _domain_errors()
    assert len(classes) > 20  # the walk found the package's errors
    missing = sorted(
        {f"{c.__module__}.{c.__name__}: {c.code}" for c in classes if c.code not in STATUS_BY_CODE}
    )
    assert missing == []


def test_every_response_is_counted_by_status_class(
    api: ApiClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert raw_call(api, CREATE, "application/json").status == 201
    assert raw_call(api, "not json", "application/json").status == 400  # answered early
    assert api.call("GET", "/nope").status == 404
    out = capsys.readouterr().out
    counted = [
        name
        for line in out.splitlines()
        if line.startswith('{"_aws"')
        for name in json.loads(line)
        if name.startswith("Http")
    ]
    assert counted == ["Http2xx", "Http4xx", "Http4xx"]
