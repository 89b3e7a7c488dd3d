"""What the browser client needs of the API and of `horcrux serve`, in process:

* `GET /brains`: the brains an AI seat may take, per seat, from the registries;
* players' display names on seats: checked (422 naming the rule, nothing written), stored,
  shown in the game and the lobby;
* the static files (`horcrux_tools.web.static`): content types, cache headers, the CSP, hashed
  asset names rewritten into index.html, None for the API's paths.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from api_fixtures import FakeContext, api_event

from horcrux.agents.base import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.api.app import build_app
from horcrux.service import GameService
from horcrux.store import MemoryStore
from horcrux_tools.web import static
from horcrux_tools.web.static import site_files, static_response, write_site


@pytest.fixture
def app() -> tuple[Any, MemoryStore]:
    store = MemoryStore()
    return build_app(GameService(store, inline_ai=True)), store


def call(app: Any, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    response = app.resolve(api_event(method, path, **kw), FakeContext())
    raw = response.get("body") or ""
    return response["statusCode"], json.loads(raw) if raw else None


HUMAN_VS_AI = {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}
TWO_HUMANS = {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}


def _games(store: MemoryStore) -> int:
    return sum(len(store.list_games(s, limit=100).games) for s in ("open", "active", "over"))


# ---------------------------------------------------------------- GET /brains
def test_brains_lists_each_seats_brains_with_a_description_and_the_default(app: Any) -> None:
    resolver, _ = app
    status, body = call(resolver, "GET", "/brains")
    assert status == 200
    for seat, registry, default in (
        ("harry", HARRY_BRAINS, "planner"),
        ("voldemort", VOLDEMORT_BRAINS, "reference"),
    ):
        listed = body[seat]
        assert [b["name"] for b in listed] == registry.names(seat_only=True)
        assert [b["name"] for b in listed if b["default"]] == [default]
        assert all(b["description"] for b in listed)
    assert "oracle" not in [b["name"] for b in body["harry"]]  # evaluation only
    # every brain listed is one a create accepts (the LLM brains need a key: refused 422)
    for b in body["voldemort"]:
        seats = {"harry": {"kind": "human"}, "voldemort": {"kind": "ai", "brain": b["name"]}}
        status, _ = call(resolver, "POST", "/games", body={"seats": seats})
        assert status == 201 or b["name"] == "llm", b


# ---------------------------------------------------------------- names
def test_a_name_on_create_and_on_join_is_stored_and_shown(app: Any) -> None:
    resolver, store = app
    seats = {"harry": {"kind": "human", "name": "  Zoë O'Brien-2 "}, "voldemort": {"kind": "human"}}
    status, created = call(resolver, "POST", "/games", body={"seats": seats})
    assert status == 201
    game_id = created["game_id"]
    assert created["game"]["seats"]["harry"]["name"] == "Zoë O'Brien-2"  # trimmed
    assert created["game"]["seats"]["voldemort"]["name"] is None
    status, lobby = call(resolver, "GET", "/games")
    assert [g["names"] for g in lobby["games"]] == [{"harry": "Zoë O'Brien-2"}]
    status, joined = call(
        resolver, "POST", f"/games/{game_id}/seats/voldemort", body={"name": "Tom M. Riddle"}
    )
    assert status == 200
    assert joined["game"]["seats"]["voldemort"]["name"] == "Tom M. Riddle"
    assert store.load(game_id).seats["voldemort"].name == "Tom M. Riddle"
    status, spectator = call(resolver, "GET", f"/games/{game_id}")
    assert {s: v["name"] for s, v in spectator["seats"].items()} == {
        "harry": "Zoë O'Brien-2",
        "voldemort": "Tom M. Riddle",
    }
    status, active = call(resolver, "GET", "/games", query={"status": "active"})
    assert active["games"][0]["names"] == {"harry": "Zoë O'Brien-2", "voldemort": "Tom M. Riddle"}


def test_a_join_without_a_body_still_works(app: Any) -> None:
    resolver, _ = app
    _, created = call(resolver, "POST", "/games", body={"seats": TWO_HUMANS})
    status, joined = call(resolver, "POST", f"/games/{created['game_id']}/seats/voldemort")
    assert status == 200 and joined["game"]["seats"]["voldemort"] == {
        "kind": "human",
        "taken": True,
        "brain": None,
        "brain_used": None,
        "name": None,
    }


BAD_NAMES = [
    ("A" * 33, "got 33 characters"),
    ("   ", "got 0 characters"),
    ("<script>alert(1)</script>", "'<' is not allowed"),
    ('Bob" onmouseover="x', "'\"' is not allowed"),
    ("Tom\u202eevil", "is not allowed"),  # a right-to-left override
    ("a&b", "'&' is not allowed"),
    ("x" * 300, "at most 256 characters"),
]


@pytest.mark.parametrize(("name", "says"), BAD_NAMES)
def test_a_bad_name_is_a_422_naming_the_rule_and_writes_nothing(
    app: Any, name: str, says: str
) -> None:
    resolver, store = app
    seats = {"harry": {"kind": "human", "name": name}, "voldemort": {"kind": "ai"}}
    status, body = call(resolver, "POST", "/games", body={"seats": seats})
    assert status == 422 and body["error"] == "validation_error"
    assert "body.seats.harry.name" in body["message"] and says in body["message"]
    if "256" not in says:
        assert "letters, digits, spaces and - _ . '" in body["message"]
    assert _games(store) == 0
    _, created = call(resolver, "POST", "/games", body={"seats": TWO_HUMANS})
    game_id = created["game_id"]
    before = store.load(game_id)
    status, body = call(resolver, "POST", f"/games/{game_id}/seats/voldemort", body={"name": name})
    assert status == 422 and "body.name" in body["message"] and says in body["message"]
    assert store.load(game_id) == before  # the seat is still free, nothing written


def test_a_name_on_an_ai_seat_or_on_the_free_seat_is_refused(app: Any) -> None:
    resolver, store = app
    for seats, says in (
        ({"harry": {"kind": "human"}, "voldemort": {"kind": "ai", "name": "Tom"}}, "an AI's"),
        ({"harry": {"kind": "human"}, "voldemort": {"kind": "human", "name": "Tom"}}, "joins"),
    ):
        status, body = call(resolver, "POST", "/games", body={"seats": seats})
        assert status == 422 and body["error"] == "invalid_request" and says in body["message"]
    assert _games(store) == 0
    status, body = call(
        resolver, "POST", "/games", body={"seats": HUMAN_VS_AI, "name": "Zoë"}
    )  # a name beside the seats is an unknown field
    assert status == 422 and "body.name" in body["message"]


# ---------------------------------------------------------------- the static files
def test_index_html_points_at_content_hashed_assets_and_is_never_cached() -> None:
    status, headers, body = static_response("GET", "/")  # type: ignore[misc]
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Cache-Control"] == "no-cache"
    html = body.decode()
    source = (static.SITE_DIR / "style.css").read_bytes()
    served = f"style.{hashlib.sha256(source).hexdigest()[:12]}.css"
    assert f'"{served}"' in html and '"style.css"' not in html
    status, headers, asset = static_response("GET", f"/{served}")  # type: ignore[misc]
    assert asset == source and headers["Content-Type"].startswith("text/css")
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    # the ES modules: one hash over all of them, their relative imports rewritten to it
    modules = sorted(p.name for p in static.SITE_DIR.glob("*.js"))
    joined = b"".join(
        n.encode() + b"\0" + (static.SITE_DIR / n).read_bytes() + b"\0" for n in modules
    )
    version = hashlib.sha256(joined).hexdigest()[:12]
    assert f'"app.{version}.js"' in html and '"app.js"' not in html
    for name in modules:
        source = (static.SITE_DIR / name).read_bytes()
        status, headers, asset = static_response("GET", f"/{name[:-3]}.{version}.js")  # type: ignore[misc]
        assert headers["Content-Type"].startswith("text/javascript")
        assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
        imported = re.findall(r'from "\./([\w.-]+)"', asset.decode())
        assert all(i.endswith(f".{version}.js") for i in imported), (name, imported)
        assert re.sub(rf"\.{version}\.js", ".js", asset.decode()).encode() == source
    assert static_response("GET", "/index.html") == static_response("GET", "/?x=1")


def test_a_page_that_imports_a_missing_module_or_leaves_an_asset_unused_is_refused(
    tmp_path: Any,
) -> None:
    (tmp_path / "index.html").write_text('<script type="module" src="app.js"></script>')
    (tmp_path / "app.js").write_text('import { a } from "./a.js";\n')
    with pytest.raises(RuntimeError, match=r"app.js imports ./a.js"):
        static.render_site(tmp_path)
    (tmp_path / "a.js").write_text('import { b } from "./app.js";\nexport const a = 1;\n')
    files = static.render_site(tmp_path)  # a cycle is fine: one hash over both modules
    assert sorted(f.split(".")[0] for f in files) == ["a", "app", "index"]
    (tmp_path / "lost.css").write_text("p {}")
    with pytest.raises(RuntimeError, match=r"nothing in the page references lost\.css"):
        static.render_site(tmp_path)


def test_every_page_response_carries_the_csp_and_the_api_paths_are_left_alone() -> None:
    for path in ("/", "/config.json", *(f"/{p}" for p in site_files())):
        found = static_response("GET", path)
        assert found is not None, path
        headers = found[1]
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert static_response("HEAD", "/") == static_response("GET", "/")
    for method, path in (
        ("GET", "/games"),
        ("GET", "/brains"),
        ("GET", "/healthz"),
        ("GET", "/app.js"),  # only the hashed name is served
        ("GET", "/app.000000000000.js"),
        ("POST", "/"),
        ("GET", "/../pyproject.toml"),
    ):
        assert static_response(method, path) is None, (method, path)
    assert static_response("GET", "/config.json") is not None
    assert json.loads(static_response("GET", "/config.json")[2]) == {}  # type: ignore[index]


def test_the_page_has_no_inline_script_or_style_and_no_remote_url() -> None:
    html = site_files()["index.html"].body.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    assert "style=" not in html and "<style" not in html
    for item in site_files().values():
        text = item.body.decode()
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), item.path
    modules = sorted(static.SITE_DIR.glob("*.js"))
    assert modules and static.SITE_DIR / "app.js" in modules
    for module in modules:
        js = module.read_text()
        assert "innerHTML" not in js and "insertAdjacentHTML" not in js, module.name
        assert "eval(" not in js and "document.write" not in js, module.name


def test_write_site_writes_exactly_the_served_files(tmp_path: Any) -> None:
    (tmp_path / "stale.js").write_text("old")
    out = write_site(tmp_path)
    assert {p.name for p in out.iterdir()} == set(site_files())
    for name, item in site_files().items():
        assert (out / name).read_bytes() == item.body


# ---------------------------------------------------------------- the AI belief overlay
def test_belief_is_the_default_planners_map_on_harrys_evidence_for_every_caller(
    app: Any,
) -> None:
    resolver, _ = app
    from horcrux.agents.base import DEFAULT_HARRY
    from horcrux.rules import CLASSIC

    body = {
        "seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}},
        "rules": "classic",
        "seed": 11,
    }
    status, created = call(resolver, "POST", "/games", body=body)
    assert status == 201
    gid, harry = created["game_id"], created["token"]
    _, joined = call(resolver, "POST", f"/games/{gid}/seats/voldemort")
    status, before = call(resolver, "GET", f"/games/{gid}/belief", token=harry)
    assert status == 200, before
    assert before["brain"] == DEFAULT_HARRY and before["turn"] == 1
    assert set(before["occupancy"]) == set(CLASSIC.locations)
    # nothing seen yet: every location alike, 3 Horcruxes among 15
    assert max(before["occupancy"].values()) - min(before["occupancy"].values()) < 1e-6
    assert abs(sum(before["occupancy"].values()) - 3) < 1e-3
    status, moved = call(
        resolver,
        "POST",
        f"/games/{gid}/moves",
        token=harry,
        body={"type": "search", "location": "hogwarts"},
    )
    assert status == 200, moved
    positive = moved["event"]["observations"][0]["outcome"] == "positive"
    views = {
        who: call(resolver, "GET", f"/games/{gid}/belief", token=token)[1]
        for who, token in (("harry", harry), ("voldemort", joined["token"]), ("spectator", None))
    }
    # the same map for Harry, Voldemort and a spectator: a function of Harry's view alone
    assert views["harry"] == views["voldemort"] == views["spectator"]
    after = views["harry"]["occupancy"]
    others = [p for loc, p in after.items() if loc != "hogwarts"]
    assert (after["hogwarts"] > max(others)) if positive else (after["hogwarts"] < min(others))
    # no truth in it: only these keys
    assert set(views["spectator"]) == {
        "game_id",
        "version",
        "turn",
        "brain",
        "entropy",
        "occupancy",
    }
    assert call(resolver, "GET", "/games/nope/belief")[0] == 404
    assert call(resolver, "GET", f"/games/{gid}/belief", token="wrong")[0] == 401
    # ?turn=N: the map before Harry's move at turn N (a replay's step): turn 1 is the prior,
    # turn 2 the map now; a turn the game has not reached is a 404 naming the range
    at = {
        n: call(resolver, "GET", f"/games/{gid}/belief", query={"turn": str(n)})
        for n in (1, 2, 3, 0, 10001)
    }
    assert at[1][0] == 200 and at[1][1]["turn"] == 1
    assert at[1][1]["occupancy"] == before["occupancy"]
    assert at[2][0] == 200 and at[2][1]["occupancy"] == after
    assert at[3][0] == 404 and at[3][1]["error"] == "not_found"
    assert "turns 1 to 2" in at[3][1]["message"]
    assert at[0][0] == 422 and at[10001][0] == 422
