"""The browser client in a real browser: Debian's headless Chromium driven by Playwright
against a real `horcrux serve` subprocess (embedded moto, AI turns in process).

1. a whole game as Harry against the AI Voldemort through the page, to the end and the replay;
2. a human-vs-human game in two browser contexts, a third one watching: the spectator's
   DOM and network responses never hold a true position, a decoy or a Voldemort move while
   the game runs; a double click plays one turn;
3. bad input through the page (an over-long or script-laden name, a stale token): a clear
   message, nothing written;
4. screenshots of the lobby, both seats and the replay, and the figures (first-load bytes,
   move click to result shown) in figures.json, in build/web-shots/ (`make screenshots`:
   docs/img/web/);
5. the real local model plays Harry through `serve`, a spectator follows it to the end, and
   the replay shows each of its decisions: the gate tier, the context it saw, its reply.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Response, expect, sync_playwright

from horcrux import engine
from horcrux.rules import STANDARD
from horcrux_tools.local.client import ApiError, HorcruxClient
from horcrux_tools.local.harness import ServeProcess, get_json, request_json

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("HORCRUX_WEB_SHOTS") or ROOT / "build" / "web-shots")
"""Where the screenshots and figures go: build/web-shots/ (ignored) on every run, so a test
run leaves the checkout clean; `make screenshots` writes them to docs/img/web/."""
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_S = 40.0
UI_MS = 15_000  # the longest the page may take to show something (AI replies, polling)
FIRST_LOAD_BUDGET = 200 * 1024
VIEWPORT = {"width": 1280, "height": 860}
OBSERVER = "127.0.0.3"  # the test's own client address (Linux routes 127/8 to loopback)
SEED = 1  # STANDARD's placement for seed 1: diagon-alley, forbidden-forest, hogsmeade


# ---------------------------------------------------------------- the server and the browser
class Served:
    """A real `horcrux serve` (the harness's `ServeProcess`: its own moto, never a real
    endpoint) and a client of its API."""

    def __init__(self, server: ServeProcess) -> None:
        self.server = server
        self.url = server.url
        self.client = HorcruxClient(server.url, timeout_s=20)

    def count(self, status: str) -> int:
        """The games listed with `status`, asked from a loopback address of the test's own
        (OBSERVER): a lobby page of 100 costs 11 of a client's rate budget, and the page
        under test (127.0.0.1) must not pay for the test's bookkeeping."""
        host, port = self.url.removeprefix("http://").split(":")
        for _ in range(20):  # a 429 says when to come back (Retry-After): as any client does
            conn = http.client.HTTPConnection(
                host, int(port), timeout=20, source_address=(OBSERVER, 0)
            )
            try:
                conn.request("GET", f"/games?status={status}&limit=100")
                response = conn.getresponse()
                body = json.loads(response.read())
            finally:
                conn.close()
            if response.status != 429:
                break
            time.sleep(float(response.getheader("Retry-After") or 1))
        assert response.status == 200, body
        return len(body["games"])

    def counts(self) -> dict[str, int]:
        return {s: self.count(s) for s in ("open", "active", "over")}


@contextmanager
def serving(extra: dict[str, str] | None = None, unset: tuple[str, ...] = ()) -> Iterator[Served]:
    """`horcrux serve` on a free port, healthy; stopped cleanly after (exit code 0)."""
    with ServeProcess(env=extra, unset=unset, startup_s=STARTUP_S) as server:
        yield Served(server)
        code, _ = server.terminate()
    assert code == 0, server.output()[-2000:]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def figures() -> Iterator[dict[str, Any]]:
    found: dict[str, Any] = {}
    yield found
    if found:
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / "figures.json").write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")


def _context(browser: Browser) -> BrowserContext:
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(UI_MS)
    return context


def _page(context: BrowserContext, errors: list[str]) -> Page:
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("dialog", lambda dialog: errors.append(f"a dialog opened: {dialog.message}"))
    return page


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _game_id(page: Page) -> str:
    expect(page).to_have_url(re.compile(r"#/game/[^/]+$"))
    return page.url.rsplit("/", 1)[1]


def _my_turn(page: Page, turn: int) -> None:
    """Wait until the page shows the seat's turn `turn` with its move controls."""
    expect(page.get_by_test_id("status")).to_contain_text(f"Turn {turn} /")
    expect(page.get_by_test_id("actions")).to_be_visible()


def _wait_for_moves(page: Page, n: int) -> None:
    """Until the page has timed `n` moves. Not `wait_for_function`: a string predicate that
    is not true at once is polled through eval, which the page's CSP refuses."""
    deadline = time.monotonic() + UI_MS / 1000
    while page.evaluate("window.horcruxMetrics.moves.length") < n:
        assert time.monotonic() < deadline, f"the page never timed {n} moves"
        page.wait_for_timeout(5)  # the browser's own clock: a frame or so


def _events(served: Served, game_id: str, token: str | None = None) -> list[dict[str, Any]]:
    return list(served.client.all_events(game_id, token))


# ---------------------------------------------------------------- 1. Harry vs the AI Voldemort
def test_a_whole_game_as_harry_against_the_ai_through_the_page(
    served: Served, browser: Browser, figures: dict[str, Any]
) -> None:
    truth = engine.new_game(STANDARD, SEED)[0].horcruxes
    decoy_free = next(loc for loc in STANDARD.locations if loc not in truth)
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    expect(page.get_by_test_id("lobby")).to_be_visible()
    # first load: everything the browser fetched, by the Performance API (a cold context)
    page.wait_for_load_state("networkidle")
    loaded = page.evaluate(
        """() => {
            const nav = performance.getEntriesByType('navigation')[0];
            const res = performance.getEntriesByType('resource');
            return {bytes: nav.transferSize + res.reduce((a, r) => a + r.transferSize, 0),
                    requests: 1 + res.length, ms: nav.loadEventEnd};
        }"""
    )
    assert 0 < loaded["bytes"] <= FIRST_LOAD_BUDGET, loaded
    figures["first_load"] = loaded

    page.get_by_test_id("player-name").fill("Zoë O'Brien")
    page.get_by_test_id("seed").fill(str(SEED))
    page.get_by_test_id("new-game").click()
    expect(page.get_by_test_id("seat-harry")).to_be_visible()
    game_id = _game_id(page)
    token = json.loads(page.evaluate("localStorage.getItem('horcrux.seats.v1')"))[game_id]["token"]
    assert token not in page.url
    expect(page.get_by_test_id("status")).to_contain_text("Harry: Zoë O'Brien")
    expect(page.get_by_test_id("status")).to_contain_text("Voldemort: AI (Easy)")

    # turn 1: a search by clicks (the result appears on the tile and in the message)
    _my_turn(page, 1)
    page.get_by_test_id("action-search").click()
    page.get_by_test_id(f"loc-{decoy_free}").click()
    expect(page.get_by_test_id("message")).to_contain_text("You searched")
    expect(page.get_by_test_id(f"loc-{decoy_free}").locator(".chip")).to_have_count(1)
    # turns 2-4: attacks, by the keyboard (a, arrows to the location, Enter) and by clicks;
    # the reference Voldemort relocates only after a positive at a Horcrux: attacks are safe
    for turn, target in enumerate(truth, start=2):
        _my_turn(page, turn)
        if turn == 3:  # Harry to move, the evidence map on
            page.mouse.move(0, 0)
            _shot(page, "harry-seat")
        if turn == 2:
            page.keyboard.press("a")
            for _ in range(STANDARD.locations.index(target)):
                page.keyboard.press("ArrowRight")
            page.keyboard.press("Enter")
        else:
            page.get_by_test_id("action-attack").click()
            page.get_by_test_id(f"loc-{target}").click()
        if turn == 2:
            expect(page.get_by_test_id("destroyed")).to_contain_text("1 destroyed")
            page.get_by_test_id("belief-toggle").click()
            # the overlay is the server's AI Harry on Harry's evidence (GET .../belief)
            expect(page.get_by_test_id("belief-source")).to_contain_text("the strongest AI Harry")
            _, _, belief = get_json(f"{served.url}/games/{game_id}/belief")
            for loc, p in belief["occupancy"].items():
                tile = page.get_by_test_id(f"loc-{loc}").locator(".p")
                expect(tile).to_have_text(f"{math.floor(p * 100 + 0.5)}%")  # JS Math.round
    expect(page.get_by_test_id("end")).to_contain_text("You won!")
    expect(page.get_by_test_id("end")).to_contain_text("every Horcrux destroyed")
    # the end screen says where everything really was (the replay, released after the end)
    expect(page.get_by_test_id("end-truth")).to_contain_text(
        "Horcruxes at " + ", ".join(loc.replace("-", " ").title() for loc in truth)
    )
    expect(page.get_by_test_id("end-state")).to_have_text("End No Horcrux left; no decoy standing.")
    # each move's time from its click to its result painted (pushed on the next frame)
    _wait_for_moves(page, 4)
    moves = page.evaluate("window.horcruxMetrics.moves")
    assert len(moves) == 4, moves
    figures["move_click_to_result_ms"] = {
        "moves": [round(m, 1) for m in moves],
        "median": round(statistics.median(moves), 1),
        "max": round(max(moves), 1),
    }
    # what the page showed is what the server holds
    game = served.client.game(game_id, token)
    assert game["winner"] == "harry" and game["view"]["horcruxes_destroyed"] == 3

    page.get_by_test_id("open-replay").click()
    expect(page.get_by_test_id("replay")).to_be_visible()
    slider = page.get_by_test_id("replay-slider")
    slider.focus()
    page.keyboard.press("Home")
    expect(page.get_by_test_id("replay-step")).to_contain_text("Step 0 /")
    for loc in truth:  # the truth at the start, revealed after the end
        expect(page.get_by_test_id(f"replay-truth-{loc}")).to_contain_text("HORCRUX")
    page.keyboard.press("End")
    expect(page.get_by_test_id("entropy-chart").locator("polyline")).to_have_count(1)
    expect(page.get_by_test_id("replay")).to_contain_text("Every Voldemort move")
    # the AI seat's decision behind each step (the replay's notes); a person has none
    expect(page.get_by_test_id("decision-none")).to_contain_text("Harry is a person here")
    voldemort_turns = game["turn"] - 1  # the AI moved after each of Harry's turns but the last
    expect(page.get_by_test_id("decision-tally")).to_have_text(
        f"{voldemort_turns} AI decisions: Voldemort without a model ×{voldemort_turns}."
    )
    page.keyboard.press("ArrowLeft")
    facts = page.get_by_test_id("decision-facts")
    expect(facts).to_contain_text("Easy: The rules' own Voldemort")
    expect(facts).to_contain_text("its rule (no model call)")
    expect(facts).not_to_contain_text("plant_decoy")
    page.keyboard.press("ArrowLeft")
    _shot(page, "replay")
    # the browser keeps one player key (the API's, from the first create): the next game is
    # created as the same player, so memory of this person builds up; never in a URL
    key = page.evaluate("localStorage.getItem('horcrux.player_key')")
    assert isinstance(key, str) and len(key) >= 22
    page.goto(served.url + "/")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/games")) as sent:
        page.get_by_test_id("new-game").click()
    body = json.loads(sent.value.post_data or "{}")
    assert body["seats"]["harry"]["player_key"] == key
    expect(page.get_by_test_id("seat-harry")).to_be_visible()
    assert key not in page.url
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 2. two people and a spectator
HIDDEN_KEYS = ("horcrux_locations", "decoy_locations", "relocations_left", "decoys_left")
HIDDEN_TEXT = ("voldemort_moved", "plant_decoy", "relocate", '"seed"')


def test_two_people_play_and_a_spectator_sees_only_harrys_view(
    served: Served, browser: Browser
) -> None:
    errors: list[str] = []
    harry_ctx, voldemort_ctx, watch_ctx = (_context(browser) for _ in range(3))
    harry, voldemort = _page(harry_ctx, errors), _page(voldemort_ctx, errors)

    harry.goto(served.url + "/")
    harry.get_by_test_id("player-name").fill("Harriet")
    harry.get_by_test_id("opponent").select_option("human")
    harry.get_by_test_id("seed").fill("3")  # azkaban, godrics-hollow, the-burrow
    harry.get_by_test_id("new-game").click()
    game_id = _game_id(harry)
    expect(harry.get_by_test_id("status")).to_contain_text("waiting for a second player")

    voldemort.goto(served.url + "/")
    row = voldemort.locator(f"[data-testid=open-game][data-game='{game_id}']")
    expect(row).to_contain_text("Harriet (Harry)")
    _shot(voldemort, "lobby")
    voldemort.get_by_test_id("player-name").fill("Tom")
    row.get_by_test_id("join-voldemort").click()
    expect(voldemort.get_by_test_id("seat-voldemort")).to_be_visible()
    expect(voldemort.get_by_test_id("truth")).to_contain_text(
        "Azkaban, Godric's Hollow, The Burrow"
    )

    # the spectator: every response body and every DOM it shows, recorded while it runs
    watcher = _page(watch_ctx, errors)
    bodies: list[str] = []

    def record(response: Response) -> None:
        if "/games/" in response.url and response.status != 304:
            bodies.append(response.text())

    watcher.on("response", record)
    watcher.goto(f"{served.url}/#/game/{game_id}")
    expect(watcher.get_by_test_id("spectator")).to_be_visible()
    expect(harry.get_by_test_id("status")).to_contain_text("Voldemort: Tom")
    doms: list[str] = []

    def watched(turn_text: str) -> None:
        expect(watcher.get_by_test_id("status")).to_contain_text(turn_text)
        doms.append(watcher.content())

    # turn 1: a double click on a tile plays one search (If-Match + one move in flight)
    _my_turn(harry, 1)
    harry.get_by_test_id("action-search").click()
    harry.get_by_test_id("loc-azkaban").dblclick()
    expect(harry.get_by_test_id("to-move")).to_contain_text("Voldemort to move")
    watched("Voldemort to move")
    # Voldemort plants a decoy (keyboard: d, then a free location by click)
    _my_turn(voldemort, 1)
    expect(voldemort.get_by_test_id("last-harry")).to_contain_text("searched Azkaban")
    voldemort.keyboard.press("d")
    voldemort.get_by_test_id("loc-hogwarts").click()
    expect(voldemort.get_by_test_id("loc-hogwarts")).to_contain_text("DECOY")
    voldemort.mouse.move(0, 0)
    _shot(voldemort, "voldemort-seat")
    # turn 2: Harry searches Hogwarts; Voldemort moves the Horcrux of Azkaban
    _my_turn(harry, 2)
    watched("Harry to move")
    harry.get_by_test_id("action-search").click()
    harry.get_by_test_id("loc-hogwarts").click()
    _my_turn(voldemort, 2)
    voldemort.get_by_test_id("action-relocate").click()
    voldemort.get_by_test_id("loc-azkaban").click()
    voldemort.get_by_test_id("loc-gringotts").click()
    expect(voldemort.get_by_test_id("truth")).to_contain_text("Gringotts")
    _my_turn(harry, 3)
    watched("Harry to move")

    events = _events(served, game_id, _token(voldemort, game_id))
    kinds = [e["type"] for e in events]
    assert kinds == [
        "game_started",
        "harry_moved",
        "voldemort_moved",
        "harry_moved",
        "voldemort_moved",
    ]
    assert [e["action"]["type"] for e in events[2::2]] == ["plant_decoy", "relocate"]
    # the spectator saw the game (Harry's two searches on its board), never the truth
    expect(watcher.get_by_test_id("loc-hogwarts").locator(".chip")).to_have_count(1)
    expect(watcher.get_by_test_id("loc-azkaban").locator(".chip")).to_have_count(1)
    assert len(bodies) >= 3
    for body in bodies:
        for key in (*HIDDEN_KEYS, *HIDDEN_TEXT):
            assert key not in body, (key, body[:300])
    for dom in doms:
        assert "DECOY" not in dom and "HORCRUX" not in dom
        assert "planted a decoy" not in dom and "moved a Horcrux" not in dom
        assert "Voldemort's secrets" not in dom
    assert doms and all("Harriet" in dom for dom in doms)
    assert errors == []
    for ctx in (harry_ctx, voldemort_ctx, watch_ctx):
        ctx.close()


def _token(page: Page, game_id: str) -> str:
    seats = json.loads(page.evaluate("localStorage.getItem('horcrux.seats.v1')"))
    token: str = seats[game_id]["token"]
    return token


# ---------------------------------------------------------------- 3. bad input
@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("A" * 40, "1-32 characters"),
        ("<script>alert(1)</script>", "'<' is not allowed"),
        ('Bob" onmouseover="x', "'\"' is not allowed"),
    ],
)
def test_a_bad_name_gets_a_clear_message_and_writes_nothing(
    served: Served, browser: Browser, name: str, says: str
) -> None:
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    before = served.counts()
    page.goto(served.url + "/")
    page.get_by_test_id("player-name").fill(name)
    page.get_by_test_id("new-game").click()
    message = page.get_by_test_id("message")
    expect(message).to_contain_text("The game was not created")
    expect(message).to_contain_text(says)
    expect(page.get_by_test_id("lobby")).to_be_visible()
    assert served.counts() == before
    assert page.locator("script:not([src])").count() == 0  # the name stayed text
    # joining under that name is refused as well, and the seat stays free
    created = served.client.create_game({"kind": "human"}, {"kind": "human"}, rules="standard")
    game_id = created["game_id"]
    page.reload()
    row = page.locator(f"[data-testid=open-game][data-game='{game_id}']")
    row.get_by_test_id("join-voldemort").click()
    expect(message).to_contain_text("You did not join")
    expect(message).to_contain_text(says)
    assert served.client.free_seats(game_id) == ["voldemort"]
    assert errors == []
    context.close()


def test_a_stale_token_gets_a_clear_message_and_writes_nothing(
    served: Served, browser: Browser
) -> None:
    created = served.client.create_game({"kind": "human"}, {"kind": "ai"}, rules="standard")
    game_id = created["game_id"]
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    stale = {game_id: {"seat": "harry", "token": "not-the-token-" + "x" * 30, "name": None}}
    page.evaluate("s => localStorage.setItem('horcrux.seats.v1', s)", json.dumps(stale))
    page.goto(f"{served.url}/#/game/{game_id}")
    message = page.get_by_test_id("message")
    expect(message).to_contain_text("was refused (unauthorized)")
    expect(page.get_by_test_id("actions")).to_have_count(0)
    assert served.client.game(game_id, created["token"])["version"] == created["game"]["version"]
    assert len(_events(served, game_id)) == 1  # game_started only
    page.get_by_test_id("leave").click()
    expect(page.get_by_test_id("leave-question")).to_be_visible()  # asked first
    page.get_by_test_id("leave-confirm").click()
    expect(page.get_by_test_id("lobby")).to_be_visible()
    assert page.evaluate("localStorage.getItem('horcrux.seats.v1')") == "{}"
    with pytest.raises(ApiError) as refused:
        served.client.move(game_id, "not-the-token-" + "x" * 30, {"type": "pass"})
    assert refused.value.status == 401
    assert errors == []
    context.close()


def test_a_stale_page_plays_nothing_after_the_game_moved_on(
    served: Served, browser: Browser
) -> None:
    """Two tabs of one seat: the second still shows turn 1 when the first has played it and
    the AI has answered; its click is refused (If-Match: 412), not played as turn 2."""
    errors: list[str] = []
    context = _context(browser)
    first, second = _page(context, errors), _page(context, errors)
    first.goto(served.url + "/")
    first.get_by_test_id("seed").fill(str(SEED))
    first.get_by_test_id("new-game").click()
    game_id = _game_id(first)
    token = _token(first, game_id)
    second.goto(f"{served.url}/#/game/{game_id}")
    _my_turn(second, 1)  # it polls every 10 s on its own turn: it stays at turn 1 below
    _my_turn(first, 1)
    first.get_by_test_id("action-search").click()
    first.get_by_test_id("loc-hogwarts").click()
    _my_turn(first, 2)  # the AI Voldemort has answered
    assert served.client.game(game_id, token)["turn"] == 2
    expect(second.get_by_test_id("status")).to_contain_text("Turn 1 /")
    second.get_by_test_id("action-attack").click()
    second.get_by_test_id("loc-azkaban").click()
    expect(second.get_by_test_id("message")).to_contain_text("That move was not played")
    expect(second.get_by_test_id("message")).to_contain_text("precondition_failed")
    _my_turn(second, 2)  # and it shows the game as it is now
    game = served.client.game(game_id, token)
    assert game["turn"] == 2 and game["view"]["attacks_left"] == STANDARD.attacks
    assert [e["type"] for e in _events(served, game_id, token)].count("harry_moved") == 1
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 5. a model's decisions
@pytest.mark.model
def test_a_spectator_watches_the_model_play_and_the_replay_shows_what_it_saw(
    browser: Browser,
) -> None:
    """The real local model (llama.cpp's server, SmolLM2) plays Harry through `horcrux
    serve`; a spectator follows the game to its end, then the replay shows, for each of the
    model's moves, its gate tier, the context the model saw and what it replied."""
    from horcrux_tools.local.model_server import running_model_server

    with running_model_server(port=0, threads=1) as model:
        extra = {"HORCRUX_LOCAL_MODEL_URL": model.base_url}
        with serving(extra, unset=("ANTHROPIC_API_KEY",)) as server:
            created = server.client.create_game(
                {"kind": "ai", "brain": "llm:local"},
                {"kind": "ai", "brain": "reference"},
                rules="classic",
                seed=SEED,
            )
            game_id = created["game_id"]
            errors: list[str] = []
            context = _context(browser)
            page = _page(context, errors)
            page.goto(f"{server.url}/#/game/{game_id}")
            expect(page.get_by_test_id("spectator")).to_be_visible()
            expect(page.get_by_test_id("end")).to_be_visible(timeout=600_000)
            _, _, replay = get_json(f"{server.url}/games/{game_id}/replay")
            page.get_by_test_id("open-replay").click()
            expect(page.get_by_test_id("replay")).to_be_visible()
            page.get_by_test_id("replay-slider").focus()
            page.keyboard.press("Home")
            page.keyboard.press("ArrowRight")  # step 1: the model's first move
            expect(page.get_by_test_id("replay-step")).to_contain_text("Step 1 /")
            first = replay["decisions"][0]
            assert (first["seat"], first["turn"], first["brain"]) == ("harry", 1, "llm:local")
            assert first["tier"] != "zero" and first["context"].startswith("Turn 1/")
            facts = page.get_by_test_id("decision-facts")
            expect(facts).to_contain_text("A language model chooses each move")
            expect(facts).to_contain_text("played")
            expect(page.get_by_test_id("decision-context")).to_have_text(first["context"])
            reply = page.get_by_test_id("decision-reply")
            expect(reply).to_have_text(first["reply"] or "(nothing)")
            harry = [d for d in replay["decisions"] if d["seat"] == "harry"]
            by_model = [d for d in harry if d["source"] == "llm"]
            assert len(by_model) >= 0.8 * len(harry)  # the model played, not the fallback
            assert all(d["context"] and d["tokens_in"] > 0 for d in by_model)
            expect(page.get_by_test_id("decision-tally")).to_contain_text("Harry with a model ×")
            _shot(page, "replay-model")
            assert errors == []
            context.close()


# ---------------------------------------------------------------- 6. a phone
PHONE = {"width": 390, "height": 844}
OVERFLOW = "document.scrollingElement.scrollWidth - window.innerWidth"
WIDE = """() => [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + e.getAttribute('data-testid')
        + ' ' + Math.round(e.getBoundingClientRect().right))"""


def _ai_game_over(served: Served) -> str:
    """An AI-vs-AI game, played to its end by the server: its id."""
    created = served.client.create_game(
        {"kind": "ai", "brain": "planner"}, {"kind": "ai"}, rules="standard", seed=SEED
    )
    game_id: str = created["game_id"]
    deadline = time.monotonic() + 120
    while served.client.game(game_id)["status"] != "over":
        assert time.monotonic() < deadline, "the AI-vs-AI game never ended"
        time.sleep(0.2)  # polling a server-side game to its end, not a stand-in for an event
    return game_id


def test_the_lobby_a_game_and_the_replay_fit_a_phone(served: Served, browser: Browser) -> None:
    finished = _ai_game_over(served)
    served.client.create_game({"kind": "human"}, {"kind": "human"}, rules="standard")  # a row
    errors: list[str] = []
    context = browser.new_context(viewport=PHONE)  # type: ignore[arg-type]
    context.set_default_timeout(UI_MS)
    page = _page(context, errors)
    page.goto(served.url + "/")
    expect(page.get_by_test_id("open-game").first).to_be_visible()
    expect(page.get_by_test_id("over-games")).to_contain_text("Replay")
    assert page.evaluate(OVERFLOW) <= 0, page.evaluate(WIDE)
    _shot(page, "phone-lobby")
    page.get_by_test_id("seed").fill(str(SEED))
    page.get_by_test_id("new-game").click()
    _my_turn(page, 1)
    assert page.get_by_test_id("my-game").count() == 0  # the game screen, not the lobby
    page.get_by_test_id("action-search").click()
    assert page.evaluate(OVERFLOW) <= 0, page.evaluate(WIDE)
    _shot(page, "phone-game")
    page.goto(f"{served.url}/#/replay/{finished}")
    expect(page.get_by_test_id("replay-slider")).to_be_visible()
    assert page.evaluate(OVERFLOW) <= 0, page.evaluate(WIDE)
    _shot(page, "phone-replay")
    # the lobby again, now with a held seat (Resume / Leave) on show
    page.goto(served.url + "/")
    expect(page.get_by_test_id("my-game").first).to_be_visible()
    assert page.evaluate(OVERFLOW) <= 0, page.evaluate(WIDE)
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 7. Harry's log past turn 10
def test_harrys_log_labels_each_turn_once_past_turn_ten(served: Served, browser: Browser) -> None:
    created = served.client.create_game(
        {"kind": "human"}, {"kind": "ai"}, rules="classic", seed=SEED
    )
    game_id, token = created["game_id"], created["token"]
    for loc in STANDARD.locations[:11]:
        served.client.move(game_id, token, {"type": "search", "location": loc})
        served.client.wait(game_id, token, seat="harry")
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(f"{served.url}/#/game/{game_id}")
    log = page.get_by_test_id("log")
    expect(log.locator("li")).to_have_count(11)
    texts = log.locator("li").all_inner_texts()
    assert [t.split(" Harry ", 1)[0] for t in texts] == [f"Turn {n}" for n in range(11, 0, -1)]
    assert all(t.count("Turn ") == 1 for t in texts), texts
    assert "Harry searched" in texts[0], texts[0]
    # no list number is drawn, so none can be cut; every label lies inside the panel
    assert log.evaluate("e => getComputedStyle(e).listStyleType") == "none"
    boxes = log.evaluate(
        "e => [e.getBoundingClientRect().left, "
        "Math.min(...[...e.querySelectorAll('.turn')].map(t => t.getBoundingClientRect().left))]"
    )
    assert boxes[1] >= boxes[0], boxes
    _shot(page, "log-past-turn-10")
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 8. the replay's error page
def test_the_replays_error_page_leads_back_to_the_lobby(served: Served, browser: Browser) -> None:
    running = served.client.create_game({"kind": "human"}, {"kind": "ai"}, rules="standard")
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    cases = [
        (running["game_id"], "still being played", "not_over"),
        ("no-such-game", "no such", ""),
    ]
    for game_id, says, code in cases:
        page.goto(f"{served.url}/#/replay/{game_id}")
        expect(page.get_by_test_id("replay-error")).to_contain_text(says)
        expect(page.get_by_test_id("message")).to_contain_text(f"No replay ({code or 'not_found'})")
        expect(page.get_by_text("Loading the replay")).to_have_count(0)
        if code:
            _shot(page, "replay-error")
            page.get_by_test_id("watch-instead").click()
            expect(page.get_by_test_id("spectator")).to_be_visible()
            page.go_back()
            expect(page.get_by_test_id("replay-error")).to_be_visible()
        page.get_by_test_id("back-to-lobby").click()
        expect(page.get_by_test_id("lobby")).to_be_visible()
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 9. the lobby's choices and lists
def test_named_opponents_and_lobby_lists_with_players(served: Served, browser: Browser) -> None:
    truth = engine.new_game(STANDARD, SEED)[0].horcruxes
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    level = page.get_by_test_id("voldemort-level")
    expect(level).to_be_visible()
    options = level.locator("option")
    assert options.all_text_contents() == ["Easy", "Cunning", "Devious"]
    assert level.input_value() == "reference"  # Easy: the default brain
    expect(page.get_by_test_id("voldemort-level-says")).to_contain_text("beats him 91 games")
    expect(page.get_by_test_id("voldemort-brain")).to_be_hidden()  # "any brain": advanced
    # Devious by name: the game's Voldemort is the mirror brain
    level.select_option(label="Devious")
    assert level.input_value() == "mirror"
    page.get_by_test_id("player-name").fill("Neville")
    page.get_by_test_id("seed").fill(str(SEED))
    page.get_by_test_id("new-game").click()
    expect(page.get_by_test_id("status")).to_contain_text("Voldemort: AI (Devious)")
    game_id = _game_id(page)
    token = _token(page, game_id)
    # any brain, behind the advanced control
    page.goto(served.url + "/")
    page.get_by_test_id("advanced").locator("summary").click()
    page.get_by_test_id("voldemort-brain").select_option("passive")
    page.get_by_test_id("new-game").click()
    expect(page.get_by_test_id("status")).to_contain_text("Voldemort: AI (passive)")
    # the first game played to its end (three attacks where the Horcruxes are)
    for loc in truth:
        served.client.wait(game_id, token, seat="harry")
        served.client.move(game_id, token, {"type": "attack", "location": loc})
    assert served.client.game(game_id, token)["status"] == "over"
    page.goto(served.url + "/")
    mine = page.locator("[data-testid=my-game]", has_text=game_id)
    expect(mine.get_by_test_id("my-replay")).to_be_visible()
    expect(mine.get_by_test_id("resume")).to_have_count(0)
    expect(mine).to_contain_text("finished")
    running = page.locator("[data-testid=my-game]").filter(has_not_text=game_id)
    expect(running.get_by_test_id("resume")).to_be_visible()
    for table in ("active-games", "over-games"):
        heads = page.get_by_test_id(table).locator("th").all_inner_texts()
        assert [t.lower() for t in heads[:4]] == ["game", "rules", "players", "created"], heads
    row = page.locator(f"[data-testid=over-games] [data-game='{game_id}']")
    expect(row).to_contain_text("Harry: Neville")
    _shot(page, "lobby-lists")
    mine.get_by_test_id("my-replay").click()
    expect(page.get_by_test_id("replay-slider")).to_be_visible()
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 10. a wasted attack, explained
def test_a_wasted_attack_says_what_it_can_mean(served: Served, browser: Browser) -> None:
    """Harry (the page) attacks a decoy Voldemort (the API) planted where Harry had searched,
    then a location whose Horcrux Voldemort moved after Harry's positive there: each attack
    gets one line on what it can mean, in the message and in Harry's log."""
    truth = engine.new_game(STANDARD, SEED)[0].horcruxes
    free = [loc for loc in STANDARD.locations if loc not in truth]
    created = served.client.create_game(
        {"kind": "human"}, {"kind": "human"}, rules="classic", seed=SEED
    )
    game_id, harry = created["game_id"], created["token"]
    vold = served.client.join(game_id, "voldemort")["token"]
    served.client.move(game_id, harry, {"type": "search", "location": free[0]})
    served.client.move(game_id, vold, {"type": "plant_decoy", "location": free[0]})
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    seats = {game_id: {"seat": "harry", "token": harry, "name": None}}
    page.evaluate("s => localStorage.setItem('horcrux.seats.v1', s)", json.dumps(seats))
    page.goto(f"{served.url}/#/game/{game_id}")
    _my_turn(page, 2)
    page.get_by_test_id("action-attack").click()
    page.get_by_test_id(f"loc-{free[0]}").click()
    expect(page.get_by_test_id("message")).to_contain_text("held a decoy")
    expect(page.get_by_test_id("why-wasted")).to_contain_text("held a decoy")
    # Harry searches a Horcrux's location until a positive; Voldemort then moves it away
    served.client.move(game_id, vold, {"type": "pass"})
    turn = 3
    while True:
        game = served.client.move(game_id, harry, {"type": "search", "location": truth[0]})
        outcome = game["event"]["observations"][0]["outcome"]
        if outcome == "positive":
            break
        served.client.move(game_id, vold, {"type": "pass"})
        turn += 1
    move = {"type": "relocate", "from_location": truth[0], "to_location": free[1]}
    served.client.move(game_id, vold, move)
    # the page polls every 10 s while it is its own seat's turn (nothing can change then, but
    # the test moved for it through the API): read the game again rather than wait for that
    page.reload()
    _my_turn(page, turn + 1)
    page.get_by_test_id("action-attack").click()
    page.get_by_test_id(f"loc-{truth[0]}").click()
    says = f"moved after your positive at turn {turn}"
    expect(page.get_by_test_id("message")).to_contain_text(says)
    expect(page.get_by_test_id("why-wasted").first).to_contain_text(says)
    _shot(page, "wasted-attack")
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 11. highlights and waiting
OUTLINED = """() => [...document.querySelectorAll('[data-testid=board] .tile')]
    .filter(t => getComputedStyle(t).outlineStyle !== 'none'
        || getComputedStyle(t).boxShadow !== 'none').map(t => t.dataset.loc)"""
LAST_BAR = "e => getComputedStyle(e, '::before').backgroundColor"


def test_cursor_and_last_move_are_distinct_and_a_click_out_of_turn_shows_nothing(
    served: Served, browser: Browser
) -> None:
    """Voldemort's page in a two-person game: while Harry moves it says whom it waits for;
    a tile clicked out of turn stays as it was; the keyboard cursor is the only outline, and
    the last move's tile carries a gold bar, not an outline."""
    created = served.client.create_game(
        {"kind": "human", "name": "Harriet"}, {"kind": "human"}, rules="classic", seed=SEED
    )
    game_id, harry = created["game_id"], created["token"]
    vold = served.client.join(game_id, "voldemort")["token"]
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    seats = {game_id: {"seat": "voldemort", "token": vold, "name": None}}
    page.evaluate("s => localStorage.setItem('horcrux.seats.v1', s)", json.dumps(seats))
    page.goto(f"{served.url}/#/game/{game_id}")
    to_move = page.get_by_test_id("to-move")
    expect(to_move).to_have_text("Harry to move: waiting for Harriet")
    # out of turn a tile is inert: no button, no focus, no outline, no message
    tile = page.get_by_test_id("loc-hogwarts")
    tile.click()
    assert tile.evaluate("e => e.tagName") == "DIV"
    assert tile.evaluate("e => document.activeElement === e") is False
    assert page.evaluate(OUTLINED) == []
    expect(page.get_by_test_id("message")).to_have_text("")
    served.client.move(game_id, harry, {"type": "search", "location": "hogwarts"})
    _my_turn(page, 1)
    expect(to_move).to_have_text("Voldemort to move (you)")
    # the last move's tile: a gold bar (::before), no outline, no ring
    assert page.evaluate(OUTLINED) == []
    assert tile.evaluate(LAST_BAR) == "rgb(227, 179, 65)"
    # a chosen action by click: no keyboard cursor anywhere
    page.get_by_test_id("action-plant_decoy").click()
    expect(page.get_by_test_id("hint")).to_contain_text("decoy")
    assert page.locator(".tile.cursor").count() == 0
    page.keyboard.press("Escape")
    # by the keyboard: exactly one outline, the cursor's, and the last tile keeps its bar
    page.keyboard.press("d")  # the cursor starts on the first free location
    cursor = page.locator(".tile.cursor")
    expect(cursor).to_have_count(1)
    expect(cursor).to_be_enabled()
    at = cursor.get_attribute("data-loc")
    assert page.evaluate(OUTLINED) == [at]
    assert tile.evaluate(LAST_BAR) == "rgb(227, 179, 65)"
    page.mouse.move(0, 0)
    _shot(page, "highlights")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id(f"loc-{at}")).to_contain_text("DECOY")
    expect(to_move).to_have_text("Harry to move: waiting for Harriet")
    assert page.evaluate(OUTLINED) == []
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 12. the first-game guide
def test_the_first_game_guide_is_shown_once_and_can_be_dismissed(
    served: Served, browser: Browser
) -> None:
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    page.get_by_test_id("seed").fill(str(SEED))
    page.get_by_test_id("new-game").click()
    _my_turn(page, 1)
    guide = page.get_by_test_id("guide")
    expect(guide).to_be_visible()
    # the numbers are the game's rules: the sensor, the attacks, decoys and relocations
    expect(page.get_by_test_id("guide-search")).to_contain_text("positive 80% of the time")
    expect(page.get_by_test_id("guide-search")).to_contain_text("positive 15% of the time")
    expect(page.get_by_test_id("guide-attack")).to_contain_text(f"{STANDARD.attacks} attacks")
    expect(page.get_by_test_id("guide-decoy")).to_contain_text("a decoy answers a search")
    expect(page.get_by_test_id("guide-move")).to_contain_text("after a positive")
    expect(page.get_by_test_id("guide-move")).to_contain_text(f"{STANDARD.relocations} times")
    page.mouse.move(0, 0)
    _shot(page, "first-game-guide")
    # the guide does not stand in the way: a move is played with it on show
    page.get_by_test_id("action-search").click()
    page.get_by_test_id("loc-hogwarts").click()
    _my_turn(page, 2)
    page.get_by_test_id("guide-dismiss").click()
    expect(guide).to_have_count(0)
    assert page.evaluate("localStorage.getItem('horcrux.guide.v1')")
    # remembered: the next game (and a reload) has no guide, and "Guide" brings it back
    page.reload()
    _my_turn(page, 2)
    expect(guide).to_have_count(0)
    page.goto(served.url + "/")
    page.get_by_test_id("new-game").click()
    _my_turn(page, 1)
    expect(guide).to_have_count(0)
    page.get_by_test_id("guide-open").click()
    expect(guide).to_be_visible()
    page.get_by_test_id("guide-dismiss").click()
    expect(guide).to_have_count(0)
    # a fresh browser (another person) gets it on its first game
    other = _page(_context(browser), errors)
    other.goto(served.url + "/")
    other.get_by_test_id("new-game").click()
    _my_turn(other, 1)
    expect(other.get_by_test_id("guide")).to_be_visible()
    assert errors == []
    other.context.close()
    context.close()


# ---------------------------------------------------------------- 13. AI vs AI at a pace
def _shown(page: Page) -> int:
    return int(page.get_by_test_id("pace").get_attribute("data-shown") or "-1")


def test_a_spectator_watches_ai_against_ai_at_a_pace_and_the_replay_plays(
    served: Served, browser: Browser
) -> None:
    """An AI-vs-AI game the server finished in seconds: the spectator sees it from turn 1,
    one of Harry's moves a second, with Pause, Step and Live; the replay has Play/Pause."""
    game_id = _ai_game_over(served)
    history = served.client.game(game_id)["view"]["history"]
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(f"{served.url}/#/game/{game_id}")
    expect(page.get_by_test_id("spectator")).to_be_visible()
    pace = page.get_by_test_id("pace")
    expect(pace).to_be_visible()
    # not the end at once: it starts before Harry's first move, and plays on by itself
    expect(page.get_by_test_id("end")).to_have_count(0)
    expect(pace).to_have_attribute("data-shown", re.compile(r"^[1-9]\d*$"))
    page.get_by_test_id("pace-toggle").click()
    expect(pace).to_have_attribute("data-playing", "false")
    shown = _shown(page)
    assert 0 < shown < len(history), shown
    # what is shown is the game as it stood: the log and the turn of Harry's next move
    log = page.get_by_test_id("log").locator("li")
    expect(log).to_have_count(shown)
    expect(page.get_by_test_id("status")).to_contain_text(f"Turn {history[shown]['turn']} /")
    page.get_by_test_id("pace-step").click()
    expect(pace).to_have_attribute("data-shown", str(shown + 1))
    expect(log).to_have_count(shown + 1)
    page.get_by_test_id("pace-step").click()
    expect(pace).to_have_attribute("data-shown", str(shown + 2))
    assert _shown(page) == shown + 2  # paused: nothing moved on by itself
    page.mouse.move(0, 0)
    _shot(page, "spectator-paced")
    page.get_by_test_id("pace-live").click()
    expect(page.get_by_test_id("end")).to_be_visible()
    expect(log).to_have_count(len(history))
    expect(page.get_by_test_id("pace-says")).to_contain_text("the game is over")
    # over and caught up: nothing left to pause, step or catch up with
    for control in ("pace-toggle", "pace-step", "pace-live"):
        expect(page.get_by_test_id(control)).to_be_disabled()
    expect(page.get_by_test_id("pace-toggle")).to_have_text("Play")
    # the replay: Play steps on by itself, Pause holds it
    page.get_by_test_id("open-replay").click()
    step = page.get_by_test_id("replay-step")
    expect(step).to_be_visible()
    page.get_by_test_id("replay-slider").focus()
    page.keyboard.press("Home")
    expect(step).to_contain_text("Step 0 /")
    play = page.get_by_test_id("replay-play")
    play.click()
    expect(play).to_have_text("Pause")
    expect(step).to_contain_text("Step 2 /")
    play.click()
    expect(play).to_have_text("Play")
    held = step.inner_text()
    page.get_by_test_id("replay-slider").focus()
    page.keyboard.press("ArrowRight")
    expect(step).not_to_have_text(held)
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 14. the replay's belief
def test_the_replays_belief_at_each_step_is_the_apis_for_that_turn(
    served: Served, browser: Browser
) -> None:
    """At several steps of an AI-vs-AI game's replay (the start, Harry's and Voldemort's
    steps in the middle, the last step) the belief map shown is `GET /games/{id}/belief?
    turn=N` (N: one past Harry's last move by then), and it adds up to the Horcruxes left."""
    game_id = _ai_game_over(served)
    _, _, replay = get_json(f"{served.url}/games/{game_id}/replay")
    steps = replay["replay"]["steps"]
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(f"{served.url}/#/replay/{game_id}")
    board = page.get_by_test_id("replay-belief")
    expect(board).to_be_visible()
    last = len(steps) - 1
    middle = [i for i in range(1, last) if steps[i]["actor"] == "harry"][len(steps) // 4]
    for i in (last, 0, middle, middle + 1, last - 1):
        page.get_by_test_id("replay-slider").evaluate(
            "(e, v) => { e.value = String(v); e.dispatchEvent(new Event('input')); }", i
        )
        expect(page.get_by_test_id("replay-step")).to_contain_text(f"Step {i} /")
        harry_turns = [s["turn"] for s in steps[1 : i + 1] if s["actor"] == "harry"]
        n = harry_turns[-1] + 1 if harry_turns else 1
        expect(board).to_have_attribute("data-turn", str(n))
        expect(board).to_have_attribute("data-source", "api")
        code, _, belief = get_json(f"{served.url}/games/{game_id}/belief?turn={n}")
        assert code == 200 and belief["turn"] == n
        left = len(steps[i]["horcruxes"])
        assert math.isclose(sum(belief["occupancy"].values()), left, abs_tol=0.01), (i, belief)
        for loc, p in belief["occupancy"].items():
            tile = page.get_by_test_id(f"replay-belief-{loc}").locator(".p")
            expect(tile).to_have_text(f"{math.floor(p * 100 + 0.5)}%")  # JS Math.round
        expect(page.get_by_test_id("replay-belief-says")).to_contain_text(
            f"Horcruxes left ({left})"
        )
    page.mouse.move(0, 0)
    _shot(page, "replay-belief")
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 15. a private game's invite
def test_a_private_game_invites_by_a_link_with_the_code_in_its_fragment(
    served: Served, browser: Browser
) -> None:
    errors: list[str] = []
    host_ctx, guest_ctx = _context(browser), _context(browser)
    host, guest = _page(host_ctx, errors), _page(guest_ctx, errors)
    host.goto(served.url + "/")
    expect(host.get_by_test_id("private")).to_be_hidden()  # against the AI: nothing to invite
    host.get_by_test_id("opponent").select_option("human")
    host.get_by_test_id("private").check()
    host.get_by_test_id("player-name").fill("Hermia")
    with host.expect_request(lambda r: r.method == "POST" and r.url.endswith("/games")) as sent:
        host.get_by_test_id("new-game").click()
    assert json.loads(sent.value.post_data or "{}")["private"] is True
    game_id = _game_id(host)
    code = json.loads(host.evaluate("localStorage.getItem('horcrux.seats.v1')"))[game_id]["invite"]
    link = host.get_by_test_id("invite-link").input_value()
    # the code is in the fragment only: nothing after a '?', nothing before the '#'
    assert link == f"{served.url}/#/invite/{game_id}/{code}", link
    assert "?" not in link and code not in link.split("#", 1)[0]
    host.get_by_test_id("copy-invite").click()
    expect(host.get_by_test_id("message")).to_contain_text("link")
    _shot(host, "private-invite")
    listed = [
        g["game_id"]
        for status in ("open", "active")
        for g in served.client.request("GET", "/games", query={"status": status})["games"]
    ]
    assert game_id not in listed  # private: never in the lobby
    # the guest opens the link: invited by name, joins as Voldemort under their own name
    requests: list[str] = []
    guest.on("request", lambda r: requests.append(r.url))
    guest.goto(link)
    expect(guest.get_by_test_id("invited")).to_contain_text("Hermia invites you")
    guest.get_by_test_id("player-name").fill("Ron")
    guest.get_by_test_id("accept-invite").click()
    expect(guest.get_by_test_id("seat-voldemort")).to_be_visible()
    assert code not in guest.url  # replaced: the code leaves the address bar
    # the page loads never carried it; only the API's join did, as the API asks
    page_loads = [u for u in requests if "/games/" not in u]
    assert page_loads and all(code not in u for u in page_loads), page_loads
    joins = [u for u in requests if "/seats/" in u]
    assert len(joins) == 1 and joins[0].endswith(f"/seats/voldemort?invite={code}")
    expect(host.get_by_test_id("status")).to_contain_text("Voldemort: Ron")
    expect(host.get_by_test_id("invite")).to_have_count(0)
    expect(host.get_by_test_id("to-move")).to_contain_text("Harry to move (you)")
    assert served.client.free_seats(game_id) == []
    assert errors == []
    host_ctx.close()
    guest_ctx.close()


# ---------------------------------------------------------------- 16. both seats in players' words
EVALUATION = json.loads((ROOT / "docs" / "evaluation.json").read_text())["results"]
JARGON = ("GET ", "/brains", ":MODE", r"\bbits\b")  # regexes ("habits" is no jargon)
TO_HARRY = re.compile(
    r"\byour (search|searches|positive|evidence|attacks?)\b|\bstrike\b|you attack", re.I
)
SEEN_TEXT = """() => [document.body.innerText,
    ...[...document.querySelectorAll('[title]')].map(e => e.getAttribute('title'))].join('\\n')"""


def _no_jargon(page: Page, where: str) -> str:
    """Every text a player can see on the page (its text and tooltips): none of JARGON."""
    text: str = page.evaluate(SEEN_TEXT)
    found = [j for j in JARGON if re.search(j, text)]
    assert not found, (where, found, text[:3000])
    return text


def _voldemort_game_with_an_empty_attack(served: Served) -> tuple[str, str, int]:
    """A person's Voldemort (the API) against the Cunning AI Harry: each Horcrux Harry gets a
    positive at is moved away at once, until Harry attacks a location left empty. The game,
    the seat token and the turn of that attack."""
    created = served.client.create_game(
        {"kind": "ai", "brain": "naive"}, {"kind": "human"}, rules="classic", seed=SEED
    )
    game_id, token = created["game_id"], created["token"]
    while True:
        game = served.client.wait(game_id, token, seat="voldemort")
        view = game["view"]
        empty = [
            r["turn"]
            for r in view["history"]
            for o in r["observations"]
            if o["kind"] == "attack" and o["outcome"] == "empty"
        ]
        if empty:
            return game_id, token, empty[0]
        assert game["status"] == "active", "the game ended before Harry attacked an empty place"
        last = view["history"][-1]
        hit = [
            o["location"]
            for o in last["observations"]
            if o["kind"] == "search"
            and o["outcome"] == "positive"
            and o["location"] in view["horcrux_locations"]
        ]
        taken = set(view["horcrux_locations"]) | set(view["decoy_locations"])
        free = [loc for loc in view["rules"]["locations"] if loc not in taken]
        move: dict[str, Any] = {"type": "pass"}
        if hit and view["relocations_left"] > 0:
            move = {"type": "relocate", "from_location": hit[0], "to_location": free[-1]}
        served.client.move(game_id, token, move)


def test_voldemorts_seat_speaks_to_voldemort_and_no_screen_shows_jargon(
    served: Served, browser: Browser
) -> None:
    """Issue 43's acceptance: on a Voldemort game with an AI Harry that attacked an empty
    location, Voldemort's guide and log never address Harry; the lobby (its advanced list
    open), the seat and a replay show no API path, mode syntax or bits."""
    game_id, token, turn = _voldemort_game_with_an_empty_attack(served)
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    expect(page.get_by_test_id("lobby")).to_be_visible()
    page.get_by_test_id("my-seat").select_option("voldemort")
    page.get_by_test_id("advanced").locator("summary").click()
    expect(page.get_by_test_id("harry-brain-says")).to_contain_text("AI Harry")
    page.get_by_test_id("harry-brain").select_option("planner-window")
    expect(page.get_by_test_id("harry-brain-says")).to_contain_text("short memory")
    _no_jargon(page, "lobby")
    page.mouse.move(0, 0)
    _shot(page, "words-lobby-advanced")
    seats = {game_id: {"seat": "voldemort", "token": token, "name": None}}
    page.evaluate("s => localStorage.setItem('horcrux.seats.v1', s)", json.dumps(seats))
    page.goto(f"{served.url}/#/game/{game_id}")
    expect(page.get_by_test_id("seat-voldemort")).to_be_visible()
    guide = page.get_by_test_id("guide")
    expect(guide).to_have_attribute("data-seat", "voldemort")
    expect(guide).to_contain_text("Harry searches one location a turn")
    why = page.get_by_test_id("why-wasted").last
    expect(why).to_contain_text("Harry found nothing at")
    for said in [guide.inner_text(), *page.get_by_test_id("log").locator("li").all_inner_texts()]:
        assert not TO_HARRY.search(said), said
    expect(page.get_by_test_id("status")).to_contain_text("Harry: AI (Cunning)")
    assert f"Turn {turn}" in page.get_by_test_id("log").inner_text()
    _no_jargon(page, "Voldemort's seat")
    page.mouse.move(0, 0)
    _shot(page, "words-voldemort-seat")
    # a replay: the turns run 1-50 and the belief is in words
    finished = _ai_game_over(served)
    page.goto(f"{served.url}/#/replay/{finished}")
    expect(page.get_by_test_id("replay-belief")).to_have_attribute("data-source", "api")
    page.get_by_test_id("replay-slider").focus()
    page.keyboard.press("End")
    step = page.get_by_test_id("replay-step").inner_text()
    shown = [int(t) for t in re.findall(r"turn (\d+) of 50", step)]
    assert shown and 1 <= shown[0] <= 50, step
    expect(page.get_by_test_id("replay-belief-says")).to_contain_text("uncertainty")
    _no_jargon(page, "replay")
    _shot(page, "words-replay")
    assert errors == []
    context.close()


def test_the_levels_are_in_the_order_of_the_published_win_rates(
    served: Served, browser: Browser
) -> None:
    """Both seats' AI levels, as the page offers them: weakest first by the committed
    figures (an AI Voldemort the more the default AI Harry beats it, an AI Harry the less it
    beats the reference Voldemort), each saying its figure."""
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    for seat, mine in (("voldemort", "harry"), ("harry", "voldemort")):
        page.get_by_test_id("my-seat").select_option(mine)
        level = page.get_by_test_id(f"{seat}-level")
        expect(level).to_be_visible()
        options = level.locator("option")
        labels = options.all_text_contents()
        brains = [options.nth(i).get_attribute("value") or "" for i in range(options.count())]
        if seat == "voldemort":
            rates = [EVALUATION[b]["planner"]["win_rate"] for b in brains]
            assert rates == sorted(rates, reverse=True), (labels, brains, rates)
        else:
            rates = [EVALUATION["reference"][b]["win_rate"] for b in brains]
            assert rates == sorted(rates), (labels, brains, rates)
        assert labels == ["Easy", "Cunning", "Devious"] and len(set(rates)) == 3
        for brain, rate in zip(brains, rates, strict=True):
            level.select_option(brain)
            expect(page.get_by_test_id(f"{seat}-level-says")).to_contain_text(
                f"{round(rate * 100)} game"
            )
    # with Private ticked, the other person is invited, not found in the lobby
    page.get_by_test_id("my-seat").select_option("harry")
    page.get_by_test_id("opponent").select_option("human")
    page.get_by_test_id("private").check()
    expect(page.get_by_test_id("opponent").locator("option").nth(1)).to_have_text(
        "another person (you send them an invite link)"
    )
    page.mouse.move(0, 0)
    _shot(page, "words-private")
    assert errors == []
    context.close()


def test_what_the_ai_remembers_is_shown_and_forgotten_after_a_confirmation(
    served: Served, browser: Browser
) -> None:
    """The browser's player plays Voldemort against the Devious AI Harry (the planner, which
    remembers its opponents) to the end; the lobby's panel then shows what the AI learned,
    and Forget, once confirmed, erases it (the API says the same with the player key)."""
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    expect(page.get_by_test_id("memory-none")).to_be_visible()  # no key yet: nothing
    page.get_by_test_id("my-seat").select_option("voldemort")
    page.get_by_test_id("harry-level").select_option(label="Devious")
    page.get_by_test_id("seed").fill(str(SEED))
    page.get_by_test_id("new-game").click()
    expect(page.get_by_test_id("seat-voldemort")).to_be_visible()
    game_id = _game_id(page)
    token = _token(page, game_id)
    key = page.evaluate("localStorage.getItem('horcrux.player_key')")
    while True:  # Voldemort passes to the end: the planner finds every Horcrux
        game = served.client.wait(game_id, token, seat="voldemort")
        if game["status"] == "over":
            break
        served.client.move(game_id, token, {"type": "pass"})
    mine = f"{served.url}/players/me/memory"
    with_key = {"authorization": f"Bearer {key}"}
    deadline = time.monotonic() + UI_MS / 1000
    while True:  # the end-of-game record is written after the game's last event
        code, _, seen = request_json("GET", mine, headers=with_key)
        assert code == 200, seen
        if any(s["items"] for s in seen["scopes"]):
            break
        assert time.monotonic() < deadline, "the AI's memory of the player never appeared"
        time.sleep(0.2)  # polling the server's asynchronous record, not a stand-in for it
    # the seat's page sees the end (and marks the game over: the lobby need not redraw); it
    # looks for changes every 10 s on its own turn, and the moves came through the API
    page.reload()
    expect(page.get_by_test_id("end")).to_be_visible()
    page.goto(served.url + "/")
    expect(page.get_by_test_id("my-replay")).to_be_visible()
    panel = page.get_by_test_id("my-memory")
    expect(panel.get_by_test_id("memory-items").first).to_be_visible()
    expect(panel).to_contain_text("after 1 game against you")
    assert not re.search(r"player:[0-9a-f]{16}", panel.inner_text())
    _shot(page, "words-memory")
    page.get_by_test_id("forget-me").click()
    expect(page.get_by_test_id("forget-me-question")).to_contain_text("Forget all of this?")
    _shot(page, "words-forget-confirm")
    page.get_by_test_id("forget-me-confirm").click()
    expect(page.get_by_test_id("memory-said")).to_contain_text("Forgotten")
    expect(panel.get_by_test_id("memory-items")).to_have_count(0)
    code, _, after = request_json("GET", mine, headers=with_key)
    assert code == 200 and not any(s["items"] for s in after["scopes"])
    _shot(page, "words-forgotten")
    assert errors == []
    context.close()


# ---------------------------------------------------------------- 17. an abandoned game
def _age(served: Served, game_id: str, idle_s: int) -> None:
    """Make the game's last move `idle_s` old, as if the clock had moved on: its heartbeat
    set back through a store on the server's own database (the server's clock is the
    wall's; the test never sleeps for 35 minutes)."""
    import boto3

    from horcrux.settings import StoreSettings
    from horcrux.store import DynamoDbStore

    endpoint = served.server.dynamodb
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="eu-west-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    settings = StoreSettings(
        events_table="horcrux-events",
        games_table="horcrux-games",
        endpoint_url=endpoint,
        region="eu-west-1",
    )
    store = DynamoDbStore(settings, client=client)
    snap = store.load(game_id)
    aged = snap.model_copy(
        update={"active_at": int(time.time()) - idle_s, "version": snap.version + 1}
    )
    store.repair_snapshot(snap.version, aged)


def test_an_abandoned_game_leaves_being_played_and_a_move_brings_it_back(
    served: Served, browser: Browser
) -> None:
    """Two games of two people: one goes on, nobody moves in the other for 40 minutes. The
    lobby's "Being played" lists only the first and says the rule; the left game's page
    says so to a spectator and to the seat to move (which may still play); that seat's
    move makes it active again and back in the lobby."""
    people = ({"kind": "human"}, {"kind": "human"})
    games = []
    for _ in range(2):
        made = served.client.create_game(*people, rules="standard", seed=SEED)
        joined = served.client.join(made["game_id"], "voldemort")
        served.client.move(
            made["game_id"], made["token"], {"type": "search", "location": "hogwarts"}
        )
        games.append((made["game_id"], joined["token"]))
    (left, left_token), (played, _) = games
    _age(served, left, 40 * 60)
    assert served.client.game(left)["status"] == "abandoned"
    assert served.client.game(played)["status"] == "active"
    errors: list[str] = []
    context = _context(browser)
    page = _page(context, errors)
    page.goto(served.url + "/")
    active = page.get_by_test_id("active-games")
    expect(active.locator(f"[data-game='{played}']")).to_be_visible()
    expect(active.locator(f"[data-game='{left}']")).to_have_count(0)
    expect(page.get_by_test_id("left-rule")).to_have_text(
        "A game nobody has moved in for 30 minutes leaves this list; "
        "it is back when one of its players moves."
    )
    page.mouse.move(0, 0)
    _shot(page, "abandoned")
    # a spectator of the left game is told why it is not listed
    page.goto(served.url + f"/#/game/{left}")
    expect(page.get_by_test_id("left-note")).to_contain_text(
        "the players seem to have left this game"
    )
    expect(page.get_by_test_id("left")).to_have_text("left: nobody has moved for 30 minutes")
    # the seat to move (Voldemort) may still play it: its controls are there
    seats = {left: {"seat": "voldemort", "token": left_token, "name": ""}}
    page.evaluate(f"localStorage.setItem('horcrux.seats.v1', {json.dumps(json.dumps(seats))})")
    page.goto(served.url + "/#/")
    page.goto(served.url + f"/#/game/{left}")
    expect(page.get_by_test_id("left-note")).to_contain_text("It is still yours: make your move")
    expect(page.get_by_test_id("actions")).to_be_visible()
    _shot(page, "abandoned-seat")
    served.client.move(left, left_token, {"type": "pass"})
    assert served.client.game(left)["status"] == "active"
    page.goto(served.url + "/")  # the lobby polls; the server's copy of a page lives 1 s
    back = page.get_by_test_id("active-games").locator(f"[data-game='{left}']")
    expect(back).to_be_visible(timeout=UI_MS)
    assert errors == []
    context.close()
