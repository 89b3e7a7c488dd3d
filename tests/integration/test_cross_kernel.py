"""The same game on every machine: the default planner against `reference`, `shadow` and
`mirror`, the particle-belief Harry told his opponent (`told:D` against `family:D`, whose
observers sum on BLAS), the gated brain (its exploration target and its L1 context), the LLM
brain (its prompt byte for byte, answered by a recorded reply) and a season with memory on
(ECHO's recall, eviction and plans) play move for move the same games whichever BLAS kernel
sums its matrix products (OpenBLAS picks one per CPU, `OPENBLAS_CORETYPE` forces it),
because every decision on a computed float goes through `horcrux.belief.ties`' tolerances
and ranked sorts.

Each kernel runs in its own process (OpenBLAS reads the variable when it loads), which
prints a digest of every game's full event log (every move and every outcome), of every
prompt the LLM brain sent, or of a season's wins and memory."""

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
GATED = ("gated@reference", "gated@shadow")
"""The gated brain without a key: the planner, its exploration draws and its L1 context."""
GATED_SEEDS = 8
LLM_SEEDS = 4
"""Games of the LLM brain (compressed tier, the planner's candidates) against `reference`."""
RECORDED_REPLY = {"move": "search Forest"}
"""The model's reply to every prompt: a make_move call recorded from a model (offered on
some turns and played; on the others refused as not offered, and the planner plays)."""
SEASON = ("decoy-heavy", 8)
"""A season with memory on (and off, and the counterfactual arm): opponent and games."""

PLAY = "from horcrux_tools.sim import play_game"
"""The project's simulation entry point, imported in this one place."""

CANARY = """
import hashlib
import numpy as np
g = np.random.default_rng(0)
a, b = g.random((16, 455)), g.random((455, 15))
print("canary", hashlib.sha256((a @ b).tobytes()).hexdigest())
"""
"""A matrix product whose last bits tell the kernels apart (every script prints it first)."""

SCRIPT = f"""
import hashlib, sys
{PLAY}
from horcrux.rules import CLASSIC
seeds, pairs = int(sys.argv[1]), sys.argv[2:]
for pair in pairs:
    harry, v = pair.split("@")
    for seed in range(seeds):
        events = play_game(CLASSIC, seed, harry, v, keep_events=True).events
        print(pair, seed, hashlib.sha256(repr(events).encode()).hexdigest())
"""

LLM_SCRIPT = f"""
import hashlib, json, sys
from types import SimpleNamespace
from horcrux import play
from horcrux.agents.base import VOLDEMORT_BRAINS
from horcrux.agents.llm import LLMHarry
from horcrux.rules import CLASSIC

class Recorded:
    # an Anthropic client whose model answers every prompt with the recorded reply
    def __init__(self):
        self.prompts = []
        self.messages = self
    def with_options(self, **_):
        return self
    def create(self, **call):
        sent = {{k: call[k] for k in ("system", "messages", "tools", "tool_choice")}}
        self.prompts.append(json.dumps(sent, sort_keys=True))
        block = SimpleNamespace(
            type="tool_use", name=call["tools"][0]["name"], input={RECORDED_REPLY!r}
        )
        usage = SimpleNamespace(input_tokens=1, output_tokens=1)
        return SimpleNamespace(content=[block], usage=usage)

for seed in range(int(sys.argv[1])):
    client = Recorded()
    harry = LLMHarry(CLASSIC, client=client, deadline_s=3600.0)
    game = play.new_game(CLASSIC, seed)
    play.play(game, harry, VOLDEMORT_BRAINS.create("reference", CLASSIC))
    played = sum(d.source == "llm" for d in harry.decisions)
    sent = hashlib.sha256(chr(10).join(client.prompts).encode()).hexdigest()
    events = hashlib.sha256(repr(game.events).encode()).hexdigest()
    print("llm", seed, len(client.prompts), played, sent, events)
"""

SEASON_SCRIPT = """
import hashlib, sys
from horcrux_tools.echo.season import run_season
s = run_season(sys.argv[2], int(sys.argv[3]), seed=0)
memory = [(it.id, it.text) for it in s.memory.items] if s.memory is not None else []
learned = (s.wins, s.planned, s.rates, s.thresholds, s.gates, memory)
wins = {a: sum(w) for a, w in s.wins.items()}
digest = hashlib.sha256(repr(learned).encode()).hexdigest()
print("season", len(memory), sum(s.planned), digest, wins)
"""


def _play(
    kernels: tuple[str, ...],
    pairs: tuple[str, ...] = tuple(f"planner@{v}" for v in VOLDEMORTS),
    seeds: int = SEEDS,
    script: str = SCRIPT,
) -> dict[str, list[str]]:
    """Each kernel's output lines: the canary's digest, then one line per game (`script`
    run with `seeds` and `pairs` as its arguments)."""
    # the code under test: the runtime and the tools
    runtime = os.pathsep.join(
        str(Path(package.__file__).resolve().parents[1]) for package in (horcrux, horcrux_tools)
    )
    procs = {}
    for kernel in kernels:
        env = dict(os.environ, OPENBLAS_CORETYPE=kernel, OPENBLAS_NUM_THREADS="1")
        env.pop("ANTHROPIC_API_KEY", None)  # the gated brain's upper tiers: no LLM
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (runtime, env.get("PYTHONPATH"))))
        args = [sys.executable, "-c", CANARY + script, str(seeds), *pairs]
        procs[kernel] = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    out = {}
    for kernel, proc in procs.items():
        stdout, _ = proc.communicate(timeout=600)
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


@pytest.mark.slow
def test_every_blas_kernel_plays_the_same_gated_games() -> None:
    out = _play(KERNELS, GATED, GATED_SEEDS)
    assert len(out[KERNELS[0]]) == 1 + GATED_SEEDS * len(GATED)
    _same_games(out)


@pytest.mark.slow
def test_every_blas_kernel_sends_the_llm_the_same_prompts() -> None:
    out = _play(KERNELS, (), LLM_SEEDS, LLM_SCRIPT)
    lines = [line.split() for line in out[KERNELS[0]][1:]]
    assert len(lines) == LLM_SEEDS
    asked = [int(line[2]) for line in lines]
    played = [int(line[3]) for line in lines]
    # the brain asked the recorded model on every turn, and played its reply on some
    assert all(n > 0 for n in asked) and 0 < sum(played) < sum(asked), (asked, played)
    _same_games(out)


@pytest.mark.slow
def test_every_blas_kernel_plays_the_same_season_with_memory_on() -> None:
    opponent, games = SEASON
    out = _play(KERNELS, (opponent, str(games)), 0, SEASON_SCRIPT)
    assert len(out[KERNELS[0]]) == 2
    season = out[KERNELS[0]][1].split()
    assert season[0] == "season" and int(season[1]) > 0, "memory learned nothing to compare"
    _same_games(out)


def _same_games(out: dict[str, list[str]]) -> None:
    first = out[KERNELS[0]]
    if _openblas_x86():  # the kernels really differ: their sums' last bits do
        assert len({lines[0] for lines in out.values()}) == len(KERNELS)
    for kernel in KERNELS[1:]:
        games = out[kernel][1:]
        differ = [a for a, b in zip(first[1:], games, strict=True) if a != b]
        assert not differ, f"{kernel} plays other games than {KERNELS[0]}: {differ[:3]}"
