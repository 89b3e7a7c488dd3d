"""`horcrux season`: consecutive games against one opponent with memory on, and again on
the same seeds with memory off (paired), in process and pure (no store, no clock).

Memory on: before each game the scope's memory gives the planner its adversary models
(`adversary_models`); after it the game's summary is consolidated (`consolidate`), as the
compaction Lambda does. Memory off: the planner's defaults. `switch` changes the
opponent's style at game `switch_at` (the adaptation measure)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from horcrux import engine, rng
from horcrux.agents import VOLDEMORT_BRAINS
from horcrux.agents.planner import PlannerHarry
from horcrux.compaction import summarise_game
from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.core import consolidate
from horcrux.echo.model import EchoMemory
from horcrux.echo.use import adversary_models, learned_rates
from horcrux.models import GameStarted, HarryMoved, Seat, VoldemortMoved
from horcrux.rules import PRESETS, RuleSet
from horcrux.store.port import BeliefPoint, SeatInfo
from horcrux.store.results import GameSummary
from horcrux.views import harry_view, voldemort_view

AGENT = "planner"


def play(
    rules: RuleSet, seed: int, voldemort: str, memory: EchoMemory | None, game_id: str
) -> tuple[GameSummary, list[GameStarted | HarryMoved | VoldemortMoved]]:
    """One game of the planner (with the memory's adversary models, if any) -> summary."""
    models = adversary_models(memory)
    harry = PlannerHarry(rules)
    if models:
        harry.adopt_models(models)
    vold = VOLDEMORT_BRAINS.create(voldemort, rules)
    state, started = engine.new_game(rules, seed)
    events: list[GameStarted | HarryMoved | VoldemortMoved] = [started]
    history: list[BeliefPoint] = []
    while not state.over:
        event: HarryMoved | VoldemortMoved
        if state.phase == "harry":
            turn = state.turn
            move = harry.decide(harry_view(state), rng.stream(seed, "harry", turn))
            b = harry.belief
            history.append(
                BeliefPoint(
                    turn=turn,
                    entropy=float(b.entropy()),
                    top=tuple((str(loc), float(p)) for loc, p in b.top(3))[:3],
                )
            )
            state, event = engine.apply(state, move)
        else:
            vmove = vold.decide(voldemort_view(state), rng.stream(seed, "voldemort", state.turn))
            state, event = engine.apply(state, vmove)
        events.append(event)
    seats: dict[Seat, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain=AGENT),
        "voldemort": SeatInfo(kind="ai", brain=voldemort),
    }
    summary = summarise_game(events, game_id=game_id, seats=seats, belief_history=history)
    return summary, events


@dataclass
class Season:
    voldemort: str
    switch_to: str | None
    switch_at: int | None
    seed: int
    games: int
    on: list[int] = field(default_factory=list)
    off: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    leaks: int = 0
    rates: list[dict[str, float | None]] = field(default_factory=list)

    def window(self, arm: list[int], start: int, end: int) -> float:
        part = arm[start:end]
        return sum(part) / len(part) if part else 0.0

    def as_dict(self, curve_window: int = 20) -> dict[str, Any]:
        n = self.games
        half = n // 2
        curve = [
            {
                "games": f"{s + 1}-{min(n, s + curve_window)}",
                "on": round(self.window(self.on, s, s + curve_window), 4),
                "off": round(self.window(self.off, s, s + curve_window), 4),
            }
            for s in range(0, n, curve_window)
        ]
        out: dict[str, Any] = {
            "voldemort": self.voldemort,
            "switch_to": self.switch_to,
            "switch_at": self.switch_at,
            "seed": self.seed,
            "games": n,
            "win_rate_on": round(self.window(self.on, 0, n), 4),
            "win_rate_off": round(self.window(self.off, 0, n), 4),
            "second_half_on": round(self.window(self.on, half, n), 4),
            "second_half_off": round(self.window(self.off, half, n), 4),
            "second_half_gain_points": round(
                100 * (self.window(self.on, half, n) - self.window(self.off, half, n)), 1
            ),
            "curve": curve,
            "memory_items_max": max(self.size, default=0),
            "memory_items_last": self.size[-1] if self.size else 0,
            "memory_items": self.size,
            "leaks": self.leaks,
            "learned_last": self.rates[-1] if self.rates else {},
            "wins_on": self.on,
            "wins_off": self.off,
        }
        if self.switch_at is not None:
            out["adaptation_games"] = adaptation_games(self, self.switch_at)
        return out


def adaptation_games(season: Season, switch_at: int, window: int = 10) -> int | None:
    """Games after the switch until memory-on's rolling win rate (over `window` games)
    first reaches memory-off's rate over the rest of the season (None: never)."""
    rest_off = season.window(season.off, switch_at, season.games)
    for g in range(switch_at + window, season.games + 1):
        if season.window(season.on, g - window, g) >= rest_off:
            return g - switch_at
    return None


def run_season(
    voldemort: str,
    games: int,
    *,
    seed: int = 0,
    rules: str = "classic",
    switch_to: str | None = None,
    switch_at: int | None = None,
    memory_off: bool = True,
    config: EchoConfig | None = None,
    progress: Callable[[int], None] | None = None,
) -> Season:
    cfg = config or default_config()
    rule_set = PRESETS[rules]
    if switch_to is not None and switch_at is None:
        switch_at = games // 2
    season = Season(voldemort, switch_to, switch_at, seed, games)
    memory = EchoMemory(agent=AGENT, opponent=voldemort.split(":", 1)[0])
    for g in range(games):
        opp = switch_to if switch_to and switch_at is not None and g >= switch_at else voldemort
        summary, events = play(rule_set, seed + g, opp, memory, f"season-{seed + g}")
        season.on.append(int(summary.winner == "harry"))
        result = consolidate(memory, summary, config=cfg, events=events)
        season.leaks += result.leaked
        memory = result.memory
        season.size.append(len(memory.items))
        season.rates.append(
            {k: None if v is None else round(v, 3) for k, v in learned_rates(memory).items()}
        )
        if memory_off:
            off, _ = play(rule_set, seed + g, opp, None, f"season-off-{seed + g}")
            season.off.append(int(off.winner == "harry"))
        if progress is not None:
            progress(g)
    return season


def write_season(data: dict[str, Any], out: str, *, plot: bool = True) -> list[str]:
    """`season.json` (and, with matplotlib, `season.png`: the learning curve) in `out`."""
    import json
    from pathlib import Path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"season-{data['voldemort']}" + (f"-{data['switch_to']}" if data["switch_to"] else "")
    written = [str(folder / f"{name}.json")]
    (folder / f"{name}.json").write_text(json.dumps(data, sort_keys=True) + "\n")
    if not plot:
        return written
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    xs = list(range(1, len(data["curve"]) + 1))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(xs, [p["on"] for p in data["curve"]], marker="o", label="memory on")
    ax.plot(xs, [p["off"] for p in data["curve"]], marker="s", label="memory off")
    ax.set_xticks(xs, [p["games"] for p in data["curve"]], rotation=45, fontsize=7)
    ax.set_ylabel("win rate")
    title = f"season vs {data['voldemort']}"
    if data["switch_to"]:
        title += f" -> {data['switch_to']} at {data['switch_at']}"
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / f"{name}.png", dpi=110)
    plt.close(fig)
    written.append(str(folder / f"{name}.png"))
    return written
