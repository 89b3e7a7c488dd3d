"""The operator API a memory user expects (issue 16, item 5): scopes checked, search with
the caller's query, one item (get, delete, history), export, the audit trail, a read-only
role, confirm/retire, quarantine review, and every error a 4xx naming the problem."""

from __future__ import annotations

import json
from typing import Any

import pytest
from api_fixtures import FakeContext, api_event
from test_echo import season_of, summary

from horcrux.api.app import build_app
from horcrux.echo import consolidate, persist
from horcrux.echo.corrections import add_correction
from horcrux.echo.ops import ENV_READONLY, ENV_TOKEN
from horcrux.service import GameService
from horcrux.settings import OperatorSettings
from horcrux.store import MemoryStore
from horcrux.store.port import hash_token

OPERATOR = "operator-secret-token-of-at-least-some-length"
READER = "read-only-operator-token-of-some-length-too"
Q = {"opponent": "reference"}


@pytest.fixture
def app() -> tuple[Any, MemoryStore]:
    store = MemoryStore()
    settings = OperatorSettings.from_env(
        {ENV_TOKEN: hash_token(OPERATOR), ENV_READONLY: hash_token(READER)}
    )
    return build_app(GameService(store), operator=settings), store


def call(app: Any, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    response = app.resolve(api_event(method, path, **kw), FakeContext())
    raw = response.get("body") or ""
    return response["statusCode"], json.loads(raw) if raw else None


def correct(app: Any, wrong: str, right: str, subject: str, rate: float) -> tuple[int, Any]:
    """POST an operator's correction about planner vs reference."""
    body = {"agent": "planner", "opponent": "reference", "wrong": wrong, "right": right}
    body.update(subject=subject, rate=rate)
    return call(app, "POST", "/memory/corrections", body=body, token=OPERATOR)


def _seed(store: MemoryStore, games: int = 12) -> None:
    memory = season_of([summary(f"s{i}") for i in range(games)])
    store.put_scope_item(persist.encode_memory(memory.model_copy(update={"version": 1})), 0)


@pytest.mark.parametrize(
    ("path", "query", "needle"),
    [
        ("/memory/planer", Q, "planer"),  # misspelled
        ("/memory/planner:robust", Q, "planner:robust"),  # never reads memory
        ("/memory/planner", {"opponent": "late:3"}, "'late'"),  # a parameter
        ("/memory/planner", {"opponent": "nobody"}, "nobody"),
    ],
)
def test_unknown_agents_and_opponents_are_refused(
    app: Any, path: str, query: dict[str, str], needle: str
) -> None:
    resolver, store = app
    status, body = call(resolver, "GET", path, query=query, token=OPERATOR)
    assert status == 422 and body["error"] == "unknown_scope" and needle in body["message"]
    agent = path.rsplit("/", 1)[1]
    correction = {"agent": agent, "opponent": query["opponent"], "wrong": "a", "right": "b"}
    correction.update(subject="immediate", rate=0.5)
    status, body = call(resolver, "POST", "/memory/corrections", body=correction, token=OPERATOR)
    assert status == 422 and body["error"] == "unknown_scope"
    assert not any(k[0].startswith("AGENT#") for k in store._games)  # nothing stored


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"rate": 0.4}, "subject 'note' reaches no decision"),
        ({}, "subject 'note' reaches no decision"),
        ({"subject": "prefers the shack", "rate": 0.4}, "reaches no decision"),
        ({"subject": "immediate"}, "subject 'immediate' needs a rate"),
        ({"subject": "jitter", "kind": "preference"}, "subject 'jitter' needs a rate"),
    ],
)
def test_a_correction_the_planner_cannot_act_on_is_a_422_naming_what_is_actionable(
    app: Any, extra: dict[str, Any], needle: str
) -> None:
    resolver, store = app
    body = {"agent": "planner", "opponent": "reference", "wrong": "a", "right": "b", **extra}
    status, answer = call(resolver, "POST", "/memory/corrections", body=body, token=OPERATOR)
    assert status == 422 and answer["error"] == "not_actionable"
    assert needle in answer["message"]
    for subject in ("relocates", "immediate", "plant_top", "plant_blind", "threshold", "jitter"):
        assert subject in answer["message"]
    assert persist.load(store, "planner", "reference")[0] is None  # nothing stored


def test_the_read_only_role_reads_and_never_writes(app: Any) -> None:
    resolver, store = app
    _seed(store)
    assert call(resolver, "GET", "/memory/planner", query=Q, token=READER)[0] == 200
    assert call(resolver, "GET", "/memory/planner/export", query=Q, token=READER)[0] == 200
    body = {"agent": "planner", "opponent": "reference", "wrong": "a", "right": "b"}
    status, answer = call(resolver, "POST", "/memory/corrections", body=body, token=READER)
    assert status == 403 and "read-only" in answer["message"]
    assert call(resolver, "DELETE", "/memory/planner", query=Q, token=READER)[0] == 403
    assert persist.load(store, "planner", "reference")[0] is not None


def test_search_uses_the_callers_query_and_scores_the_top_ten(app: Any) -> None:
    resolver, store = app
    _seed(store, games=30)
    query = {**Q, "q": "decoy attack wasted"}
    status, body = call(resolver, "GET", "/memory/planner/search", query=query, token=READER)
    assert status == 200 and body["query"] == "decoy attack wasted"
    results = body["results"]
    assert 0 < len(results) <= 10
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert all({"bm25", "vector", "recency", "merged"} <= set(r) for r in results)
    assert "decoy" in results[0]["item"]["text"]
    other = call(resolver, "GET", "/memory/planner/search", query={**Q, "q": "win"}, token=READER)
    assert [r["item"]["id"] for r in other[1]["results"]] != [r["item"]["id"] for r in results]


def test_one_item_get_history_delete_and_the_audit_trail(app: Any) -> None:
    resolver, store = app
    _seed(store)
    status, scope = correct(resolver, "at once", "late", "immediate", 0.1)
    assert status == 200, scope
    (belief,) = [
        i for i in scope["items"] if i["level"] == "belief" and i["source"] == "correction"
    ]
    base = "/memory/planner/items/" + belief["id"]
    status, got = call(resolver, "GET", base, query=Q, token=READER)
    assert status == 200 and got["id"] == belief["id"] and got["quarantined"] is False
    status, hist = call(resolver, "GET", base + "/history", query=Q, token=READER)
    assert status == 200
    lineage = [b["id"] for b in hist["lineage"]]
    assert lineage[-1] == belief["id"] and len(lineage) >= 2  # the evidence belief before it
    status, gone = call(resolver, "DELETE", base, query=Q, token=OPERATOR)
    assert status == 200 and belief["id"] not in [i["id"] for i in gone["items"]]
    status, missing = call(resolver, "GET", base, query=Q, token=READER)
    assert (
        status == 404 and missing["error"] == "unknown_item" and belief["id"] in missing["message"]
    )
    status, audit = call(resolver, "GET", "/memory/planner/audit", query=Q, token=READER)
    actions = [(e["action"], e["item"]) for e in audit["entries"]]
    assert actions == [("correction", None), ("delete_item", belief["id"])]
    assert all(e["actor"] == hash_token(OPERATOR)[:12] and e["at"] > 0 for e in audit["entries"])
    status, export = call(resolver, "GET", "/memory/planner/export", query=Q, token=READER)
    assert status == 200 and export["memory"]["agent"] == "planner"
    assert export["audit"] == audit["entries"]
    # forgetting the scope is audited too, and the trail outlives it
    assert call(resolver, "DELETE", "/memory/planner", query=Q, token=OPERATOR)[0] == 200
    audit = call(resolver, "GET", "/memory/planner/audit", query=Q, token=READER)[1]
    assert audit["entries"][-1]["action"] == "forget_scope"


def test_get_memory_shows_a_conflict_and_the_operator_confirms_or_retires(app: Any) -> None:
    resolver, store = app
    memory = add_correction(
        season_of([]), wrong="at once", right="late", subject="immediate", rate=0.1
    )
    for g in range(30):
        memory = consolidate(memory, summary(f"c{g}", immediate=2)).memory
    store.put_scope_item(persist.encode_memory(memory.model_copy(update={"version": 1})), 0)
    status, body = call(resolver, "GET", "/memory/planner", query=Q, token=READER)
    assert status == 200 and len(body["conflicts"]) == 1
    (flagged,) = [i for i in body["items"] if i["id"] == body["conflicts"][0]]
    assert flagged["conflict"] is True and flagged["confidence"] < 0.05
    path = f"/memory/planner/items/{flagged['id']}/confirm"
    status, confirmed = call(resolver, "POST", path, query=Q, token=OPERATOR)
    assert status == 200 and confirmed["conflicts"] == []
    path = f"/memory/planner/items/{flagged['id']}/retire"
    status, retired = call(resolver, "POST", path, query=Q, token=OPERATOR)
    assert status == 200
    (after,) = [i for i in retired["items"] if i["id"] == flagged["id"]]
    assert after["valid_to"] is not None
    status, wrong = call(
        resolver, "POST", "/memory/planner/items/nope/retire", query=Q, token=OPERATOR
    )
    assert status == 404 and "nope" in wrong["message"]


def test_an_unreadable_memory_is_a_409_naming_it_and_a_write_rebuilds_it(app: Any) -> None:
    resolver, store = app
    _seed(store)
    item = persist.encode_memory(season_of([]).model_copy(update={"version": 2}))
    item["mem"] = {"B": b"not zlib"}
    store.put_scope_item(item, 1)
    status, body = call(resolver, "GET", "/memory/planner", query=Q, token=OPERATOR)
    assert status == 409 and body["error"] == "memory_unreadable"
    assert "does not decode" in body["message"]
    correction = {"agent": "planner", "opponent": "reference", "wrong": "a", "right": "b"}
    correction.update(subject="threshold", rate=0.5)
    status, body = call(resolver, "POST", "/memory/corrections", body=correction, token=OPERATOR)
    assert status == 200, body
    assert call(resolver, "GET", "/memory/planner", query=Q, token=OPERATOR)[0] == 200


def test_corrections_beyond_the_budget_are_a_409(app: Any) -> None:
    resolver, _ = app
    body = {"agent": "planner", "opponent": "reference", "wrong": "a", "right": "b"}
    body.update(subject="jitter", rate=0.0, kind="preference")
    for n in range(25):
        status, _ = call(
            resolver, "POST", "/memory/corrections", body={**body, "text": f"n{n}"}, token=OPERATOR
        )
        assert status == 200
    status, answer = call(resolver, "POST", "/memory/corrections", body=body, token=OPERATOR)
    assert status == 409 and answer["error"] == "memory_full" and "retire" in answer["message"]


def test_a_quarantined_item_can_be_restored(app: Any) -> None:
    from test_echo_safety import _faded

    resolver, store = app
    memory = season_of([summary(f"w{i}", decoys_away=2) for i in range(6)])
    memory = memory.model_copy(update={"items": (*memory.items, *_faded(4))})
    memory = consolidate(memory, summary("trip")).memory
    assert memory.quarantine
    store.put_scope_item(persist.encode_memory(memory.model_copy(update={"version": 1})), 0)
    status, body = call(resolver, "GET", "/memory/planner", query=Q, token=READER)
    held = body["quarantine"][0]
    assert held["reason"] == "faded" and held["game_id"] == "trip"
    path = f"/memory/planner/quarantine/{held['id']}/restore"
    status, body = call(resolver, "POST", path, query=Q, token=OPERATOR)
    assert status == 200 and held["id"] in [i["id"] for i in body["items"]]
    assert held["id"] not in [q["id"] for q in body["quarantine"]]


def test_a_plant_blind_correction_through_the_route_brings_the_greedy_model_behind_the_gate(
    app: Any,
) -> None:
    from horcrux.echo.use import full_plan, memory_plan, models_plan

    resolver, store = app
    status, answer = correct(
        resolver, "decoys follow my positives", "decoys from turn 1", "plant_blind", 0.8
    )
    assert status == 200, answer
    memory = persist.load(store, "planner", "reference")[0]
    assert memory is not None
    belief = memory.active_beliefs()["plant_blind"]
    assert belief.source == "correction" and belief.corrected_rate == 0.8
    # for the style's models a claim about the opponent passes the gate like the games'
    # evidence: held back until the memory's plans out-predict the default on his moves;
    # who the opponent is takes it at once (the policies that plant blind, from turn 1)
    assert models_plan(memory) is None
    told = memory_plan(memory)
    assert told is not None and told.models == () and told.opponent is not None
    assert told.opponent.policies[0].decoys == "blind-early"
    plan = full_plan(memory)
    assert plan is not None
    greedy = {m.name: m for m in plan.models}["learned-greedy"]
    assert greedy.placement == "greedy" and greedy.prior > 0


def test_the_memory_route_says_who_the_opponent_is_in_words(app: Any) -> None:
    """Two games against `family:37` end (compaction writes who the opponent is); the
    operator's GET shows it: whether memory plays it, the likeliest classes and a sentence."""
    from horcrux import compaction
    from horcrux.rules import CLASSIC
    from horcrux.store.port import SeatInfo
    from horcrux_tools.selfplay import play_to_end, start_game

    resolver, store = app
    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="family:37"),
    }
    for i in range(2):
        start_game(store, f"o{i}", CLASSIC, 37000 + i, dict(seats))
        play_to_end(store, f"o{i}")
        compaction.compact(store, f"o{i}")
    status, body = call(
        resolver, "GET", "/memory/planner", query={"opponent": "family"}, token=READER
    )
    assert status == 200, body
    (item,) = [i for i in body["items"] if i["level"] == "opponent"]
    assert item["games"] == 2 and item["plays"] is True and item["none"] < 0.01
    assert item["text"].startswith("Voldemort relocates a Horcrux once a map of Harry's")
    assert item["text"].endswith("over 2 games")
    best = item["hypotheses"][0]
    assert best["p"] > 0.9 and "threshold@0.5" in best["policy"]
    assert "trigger" not in item  # the tables stay in the store, not in the view
