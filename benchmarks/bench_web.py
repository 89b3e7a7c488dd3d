"""The web page against a real `horcrux serve`, in Debian's headless Chromium: how fast a move's
result appears, and what the first load costs, beside the targets (100 ms, 200 KB).

One game as Harry against the AI Voldemort (`reference`), played through the page by the
keyboard (`s`, the arrows, `Enter`): only searches, so it lasts `MOVES` turns. Per move,
side by side:

* click to result painted: the page's own figure (`window.horcruxMetrics.moves`: from the
  key press to the frame after the result is rendered);
* the server's share: the same `POST /games/{id}/moves` (with `If-Match` and an
  `Idempotency-Key`, as the page sends it) timed from Python on a second game.

The first move of a fresh server imports the idempotency layer: it is reported apart.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from horcrux.rules import CLASSIC
from horcrux_tools.local.client import HorcruxClient
from horcrux_tools.local.harness import ServeProcess

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
MOVES = 24
TARGET_MS = 100.0
FIRST_LOAD_BUDGET = 200 * 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_moves(client: HorcruxClient, n: int) -> list[float]:
    created = client.create_game({"kind": "human"}, {"kind": "ai", "brain": "reference"})
    game_id, token = created["game_id"], created["token"]
    out: list[float] = []
    for turn in range(n):
        deadline = time.monotonic() + 10
        game = client.game(game_id, token)
        while game["to_move"] != "harry":  # the AI's reply: bounded polling
            if time.monotonic() > deadline:
                raise SystemExit("the AI Voldemort never answered")
            time.sleep(0.005)
            game = client.game(game_id, token)
        loc = CLASSIC.locations[turn % len(CLASSIC.locations)]
        start = time.perf_counter()
        client.move(
            game_id,
            token,
            {"type": "search", "location": loc},
            idempotency_key="auto",
            version=game["version"],
        )
        out.append((time.perf_counter() - start) * 1000)
    return out


def wait_for_moves(page: Page, n: int, timeout_s: float = 15.0) -> None:
    """Until the page has timed `n` moves (its CSP forbids Playwright's string predicates)."""
    deadline = time.monotonic() + timeout_s
    while page.evaluate("window.horcruxMetrics.moves.length") < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"the page never showed move {n}'s result")
        time.sleep(0.002)


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"bench_web: {CHROMIUM} is missing (apt-get install chromium); skipped")
        return 0
    from playwright.sync_api import expect, sync_playwright

    with ServeProcess() as served, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
        page.goto(served.url + "/")
        page.wait_for_load_state("networkidle")
        first_load = page.evaluate(
            """() => {
                const nav = performance.getEntriesByType('navigation')[0];
                const res = performance.getEntriesByType('resource');
                return nav.transferSize + res.reduce((a, r) => a + r.transferSize, 0);
            }"""
        )
        page.get_by_test_id("new-game").click()
        for turn in range(1, MOVES + 1):
            expect(page.get_by_test_id("status")).to_contain_text(f"Turn {turn} /")
            expect(page.get_by_test_id("actions")).to_be_visible()
            page.keyboard.press("s")
            page.keyboard.press("ArrowRight")
            page.keyboard.press("Enter")
            wait_for_moves(page, turn)
        page_ms: list[float] = page.evaluate("window.horcruxMetrics.moves")
        browser.close()
        server_ms = server_moves(HorcruxClient(served.url, timeout_s=20), MOVES)
    first, rest = page_ms[0], page_ms[1:]
    print(f"bench_web: one game through the page, {MOVES} moves (searches), and the same")
    print("  POST from Python on a second game (the server's share)")
    print(f"  first load: {first_load:,} bytes (budget {FIRST_LOAD_BUDGET:,})")
    print(f"  {'ms':34}{'median':>10}{'p90':>10}{'max':>10}")
    for label, values in (
        (f"click to result, moves 2-{MOVES}", rest),
        (f"server POST, moves 2-{MOVES}", server_ms[1:]),
    ):
        row = f"  {label:34}{statistics.median(values):10.1f}"
        print(row + f"{pct(values, 0.9):10.1f}{max(values):10.1f}")
    print(f"  first move (the server's first import): page {first:.1f}, server {server_ms[0]:.1f}")
    median = statistics.median(rest)
    verdict = "within" if median <= TARGET_MS else "OVER"
    print(f"  click to result median {median:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
