"""A player's own memory (issue 43): with the player key the server gave them, a person reads
what the AI learned about them (`GET /players/me/memory`, the operator view's sentences,
only their scope) and forgets it (`DELETE`): the scope is erased, the audit trail says when
and by whom without the content, the next game starts from the default, and nobody
else's memory and no game's events are touched. No key: 401; another player's id: 403."""

from __future__ import annotations

import json
from typing import Any

from api_fixtures import FakeContext, api_event
from test_echo_hotpath import _human_voldemort_game

from horcrux import compaction
from horcrux.api.app import build_app
from horcrux.api.player_routes import memory_agents
from horcrux.echo import ops, persist
from horcrux.service import GameService
from horcrux.service.models import player_id
from horcrux.store.results import memory_key

KEY = "forget-me-player-key-0123456789"
OTHER = "another-players-key-9876543210"
ME = f"player:{player_id(KEY)}"
THEM = f"player:{player_id(OTHER)}"
MAX_GAMES = 6


def call(app: Any, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    response = app.resolve(api_event(method, path, **kw), FakeContext())
    raw = response.get("body") or ""
    return response["statusCode"], json.loads(raw) if raw else None


def _play_until_remembered(store: Any, key: str, prefix: str, seed: int) -> list[str]:
    """Games as a human Voldemort (key) against the planner Harry, each compacted, until the
    planner's memory of that player holds an item; the games' ids."""
    games: list[str] = []
    for n in range(MAX_GAMES):
        game_id = f"{prefix}{n}"
        _human_voldemort_game(store, game_id, seed + n, key, token=f"{prefix}-seat-token-{n}-xyz")
        compaction.compact(store, game_id)
        games.append(game_id)
        memory, _ = persist.load(store, "planner", f"player:{player_id(key)}")
        if memory is not None and memory.items:
            return games
    raise AssertionError(f"no memory of {key} after {MAX_GAMES} games")


def _all_events(store: Any, game_id: str) -> list[Any]:
    page = store.events(game_id, limit=1000)
    return [e.model_dump(mode="json") if hasattr(e, "model_dump") else e for e in page.events]


def test_a_player_reads_and_forgets_their_own_memory_and_nothing_else(store: Any) -> None:
    mine = _play_until_remembered(store, KEY, "me", 20)
    theirs = _play_until_remembered(store, OTHER, "them", 40)
    app = build_app(GameService(store))
    events_before = {g: _all_events(store, g) for g in mine + theirs}
    them_before = store.scope_item(memory_key("planner", THEM))
    assert them_before is not None

    # read: the operator view's sentences, only this player's scopes
    status, seen = call(app, "GET", "/players/me/memory", token=KEY)
    assert status == 200, seen
    assert seen["player"] == ME
    assert [s["agent"] for s in seen["scopes"]] == list(memory_agents())
    planner = next(s for s in seen["scopes"] if s["agent"] == "planner")
    assert planner["games"] == len(mine) and planner["last_game"] == mine[-1]
    operator_view = ops.inspect(store, "planner", ME)
    assert [i["text"] for i in planner["items"]] == [i["text"] for i in operator_view["items"]]
    assert planner["items"] and all(i["text"].strip() for i in planner["items"])
    # the player's own id in the path is the same as `me`
    status, by_id = call(app, "GET", f"/players/{ME}/memory", token=KEY)
    assert (status, by_id) == (200, seen)

    # no key, another player's id, something that is no key
    status, body = call(app, "GET", "/players/me/memory")
    assert (status, body["error"]) == (401, "unauthorized")
    status, body = call(app, "DELETE", "/players/me/memory")
    assert (status, body["error"]) == (401, "unauthorized")
    status, body = call(app, "GET", f"/players/{THEM}/memory", token=KEY)
    assert (status, body["error"]) == (403, "forbidden") and THEM in body["message"]
    status, body = call(app, "DELETE", f"/players/{THEM}/memory", token=KEY)
    assert (status, body["error"]) == (403, "forbidden")
    status, body = call(app, "GET", "/players/me/memory", token="short!")
    assert (status, body["error"]) == (401, "unauthorized")
    assert store.scope_item(memory_key("planner", THEM)) == them_before

    # forget
    status, gone = call(app, "DELETE", "/players/me/memory", token=KEY)
    assert status == 200, gone
    assert gone["player"] == ME
    deleted = {f["agent"]: f["deleted"] for f in gone["forgotten"]}
    assert deleted["planner"] >= 1
    status, after = call(app, "GET", "/players/me/memory", token=KEY)
    assert status == 200
    assert all(s["items"] == [] and s["games"] == 0 for s in after["scopes"]), after
    # the next game starts from the default: nothing is loaded for this player
    assert persist.load(store, "planner", ME)[0] is None
    assert not store.recent_results("planner", ME).results

    # the audit trail says when and by whom, never what
    entries = ops.audit_trail(store, "planner", ME)["entries"]
    forget = [e for e in entries if e["action"] == "forget_scope"]
    assert len(forget) == 1 and forget[0]["actor"] == ME and forget[0]["at"] > 0
    text = json.dumps(forget[0])
    assert all(i["text"] not in text for i in planner["items"])

    # nobody else's memory, and no game's events, were touched
    assert store.scope_item(memory_key("planner", THEM)) == them_before
    assert {g: _all_events(store, g) for g in mine + theirs} == events_before
    status, still = call(app, "GET", "/players/me/memory", token=OTHER)
    assert status == 200 and still["player"] == THEM
    assert next(s for s in still["scopes"] if s["agent"] == "planner")["items"]
