"""The default planner's speed beside another revision's, the same games, in one run.

    .venv/bin/python benchmarks/bench_side_by_side.py [--rev REV] [--games 200] [--rounds 3]
    .venv/bin/python benchmarks/bench_side_by_side.py --tree /path/to/old/checkout

Without `--rev` or `--tree` the other side is `BASELINE` (the code before the runtime and
the tools were split, the figure the redesign was measured against), when this clone has it.

Each side is a fresh interpreter that imports its own tree's code (the runtime `shared/`,
and `tools/` where that tree has one) and plays the same seeds, `planner` against
`reference`, classic rules; the rounds alternate A, B, A, B, ... so a noisy machine loads
both sides alike. The figure is games per CPU second of the child (its own user + system
time, what the wall time is on an idle core), the median over rounds, and the ratio. Each
side also prints a digest of its games' results, so a reader sees whether the two played
the same games (they do unless a change was meant to alter play).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "cd2ab67"
"""The default other side: the last revision before the redesign ("one runtime, one toolbox")."""

CHILD = """
import hashlib, json, sys, time
try:
    from horcrux_tools.sim import play_game
except ImportError:  # a tree from before the tools were their own distribution
    from horcrux.sim import play_game
from horcrux.rules import CLASSIC

games = int(sys.argv[1])
play_game(CLASSIC, 10**6, "planner", "reference")  # imports and caches warm, not timed
digest = hashlib.sha256()
start = time.process_time()
for seed in range(games):
    result = play_game(CLASSIC, seed, "planner", "reference")
    digest.update(f"{seed}:{result.winner}:{result.turns}:{result.destroyed};".encode())
cpu = time.process_time() - start
print(json.dumps({"cpu": cpu, "digest": digest.hexdigest()[:16]}))
"""


def tree_of_rev(rev: str, into: Path) -> Path:
    """`git archive REV shared tools` of this repository, unpacked under `into`."""
    archive = into / "tree.tar"
    paths = [p for p in ("shared", "tools") if _in_rev(rev, p)]
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, *paths], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def _in_rev(rev: str, path: str) -> bool:
    probe = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:{path}"],
        check=False,
        capture_output=True,
    )
    return probe.returncode == 0


def run_side(tree: Path, games: int) -> dict[str, float | str]:
    path = [str(tree / p) for p in ("shared", "tools") if (tree / p).is_dir()]
    # the tree's code first; whatever else the path held (its dependencies) after it
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    path += [p for p in inherited if p and not p.startswith(str(ROOT))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONHASHSEED="0")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(games)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--rev", help="a git revision of this repository")
    base.add_argument("--tree", type=Path, help="another checkout (holding shared/)")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.tree is None and args.rev is None:
        if not _in_rev(BASELINE, "shared"):
            print(f"the baseline {BASELINE} is not in this clone: pass --rev REV or --tree DIR")
            return 0
        args.rev = BASELINE
    with tempfile.TemporaryDirectory() as tmp:
        other = args.tree if args.tree else tree_of_rev(args.rev, Path(tmp))
        label = str(args.tree) if args.tree else args.rev
        sides = {"this tree": ROOT, label: other}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        digests: dict[str, set[str]] = {name: set() for name in sides}
        for _ in range(args.rounds):
            for name, tree in sides.items():
                result = run_side(tree, args.games)
                cpu[name].append(float(result["cpu"]))
                digests[name].add(str(result["digest"]))
    print(
        f"planner vs reference, classic, seeds 0-{args.games - 1}, {args.rounds} rounds "
        "alternating, games per CPU second (median; min-max):"
    )
    rates = {}
    for name, times in cpu.items():
        per = [args.games / t for t in times]
        rates[name] = statistics.median(per)
        print(
            f"  {name:>12}: {rates[name]:6.1f} games/s ({min(per):.1f}-{max(per):.1f})  "
            f"results digest {', '.join(sorted(digests[name]))}"
        )
    mine, theirs = rates["this tree"], rates[label]
    print(f"  ratio this tree / {label}: {mine / theirs:.2f}")
    same = digests["this tree"] == digests[label]
    print(f"  the same results: {'yes' if same else 'no (the change alters play)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
