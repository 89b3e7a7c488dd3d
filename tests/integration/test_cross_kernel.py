"""The same game on every machine: the default planner against `reference`, `shadow` and
`mirror`, and the particle-belief Harry told his opponent (`told:D` against `family:D`, whose
observers sum on BLAS), play move for move the same games whichever BLAS kernel sums its matrix
products (OpenBLAS picks one per CPU, `OPENBLAS_CORETYPE` forces it), because every
decision on a computed float goes through `horcrux.belief.ties`' tolerances.

Each kernel runs in its own process (OpenBLAS reads the variable when it loads), which
prints a digest of every game's full event log (every move and every outcome)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import horcrux
import horcrux_tools

KERNELS = ("Haswell", "Sandybridge", "Prescott")
VOLDEMORTS = ("reference", "shadow", "mirror")
SEEDS = 20
TOLD = (("told:37:256", "family:37"), ("told:50:256", "family:50"))
"""Particle-belief games: draws with a Bayes observer and with a copy of Harry's planner."""
TOLD_SEEDS = 6

PLAY = "from horcrux_tools.sim import play_game"
"""The project's simulation entry point, imported in this one place."""

SCRIPT = f"""
import hashlib, sys
import numpy as np
{PLAY}
from horcrux.rules import CLASSIC
g = np.random.default_rng(0)
a, b = g.random((16, 455)), g.random((455, 15))
print("canary", hashlib.sha256((a @ b).tobytes()).hexdigest())
seeds, pairs = int(sys.argv[1]), sys.argv[2:]
for pair in pairs:
    harry, v = pair.split("@")
    for seed in range(seeds):
        events = play_game(CLASSIC, seed, harry, v, keep_events=True).events
        print(pair, seed, hashlib.sha256(repr(events).encode()).hexdigest())
"""


def _play(
    kernels: tuple[str, ...],
    pairs: tuple[str, ...] = tuple(f"planner@{v}" for v in VOLDEMORTS),
    seeds: int = SEEDS,
) -> dict[str, list[str]]:
    """Each kernel's output lines: the canary's digest, then one line per game."""
    # the code under test: the runtime and the tools
    runtime = os.pathsep.join(
        str(Path(package.__file__).resolve().parents[1]) for package in (horcrux, horcrux_tools)
    )
    procs = {}
    for kernel in kernels:
        env = dict(os.environ, OPENBLAS_CORETYPE=kernel, OPENBLAS_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (runtime, env.get("PYTHONPATH"))))
        args = [sys.executable, "-c", SCRIPT, str(seeds), *pairs]
        procs[kernel] = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    out = {}
    for kernel, proc in procs.items():
        stdout, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{kernel}: exit {proc.returncode}"
        out[kernel] = stdout.splitlines()
    return out


def _openblas_x86() -> bool:
    """Whether `OPENBLAS_CORETYPE` selects these kernels here (numpy on OpenBLAS, x86-64)."""
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return "openblas" in str(blas.get("name", "")).lower() and platform.machine() in (
        "x86_64",
        "AMD64",
    )


@pytest.mark.slow
def test_every_blas_kernel_plays_the_same_games() -> None:
    out = _play(KERNELS)
    first = out[KERNELS[0]]
    assert len(first) == 1 + SEEDS * len(VOLDEMORTS)
    _same_games(out)


@pytest.mark.slow
def test_every_blas_kernel_plays_the_same_told_games() -> None:
    out = _play(KERNELS, tuple(f"{h}@{v}" for h, v in TOLD), TOLD_SEEDS)
    assert len(out[KERNELS[0]]) == 1 + TOLD_SEEDS * len(TOLD)
    _same_games(out)


def _same_games(out: dict[str, list[str]]) -> None:
    first = out[KERNELS[0]]
    if _openblas_x86():  # the kernels really differ: their sums' last bits do
        assert len({lines[0] for lines in out.values()}) == len(KERNELS)
    for kernel in KERNELS[1:]:
        games = out[kernel][1:]
        differ = [a for a, b in zip(first[1:], games, strict=True) if a != b]
        assert not differ, f"{kernel} plays other games than {KERNELS[0]}: {differ[:3]}"
