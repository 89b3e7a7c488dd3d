"""Check a speed change of the planner's belief: same games, bit for bit, and how much faster.

Run from the repository root (classic preset, the default planner):

* `.venv/bin/python benchmarks/compare_belief.py fingerprint OUT.json OPPONENTS FIRST LAST
  [HARRY [PRESET]]`: plays seeds FIRST..LAST-1 against each comma-separated opponent
  (Harry `planner` and the `classic` preset unless named) and writes, per game, the
  winner, a hash of every event and a hash of the planner's whole filter state at
  every turn (the map, each model's weights, decoy odds and decoy counts);
* `... compare A.json B.json`: per opponent, the wins and how many games differ;
* `... speed OLD_SHARED [GAMES [HARRY]]`: the code under OLD_SHARED (a copy of another
  commit's `shared/`, e.g. `git archive HEAD~5 shared | tar -x -C /tmp/old`) and this
  tree's, loaded in one process and played game by game in turn against `reference`
  (Harry `planner` unless named, e.g. `planner:aware-copy`): games/s of each by CPU time,
  which load on a shared machine disturbs far less than the wall clock.

Run `fingerprint` once with `PYTHONPATH=OLD_SHARED` and once without, then `compare`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

SHARED = str(Path(__file__).resolve().parents[1] / "shared")


def fingerprint(
    out: str, opponents: str, first: int, last: int, harry: str = "planner", preset: str = "classic"
) -> None:
    from horcrux.agents import planner
    from horcrux.belief.bayes import BayesBelief
    from horcrux.rules import preset as rules_preset
    from horcrux_tools.sim import play_game

    rules = rules_preset(preset)

    states: list[bytes] = []
    decide = planner.PlannerHarry.decide

    def watched(self: planner.PlannerHarry, view: Any, rng: Any) -> Any:
        # every planner's belief after each decision: the default Harry's, a memory
        # window's rebuilt one, and the copy of Harry that `mirror` runs
        move = decide(self, view, rng)
        b: BayesBelief = self.belief
        f = b._filters
        states.append(b.marginals().tobytes() + f.w.tobytes() + f.c.tobytes() + f.used.tobytes())
        return move

    planner.PlannerHarry.decide = watched  # type: ignore[method-assign]
    games: dict[str, list[object]] = {}
    for opponent in opponents.split(","):
        for seed in range(first, last):
            states.clear()
            result = play_game(rules, seed, harry, opponent, keep_events=True)
            events = repr([e.model_dump() for e in result.events or []]).encode()
            games[f"{opponent}:{seed}"] = [
                result.winner,
                hashlib.sha1(events).hexdigest(),
                hashlib.sha1(b"".join(states)).hexdigest(),
            ]
    Path(out).write_text(json.dumps(games))
    print(f"{len(games)} games written to {out}")


def compare(first: str, second: str) -> None:
    a, b = json.loads(Path(first).read_text()), json.loads(Path(second).read_text())
    wins: Counter[tuple[str, int]] = Counter()
    differ: Counter[tuple[str, str]] = Counter()
    for key, (winner, events, state) in a.items():
        opponent = key.split(":")[0]
        other = b[key]
        wins[(opponent, 0)] += winner == "harry"
        wins[(opponent, 1)] += other[0] == "harry"
        differ[(opponent, "events")] += events != other[1]
        differ[(opponent, "state")] += state != other[2]
    for opponent in dict.fromkeys(k.split(":")[0] for k in a):
        print(
            f"{opponent:10s} wins {wins[(opponent, 0)]} -> {wins[(opponent, 1)]}, games whose "
            f"events differ {differ[(opponent, 'events')]}, whose filter state differs "
            f"{differ[(opponent, 'state')]}"
        )


def speed(old: str, games: int, harry: str = "planner") -> None:
    loaded: dict[str, tuple[dict[str, Any], Any, Any]] = {}
    sys.path[:] = [p for p in sys.path if Path(p).resolve() != Path(SHARED)]
    for tag, root in (("old", old), ("new", SHARED)):
        for name in [m for m in sys.modules if m == "horcrux" or m.startswith("horcrux.")]:
            del sys.modules[name]
        sys.path.insert(0, root)
        importlib.import_module("horcrux.agents.planner")
        sim = importlib.import_module("horcrux_tools.sim")
        rules = importlib.import_module("horcrux.rules")
        if not str(sim.__file__).startswith(str(Path(root).resolve())):
            raise SystemExit(f"{tag} code not loaded from {root}: {sim.__file__}")
        sim.play_game(rules.CLASSIC, 9999, harry, "reference")  # warm up
        modules = {m: v for m, v in sys.modules.items() if m.split(".")[0] == "horcrux"}
        loaded[tag] = (modules, sim.play_game, rules.CLASSIC)
        sys.path.remove(root)
    cpu = {"old": 0.0, "new": 0.0}
    for seed in range(games):
        for tag in ("old", "new") if seed % 2 == 0 else ("new", "old"):
            modules, play, classic = loaded[tag]
            sys.modules.update(modules)
            start = time.process_time()
            play(classic, seed, harry, "reference")
            cpu[tag] += time.process_time() - start
    old_rate, new_rate = games / cpu["old"], games / cpu["new"]
    print(
        f"{harry} vs reference, {games} games each, CPU time: old {old_rate:.1f} games/s, "
        f"new {new_rate:.1f} games/s ({new_rate / old_rate - 1.0:+.1%})"
    )


def main(argv: list[str]) -> None:
    if argv[:1] == ["fingerprint"] and len(argv) in (5, 6, 7):
        fingerprint(argv[1], argv[2], int(argv[3]), int(argv[4]), *argv[5:])
    elif argv[:1] == ["compare"] and len(argv) == 3:
        compare(argv[1], argv[2])
    elif argv[:1] == ["speed"] and len(argv) in (2, 3, 4):
        speed(argv[1], int(argv[2]) if len(argv) >= 3 else 200, *argv[3:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
