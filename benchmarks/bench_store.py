"""The store's hot path: round trips, capacity units and latency per move, turn 1 vs turn 50.

Plays planner-vs-reference games (classic rules) that last all 50 turns through
`DynamoDbStore` against moto in process (no network), as the AI-turn Lambdas do: Harry's
planner is rebuilt from his view each turn (no blob is stored) and the belief point it
acted on goes into the event of its move (the snapshot keeps only the latest). Capacity
units are estimated from the item sizes with DynamoDB's formulas (moto reports a fixed 0.5
for GetItem and nothing for transactions); latency is one move's `load` + `commit_turn`,
codec included, against moto in process.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import Counter
from typing import Any

for _name, _value in {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("HORCRUX_DYNAMODB_ENDPOINT", None)

from moto import mock_aws  # noqa: E402

from horcrux import engine, rng  # noqa: E402
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS  # noqa: E402
from horcrux.models import Seat  # noqa: E402
from horcrux.rules import CLASSIC  # noqa: E402
from horcrux.store import DynamoDbStore, MemoryStore, SeatInfo  # noqa: E402
from horcrux.store.capacity import item_size  # noqa: E402
from horcrux.store.port import BeliefPoint, GameStore  # noqa: E402
from horcrux.views import harry_view, voldemort_view  # noqa: E402
from horcrux_tools import sim  # noqa: E402
from horcrux_tools.local.calls import CallRecorder  # noqa: E402
from horcrux_tools.local.tables import create_tables  # noqa: E402
from horcrux_tools.selfplay import start_game  # noqa: E402

SEATS: dict[Seat, SeatInfo] = {
    "harry": SeatInfo(kind="ai", brain="planner"),
    "voldemort": SeatInfo(kind="ai", brain="reference"),
}


def long_seeds(n: int) -> list[int]:
    """The first n seeds whose planner-vs-reference game lasts all 50 turns."""
    seeds: list[int] = []
    seed = 0
    while len(seeds) < n:
        if sim.play_game(CLASSIC, seed, "planner", "reference").turns == 50:
            seeds.append(seed)
        seed += 1
    return seeds


def play(
    store: GameStore, game_id: str, seed: int, recorder: CallRecorder | None = None
) -> list[dict[str, Any]]:
    """Play one game move by move; per move: turn, seat, latency and the calls `recorder`
    (the DynamoDB store's) saw."""
    recorded = recorder.calls if recorder is not None else []
    start_game(store, game_id, CLASSIC, seed, dict(SEATS))
    voldemort = VOLDEMORT_BRAINS.create("reference", CLASSIC)
    moves: list[dict[str, Any]] = []
    while True:
        calls_before = len(recorded)
        ops_before = Counter(getattr(store, "op_counts", {}))
        t0 = time.perf_counter()
        before = store.load(game_id)
        t1 = time.perf_counter()
        if before.state.over:
            break
        seat = before.state.phase
        if seat == "harry":  # as `play_ai_turn`: a fresh planner synced to the view
            harry: Any = HARRY_BRAINS.create("planner", CLASSIC)
            action: Any = harry.decide(
                harry_view(before.state), rng.stream(seed, "harry", before.turn)
            )
        else:
            action = voldemort.decide(
                voldemort_view(before.state), rng.stream(seed, "voldemort", before.turn)
            )
        state, event = engine.apply(before.state, action)
        if seat == "harry":
            belief = harry.belief
            point = BeliefPoint(
                turn=before.turn,
                entropy=float(belief.entropy()),
                top=tuple((str(loc), float(p)) for loc, p in belief.top(3)),
            )
            after = before.advanced(state, belief_point=point)
        else:
            after = before.advanced(state)
        t2 = time.perf_counter()
        store.commit_turn(before.version, after, event)
        t3 = time.perf_counter()
        moves.append(
            {
                "turn": before.turn,
                "seat": seat,
                "seconds": (t1 - t0) + (t3 - t2),
                "calls": recorded[calls_before:],
                "ops": Counter(getattr(store, "op_counts", {})) - ops_before,
            }
        )
    return moves


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    seeds = long_seeds(games)
    with mock_aws():
        recorder = CallRecorder()
        dynamo = DynamoDbStore(recorder=recorder)
        create_tables(dynamo)
        play(dynamo, "warm-up", seeds[0], recorder)
        all_moves = [m for i, s in enumerate(seeds) for m in play(dynamo, f"g{i}", s, recorder)]
        final_item = dynamo.raw_items(f"g{len(seeds) - 1}")[0]
        sizes = [
            item_size(i)
            for g in range(len(seeds))
            for i in dynamo.raw_items(f"g{g}")[2:]  # the turns' events
        ]
    memory = MemoryStore()
    memory_moves = [m for i, s in enumerate(seeds) for m in play(memory, f"g{i}", s)]

    print(
        f"store hot path per move, DynamoDbStore on moto in process, {games} games x 50 turns,"
        " planner (rebuilt from the view) vs reference, a belief point per Harry move"
    )
    print(f"  snapshot item at turn 50: {item_size(final_item)} bytes (budget 16384)")
    print(f"  event items: largest {max(sizes):,} bytes ({len(sizes)} turn events)")
    turns = (1, 2, 25, 50)
    print(f"  {'':34}" + "".join(f"{'turn ' + str(t):>10}" for t in turns))
    for seat in ("harry", "voldemort"):
        picked = [_move(all_moves, seat, t) for t in turns]
        note = " (the game ends after Harry's turn 50: Voldemort's last is 49)"
        print(f"  {seat}'s move" + (note if seat == "voldemort" else ""))
        for label, cells in _rows(picked):
            print(f"    {label:32}" + "".join(f"{c:>10}" for c in cells))
    equal = all(
        _units(_move(all_moves, seat, 1)) == _units(_move(all_moves, seat, 50))
        for seat in ("harry", "voldemort")
    )
    print(f"  RCU and WCU per move at turn 1 == turn 50: {'yes' if equal else 'NO'}")
    lat = [m["seconds"] * 1000 for m in all_moves]
    early = [m["seconds"] * 1000 for m in all_moves if m["turn"] <= 5]
    late = [m["seconds"] * 1000 for m in all_moves if m["turn"] >= 46]
    mem = [m["seconds"] * 1000 for m in memory_moves]
    print(f"  latency of load + commit, ms ({len(lat)} moves)  p50       p99")
    print(f"    moto, all moves               {pct(lat, 0.5):8.2f}  {pct(lat, 0.99):8.2f}")
    print(f"    moto, turns 1-5               {pct(early, 0.5):8.2f}  {pct(early, 0.99):8.2f}")
    print(f"    moto, turns 46-50             {pct(late, 0.5):8.2f}  {pct(late, 0.99):8.2f}")
    print(f"    MemoryStore, all moves        {pct(mem, 0.5):8.2f}  {pct(mem, 0.99):8.2f}")
    print(f"    (mean over all moto moves: {statistics.fmean(lat):.2f} ms)")


def _move(moves: list[dict[str, Any]], seat: str, turn: int) -> dict[str, Any]:
    """The first move of `seat` at `turn` (or the seat's latest turn before it)."""
    mine = [m for m in moves if m["seat"] == seat and m["turn"] <= turn]
    best = max(m["turn"] for m in mine)
    return next(m for m in mine if m["turn"] == best)


def _units(move: dict[str, Any]) -> tuple[float, float]:
    read = next(c for c in move["calls"] if c.op == "GetItem")
    write = next(c for c in move["calls"] if c.op == "TransactWriteItems")
    return read.read_units, write.write_units


def _rows(moves: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    def get(m: dict[str, Any], op: str) -> Any:
        return next(c for c in m["calls"] if c.op == op)

    reads = [get(m, "GetItem") for m in moves]
    writes = [get(m, "TransactWriteItems") for m in moves]
    return [
        ("turn measured", [str(m["turn"]) for m in moves]),
        ("GetItem calls", [str(m["ops"]["GetItem"]) for m in moves]),
        ("TransactWriteItems calls", [str(m["ops"]["TransactWriteItems"]) for m in moves]),
        ("other calls", [str(sum(m["ops"].values()) - 2) for m in moves]),
        ("snapshot read, bytes", [str(r.item_bytes) for r in reads]),
        ("RCU, consistent GetItem (est.)", [f"{r.read_units:g}" for r in reads]),
        ("RCU as moto reports", [f"{r.reported_units}" for r in reads]),
        ("bytes written, event + snapshot", [str(w.item_bytes) for w in writes]),
        ("WCU, transactional x2 (est.)", [f"{w.write_units:g}" for w in writes]),
        ("WCU as moto reports", [f"{w.reported_units}" for w in writes]),
    ]


if __name__ == "__main__":
    main()
