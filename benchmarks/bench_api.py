"""The handlers per turn, locally and without an LLM: latency (p50, p99) and capacity units.

Against moto in process (no network), the Lambda handlers exactly as deployed:
`lambdas/api/handler.py` fed API Gateway v2 events built by the local adapter
(`horcrux_tools.local.server.api_gateway_event`), and `lambdas/ai_turn/handler.py` (once per
seat, `HORCRUX_SEAT` set as the stack sets it) fed the stream record of the event that
asks for the AI's turn.

* Games A: a person as Harry (searches round the board, never attacks: 50 turns) through
  `POST /games/{id}/moves`, against AI Voldemort `reference` (the Voldemort turn Lambda).
* Games B: AI Harry `planner` (the Harry turn Lambda, its belief restored from and saved to
  the snapshot) against a person as Voldemort playing the reference strategy through the
  API with an `Idempotency-Key`; seeds whose game lasts all 50 turns.

Capacity units are DynamoDB's formulas over the item sizes (a `CallRecorder` on each
handler's store, which records nothing unless given one: moto reports a fixed 0.5 for
GetItem and nothing for transactions), per handler call, turn 1
beside turn 50 (Voldemort's last move is on turn 49: the game ends after Harry's turn 50).
The idempotency table's PutItem + UpdateItem (Powertools) are not in these figures.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time
from collections import Counter, defaultdict
from types import ModuleType
from typing import Any

for _name, _value in {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "HORCRUX_EVENTS_TABLE": "bench-events",
    "HORCRUX_GAMES_TABLE": "bench-games",
    "HORCRUX_IDEMPOTENCY_TABLE": "bench-idempotency",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}.items():
    os.environ[_name] = _value
for _name in ("AWS_PROFILE", "HORCRUX_DYNAMODB_ENDPOINT", "AWS_ENDPOINT_URL_DYNAMODB"):
    os.environ.pop(_name, None)

from aws_lambda_powertools.metrics import Metrics  # noqa: E402
from moto import mock_aws  # noqa: E402

from horcrux import rng  # noqa: E402
from horcrux.agents import VOLDEMORT_BRAINS  # noqa: E402
from horcrux.rules import PRESETS  # noqa: E402
from horcrux.service import TurnRequest  # noqa: E402
from horcrux.store import DynamoDbStore  # noqa: E402
from horcrux.views import VoldemortView  # noqa: E402
from horcrux_tools import sim  # noqa: E402
from horcrux_tools.local.calls import CallRecorder  # noqa: E402
from horcrux_tools.local.moto_server import create_tables  # noqa: E402
from horcrux_tools.local.server import FakeLambdaContext, api_gateway_event, stream_record  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
GAMES = 3
_METRICS = Metrics()  # shares its metric set with the handlers' Metrics
P99_BUDGET_MS = 100.0


def load(name: str, seat: str | None = None) -> ModuleType:
    """lambdas/<name>/handler.py, imported with HORCRUX_SEAT=`seat` if given."""
    path = ROOT / "lambdas" / name / "handler.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}_{seat}_handler", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if seat is not None:
        os.environ["HORCRUX_SEAT"] = seat
    try:
        spec.loader.exec_module(module)
    finally:
        os.environ.pop("HORCRUX_SEAT", None)
    return module


class Bench:
    def __init__(self) -> None:
        self.api = load("api")
        self.turn = {"harry": load("ai_turn", "harry"), "voldemort": load("ai_turn", "voldemort")}
        self.stores: dict[str, DynamoDbStore] = {
            "api": self.api.store,
            "harry": self.turn["harry"].service.store,
            "voldemort": self.turn["voldemort"].service.store,
        }
        self.recorders = {name: CallRecorder() for name in self.stores}
        for name, store in self.stores.items():  # opt-in: the handlers' stores record nothing
            store.recorder = self.recorders[name]
        self.ms: dict[str, list[float]] = defaultdict(list)
        # (handler, turn) -> list of (reads RCU, writes WCU, ops, bytes read + written)
        self.memory_reads: list[tuple[int, int, float]] = []  # (turn, GetItems, RCU)
        self.units: dict[tuple[str, int], list[tuple[float, float, str, int]]] = defaultdict(list)

    # ------------------------------------------------------------ calls
    def call(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        data = json.dumps(body).encode() if body is not None else b""
        if body is not None:
            headers["content-type"] = "application/json"
        event = api_gateway_event(method, path, list(headers.items()), data)
        response = self.api.lambda_handler(event, FakeLambdaContext(function_name="api"))
        payload = json.loads(response["body"])
        if response["statusCode"] >= 400:
            raise RuntimeError(f"{method} {path}: {response['statusCode']} {payload}")
        return payload

    def measured(self, label: str, store: str, turn: int, run: Any) -> Any:
        calls = len(self.recorders[store].calls)
        start = time.perf_counter()
        result = run()
        self.ms[label].append((time.perf_counter() - start) * 1000)
        _METRICS.clear_metrics()  # Powertools keeps disabled metrics; drop them per call
        every = self.recorders[store].calls[calls:]
        # an AI Harry's first turn also reads its cross-game memory once (docs/ECHO.md):
        # counted apart, so that the per-turn hot path is compared like for like
        memory = [c for c in every if c.target.endswith(("#MEMORY", "#RESULTS"))]
        if memory:
            self.memory_reads.append((turn, len(memory), sum(c.read_units for c in memory)))
        made = [c for c in every if c not in memory]
        ops = "+".join(c.op for c in made)
        reads = sum(c.read_units for c in made)
        writes = sum(c.write_units for c in made)
        size = sum(c.item_bytes for c in made)
        self.units[(label, turn)].append((reads, writes, ops, size))
        return result

    def move(
        self, label: str, game_id: str, token: str, turn: int, action: Any, key: str = ""
    ) -> Any:
        headers = {"authorization": f"Bearer {token}"}
        if key:
            headers["idempotency-key"] = key
        return self.measured(
            label,
            "api",
            turn,
            lambda: self.call("POST", f"/games/{game_id}/moves", action, **headers),
        )

    def ai_turn(self, game: dict[str, Any]) -> None:
        seat = game["to_move"]
        request = TurnRequest(game_id=game["game_id"], seq=game["version"], seat=seat)
        record = stream_record(request)
        handler = self.turn[seat]
        label = f"AI turn ({seat}, {game['seats'][seat]['brain']})"

        def run() -> Any:
            context = FakeLambdaContext(function_name=f"{seat}-turn")
            response = handler.lambda_handler({"Records": [record]}, context)
            assert response == {"batchItemFailures": []}, response
            return response

        self.measured(label, seat, game["turn"], run)

    # ------------------------------------------------------------ games
    def person_harry(self, seed: int) -> int:
        created = self.call(
            "POST",
            "/games",
            {
                "seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}},
                "rules": "standard",
                "seed": seed,
            },
        )
        gid, token = created["game_id"], created["token"]
        game = created["game"]
        locations = game["view"]["rules"]["locations"]
        while game["status"] != "over":
            turn = game["turn"]
            action = {"type": "search", "location": locations[(turn + seed) % len(locations)]}
            game = self.move("API POST move (Harry)", gid, token, turn, action)["game"]
            if game["status"] != "over":
                self.ai_turn(game)
                game = self.call("GET", f"/games/{gid}", authorization=f"Bearer {token}")
        return int(game["turn"])

    def person_voldemort(self, seed: int) -> int:
        created = self.call(
            "POST",
            "/games",
            {
                "seats": {
                    "harry": {"kind": "ai", "brain": "planner"},
                    "voldemort": {"kind": "human"},
                },
                "rules": "standard",
                "seed": seed,
            },
        )
        gid, token = created["game_id"], created["token"]
        auth = f"Bearer {token}"
        game = created["game"]
        rules = PRESETS["standard"]
        reference = VOLDEMORT_BRAINS.create("reference", rules)
        while True:
            self.ai_turn(game)
            game = self.call("GET", f"/games/{gid}", authorization=auth)
            if game["status"] == "over":
                return int(game["turn"])
            view = VoldemortView.model_validate(game["view"])
            move = reference.decide(view, rng.stream(seed, "voldemort", view.turn))
            action = move.model_dump(mode="json")
            key = f"{gid}-{view.turn}"
            label = "API POST move (Voldemort, Idempotency-Key)"
            game = self.move(label, gid, token, view.turn, action, key)["game"]


def fresh_tables(play: Any, seed: int) -> int:
    """One game on fresh moto tables: moto deep-copies every table a transaction touches
    (stream records included), so its latency grows with what the tables hold; DynamoDB's
    does not."""
    with mock_aws():
        create_tables()
        gc.collect()
        gc.freeze()  # what init leaves behind is never collected again (module state)
        turns: int = play(seed)
        return turns


def long_seeds(n: int) -> list[int]:
    """Seeds whose planner-vs-reference game (standard rules) lasts all 50 turns."""
    seeds: list[int] = []
    seed = 0
    while len(seeds) < n:
        if sim.play_game(PRESETS["standard"], seed, "planner", "reference").turns == 50:
            seeds.append(seed)
        seed += 1
    return seeds


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    seeds_b = long_seeds(GAMES)
    bench = Bench()
    turns_a = [fresh_tables(bench.person_harry, seed) for seed in range(GAMES)]
    turns_b = [fresh_tables(bench.person_voldemort, seed) for seed in seeds_b]
    print(
        f"{GAMES} games person Harry vs AI reference (turns {turns_a}), {GAMES} games AI planner"
        f" vs person Voldemort (seeds {seeds_b}, turns {turns_b}); moto in process, no LLM"
    )
    print()
    header = f"{'handler, per turn':<46} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for label, values in bench.ms.items():
        p99 = pct(values, 0.99)
        worst = max(worst, p99)
        print(
            f"{label:<46} {len(values):>4} {statistics.median(values):>8.1f} {p99:>8.1f}"
            f" {max(values):>8.1f}"
        )
    print()
    header = (
        f"{'capacity per handler call (bytes read+written)':<52} {'turn 1':>28} {'turn 50':>28}"
    )
    print(header)
    print("-" * len(header))
    equal = True
    for label in bench.ms:
        cells = []
        units: list[tuple[float, float]] = []
        for turn in (1, 50 if "Voldemort" not in label and "voldemort" not in label else 49):
            rows = bench.units.get((label, turn), [])
            if not rows:
                cells.append("-")
                continue
            reads = max(r[0] for r in rows)
            writes = max(r[1] for r in rows)
            size = max(r[3] for r in rows)
            cells.append(f"{reads:g} RCU + {writes:g} WCU ({size:,} B)")
            units.append((reads, writes))
        if len(units) != 2 or units[0] != units[1]:  # the bytes may differ, not the units
            equal = False
        tag = " (turn 49)" if "oldemort" in label else ""
        print(f"{label + tag:<52} {cells[0]:>28} {cells[1]:>28}")
    ops = Counter(r[2] for rows in bench.units.values() for r in rows)
    print()
    print("store calls per handler call: " + ", ".join(f"{op} x{n}" for op, n in ops.items()))
    for (turn, count, units), games in sorted(Counter(bench.memory_reads).items()):
        print(
            f"plus, once per game at an AI Harry's turn {turn} ({games} games): its cross-game"
            f" memory, {count} GetItem ({units:g} RCU)"
        )
    print(
        f"p99 budget {P99_BUDGET_MS:.0f} ms: {'met' if worst <= P99_BUDGET_MS else 'MISSED'}"
        f" (worst p99 {worst:.1f} ms); units at turn 1 == turn 50: {'yes' if equal else 'NO'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
