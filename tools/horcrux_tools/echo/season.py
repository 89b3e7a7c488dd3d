"""`horcrux season`: consecutive games against one opponent, on the same seeds in every
arm (paired), in process and pure (no store, no clock).

Arms (`ARMS`):

* `on`: full memory: before each game `memory_plan` gives the planner its models and
  knobs (`PlannerHarry.adopt_memory`), through the memory gate (`echo.gate`); after it
  the game is consolidated from its events (`consolidate`: the style's factors and the
  gate's score from the likelihood of Voldemort's moves), as the compaction does;
* `off`: the planner's defaults;
* `counter`: the named baseline (`horcrux_tools.echo.baseline.CounterBaseline`): the three rates
  counted over every game so far, handed to the planner through the same mapping;
* layer ablations, full memory with one layer off: `no-style` (the cross-game model
  posterior), `no-beliefs` (the rate beliefs' learned models), `no-decay` (decay off:
  items never fade, the style's evidence is never discounted), `no-gate` (the memory's
  plan played whatever the gate says: memory as it was before the gate);
* `corrected`: full memory that starts from an operator's correction (`correction`, a
  subject and a rate, added before the first game): what a correction adds.

`switch` changes the opponent's style at game `switch_at` (the adaptation measure).

A Voldemort who runs a copy of Harry's brain (`mirror`, `ambush`) gets each game's plan
for his copy as well (`brains`): otherwise memory would beat him by making Harry a brain
he has not read (measured in docs/ECHO.md)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from horcrux import play as loop
from horcrux.agents import VOLDEMORT_BRAINS
from horcrux.agents.contract import MemoryAdopter
from horcrux.agents.particle_harry import ParticleHarry, against
from horcrux.agents.planner import PlannerHarry
from horcrux.compaction import summarise_game
from horcrux.echo import opponent as who
from horcrux.echo import style
from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.corrections import add_correction
from horcrux.echo.lifecycle import consolidate
from horcrux.echo.model import EchoMemory, Subject
from horcrux.echo.use import (
    ALL_LAYERS,
    Layers,
    MemoryPlan,
    joined_models,
    learned_rates,
    memory_plan,
    rate_models,
)
from horcrux.models import GameStarted, HarryMoved, Seat, VoldemortMoved
from horcrux.play import Step
from horcrux.rules import PRESETS, RuleSet
from horcrux.store.port import BeliefPoint, SeatInfo
from horcrux.store.results import GameSummary
from horcrux.views import harry_view
from horcrux_tools.echo.baseline import CounterBaseline

AGENT = "planner"
BASE_ARMS = ("on", "off", "counter")
ABLATION_ARMS = ("no-style", "no-beliefs", "no-decay", "no-gate", "no-opponent")
ARMS = BASE_ARMS + ABLATION_ARMS
CORRECTED = "corrected"
KNOWN_ARMS = (*ARMS, CORRECTED)
LAYERS_OF: dict[str, Layers] = {
    "on": ALL_LAYERS,
    "no-style": replace(ALL_LAYERS, style=False),
    "no-beliefs": replace(ALL_LAYERS, beliefs=False),
    "no-decay": ALL_LAYERS,
    "no-gate": replace(ALL_LAYERS, gate=False),
    "no-opponent": replace(ALL_LAYERS, opponent=False),
    CORRECTED: ALL_LAYERS,
}

Events = list[GameStarted | HarryMoved | VoldemortMoved]


@dataclass(frozen=True)
class Played:
    summary: GameSummary
    events: Events
    factors: dict[str, float]
    """The played filter's Bayes factors per model unit (a diagnostic: the style learns
    from the likelihood of Voldemort's moves, computed by `consolidate`)."""


def brains(
    rules: RuleSet, voldemort: str, plan: MemoryPlan | None, *, holdout: bool = False
) -> tuple[PlannerHarry | ParticleHarry, Any]:
    """One game's brains: the planner with the memory's plan (if any; against who memory
    says the opponent is when it names him, as the service plays it), and Voldemort (a
    held-out `family:SEED` only with `holdout`, the report's key). A Voldemort who runs a
    copy of Harry's brain (`mirror`, `ambush`) gets the plan for his copy too: the memory
    comes from past games he saw whole, by code he has read."""
    harry = PlannerHarry(rules)
    vold = VOLDEMORT_BRAINS.create(voldemort, rules, settings={"holdout": True} if holdout else {})
    if plan is None:
        return harry, vold
    if plan.models:
        harry.adopt_memory(plan.models, plan.params)
        if isinstance(vold, MemoryAdopter):
            vold.adopt_memory(plan.models, plan.params)
    if plan.opponent is not None:
        return against(harry, plan.opponent), vold
    return harry, vold


def play(
    rules: RuleSet,
    seed: int,
    voldemort: str,
    plan: MemoryPlan | None,
    game_id: str,
    *,
    holdout: bool = False,
) -> Played:
    """One game of the planner (with the memory's plan, if any): the one game loop
    (`horcrux.play.play`) with a hook recording Harry's belief at each decision."""
    harry, vold = brains(rules, voldemort, plan, holdout=holdout)
    game = loop.new_game(rules, seed)
    history: list[BeliefPoint] = []

    def trace(step: Step) -> None:  # Harry's belief at each of his decisions
        if step.seat == "harry":
            b = harry.belief
            history.append(
                BeliefPoint(
                    turn=step.before.turn,
                    entropy=float(b.entropy()),
                    top=tuple((str(loc), float(p)) for loc, p in b.top(3))[:3],
                )
            )

    loop.play(game, harry, vold, on_step=trace)
    state, events = game.state, game.events
    seats: dict[Seat, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain=AGENT),
        "voldemort": SeatInfo(kind="ai", brain=voldemort),
    }
    summary = summarise_game(events, game_id=game_id, seats=seats, belief_history=history)
    planner = harry.default if isinstance(harry, ParticleHarry) else harry
    assert planner is not None
    planner.sync(harry_view(state))  # the game's last turn too (what a replay folds in)
    factors = style.bayes_factors(planner.belief.models, planner.belief.model_weights().tolist())
    return Played(summary, events, factors)


class Arm:
    """One arm's memory across the season: plans each game, learns from it."""

    def __init__(
        self,
        name: str,
        opponent: str,
        config: EchoConfig,
        correction: tuple[Subject, float] | None = None,
    ) -> None:
        if name not in KNOWN_ARMS:
            raise ValueError(f"unknown season arm {name!r}; known: {', '.join(KNOWN_ARMS)}")
        if name == CORRECTED and correction is None:
            raise ValueError("the corrected arm needs a correction (a subject and a rate)")
        self.name = name
        self.config = config
        if name == "no-decay":
            self.config = replace(config, decay_enabled=False)
        self.memory = EchoMemory(agent=AGENT, opponent=opponent)
        if name == CORRECTED and correction is not None:
            subject, rate = correction
            self.memory = add_correction(
                self.memory, wrong="", right="", subject=subject, rate=rate, config=config
            )
        self.counter = CounterBaseline()
        self.leaks = 0

    def plan(self) -> MemoryPlan | None:
        if self.name == "off":
            return None
        if self.name == "counter":
            learned = rate_models(self.counter.rates())
            return MemoryPlan(joined_models(learned)) if learned else None
        return memory_plan(self.memory, LAYERS_OF[self.name])

    def learn(self, played: Played) -> None:
        if self.name == "off":
            return
        if self.name == "counter":
            self.counter.add(played.summary, played.events)
            return
        result = consolidate(
            self.memory,
            played.summary,
            config=self.config,
            events=played.events,
        )
        self.leaks += result.leaked
        self.memory = result.memory


@dataclass
class Season:
    voldemort: str
    switch_to: str | None
    switch_at: int | None
    seed: int
    games: int
    arms: tuple[str, ...] = BASE_ARMS
    wins: dict[str, list[int]] = field(default_factory=dict)
    size: list[int] = field(default_factory=list)
    leaks: int = 0
    rates: list[dict[str, float | None]] = field(default_factory=list)
    thresholds: list[dict[str, float]] = field(default_factory=list)
    """The `on` arm's threshold posterior after each game."""
    gates: list[float] = field(default_factory=list)
    """The `on` arm's memory gate score S (`echo.gate`) after each game."""
    planned: list[bool] = field(default_factory=list)
    """Whether the `on` arm's planner played a plan (not its defaults), game by game."""
    against: list[bool] = field(default_factory=list)
    """Whether the `on` arm played against who memory says the opponent is, game by game."""
    none: list[float] = field(default_factory=list)
    """The `on` arm's P("none of these") after each game (`echo.opponent`)."""
    identified: list[str] = field(default_factory=list)
    """The `on` arm's likeliest family policy after each game (`FamilyParams.describe`)."""
    opponents: list[str] = field(default_factory=list)
    """Who played each game (a switching or mixed season's schedule)."""
    memory: EchoMemory | None = None
    """The `on` arm's memory at the end."""

    @property
    def on(self) -> list[int]:
        return self.wins.get("on", [])

    @property
    def off(self) -> list[int]:
        return self.wins.get("off", [])

    def window(self, arm: list[int], start: int, end: int) -> float:
        part = arm[start:end]
        return sum(part) / len(part) if part else 0.0

    def as_dict(self, curve_window: int = 20) -> dict[str, Any]:
        n = self.games
        half = n // 2
        curve = [
            {
                "games": f"{s + 1}-{min(n, s + curve_window)}",
                **{a: round(self.window(w, s, s + curve_window), 4) for a, w in self.wins.items()},
            }
            for s in range(0, n, curve_window)
        ]
        arms = {
            a: {
                "all": round(self.window(w, 0, n), 4),
                "second_half": round(self.window(w, half, n), 4),
            }
            for a, w in self.wins.items()
        }
        out: dict[str, Any] = {
            "voldemort": self.voldemort,
            "switch_to": self.switch_to,
            "switch_at": self.switch_at,
            "seed": self.seed,
            "games": n,
            "arms": arms,
            "curve": curve,
            "memory_items_max": max(self.size, default=0),
            "memory_items_last": self.size[-1] if self.size else 0,
            "memory_items": self.size,
            "leaks": self.leaks,
            "learned_last": self.rates[-1] if self.rates else {},
            "thresholds_last": self.thresholds[-1] if self.thresholds else {},
            "gates": self.gates,
            "planned": self.planned,
            "against": self.against,
            "none": self.none,
            "identified": self.identified,
            "opponents": self.opponents,
            "wins": self.wins,
        }
        if "on" in self.wins and "off" in self.wins:
            out.update(
                win_rate_on=arms["on"]["all"],
                win_rate_off=arms["off"]["all"],
                second_half_on=arms["on"]["second_half"],
                second_half_off=arms["off"]["second_half"],
                second_half_gain_points=round(
                    100 * (arms["on"]["second_half"] - arms["off"]["second_half"]), 1
                ),
            )
        if "on" in self.wins and "counter" in self.wins:
            out["second_half_over_counter_points"] = round(
                100 * (arms["on"]["second_half"] - arms["counter"]["second_half"]), 1
            )
        if self.switch_at is not None and "on" in self.wins and "off" in self.wins:
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
    arms: Sequence[str] = BASE_ARMS,
    config: EchoConfig | None = None,
    progress: Callable[[int], None] | None = None,
    correction: tuple[Subject, float] | None = None,
    switch_every: int | None = None,
    mix: Sequence[str] = (),
    holdout: bool = False,
) -> Season:
    """A season of `games` games against `voldemort` (from `switch_at` on, `switch_to`;
    with `switch_every`, the two alternate every that many games; with `mix`, each game's
    opponent is drawn from `mix` by the season's own stream), every arm on the same
    seeds, each with its own memory. The memory scope is the first opponent's name: every
    opponent plays into it, as the same person would. `holdout`: the family's held-out
    key, given by the report for a held-out draw (`evaluation.family.holdout_key`)."""
    cfg = config or default_config()
    if mix and (switch_to is not None or switch_every is not None):
        raise ValueError("a season mixes opponents or switches between two, not both")
    if switch_every is not None and switch_to is None:
        raise ValueError("--switch-every needs --switch-to (the second opponent)")
    draws = random.Random(f"horcrux-season-mix:{seed}")
    schedule = [draws.choice(list(mix)) for _ in range(games)] if mix else []
    rule_set = PRESETS[rules]
    if switch_to is not None and switch_at is None and switch_every is None:
        switch_at = games // 2
    names = tuple(dict.fromkeys(arms))
    opponent = voldemort.split(":", 1)[0]
    state = {a: Arm(a, opponent, cfg, correction) for a in names}
    season = Season(voldemort, switch_to, switch_at, seed, games, names)
    season.wins = {a: [] for a in names}
    lead = "on" if "on" in names else names[0]  # the arm whose memory the season records
    for g in range(games):
        if schedule:
            opp = schedule[g]
        elif switch_to and switch_every is not None:
            opp = switch_to if (g // switch_every) % 2 else voldemort
        else:
            opp = switch_to if switch_to and switch_at is not None and g >= switch_at else voldemort
        season.opponents.append(opp)
        for name, arm in state.items():
            plan = arm.plan()
            if name == lead:
                season.planned.append(plan is not None)
                season.against.append(plan is not None and plan.opponent is not None)
            played = play(rule_set, seed + g, opp, plan, f"season-{seed + g}", holdout=holdout)
            season.wins[name].append(int(played.summary.winner == "harry"))
            arm.learn(played)
        main = state[lead]
        if main is not None:
            memory = season.memory = main.memory
            season.leaks = main.leaks
            season.size.append(len(memory.items))
            season.rates.append(
                {k: None if v is None else round(v, 3) for k, v in learned_rates(memory).items()}
            )
            season.thresholds.append(thresholds_of(memory))
            found = memory.style()
            season.gates.append(found.gate if found is not None else 0.0)
            fit = memory.opponent_fit()
            if fit is not None:
                season.none.append(round(who.p_none(fit), 4))
                season.identified.append(who.behaviours(fit, 1)[0][0].describe())
        if progress is not None:
            progress(g)
    return season


def thresholds_of(memory: EchoMemory) -> dict[str, float]:
    """The memory's threshold posterior (the belief-reacting models' trigger)."""
    found = memory.style()
    if found is None:
        return {}
    from horcrux.echo.use import adversary_models

    q = style.posterior(found.scores, style.units(joined_models(adversary_models(memory))))
    return {f"{t:g}": round(p, 4) for t, p in style.threshold_posterior(q).items()}


def write_season(data: dict[str, Any], out: str, *, plot: bool = True) -> list[str]:
    """`season.json` (and, with matplotlib, `season.png`: the learning curve) in `out`."""
    import json
    from pathlib import Path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"season-{data['voldemort']}" + (f"-{data['switch_to']}" if data["switch_to"] else "")
    if len(set(data.get("opponents") or [])) > 2:
        name += "-mixed"
    name = name.replace(":", "-")  # a file name on every system
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
    opponents = data.get("opponents") or []
    fig, ax = plt.subplots(figsize=(7, 3.2))
    if len(set(opponents)) > 1:  # a changing opponent: 5-game rolling rates, his changes
        k = 5
        for arm in data["arms"]:
            wins = data["wins"][arm]
            rolling = [
                sum(wins[max(0, g - k + 1) : g + 1]) / min(k, g + 1) for g in range(len(wins))
            ]
            ax.plot(range(1, len(wins) + 1), rolling, label=arm)
        for g in range(1, len(opponents)):
            if opponents[g] != opponents[g - 1]:
                ax.axvline(g + 0.5, color="grey", lw=0.5, ls=":")
        ax.set_xlabel(f"game (dotted: the opponent changes; rates over the last {k} games)")
    else:
        xs = list(range(1, len(data["curve"]) + 1))
        for arm, marker in zip(data["arms"], "os^vx+*d", strict=False):
            ax.plot(xs, [p[arm] for p in data["curve"]], marker=marker, label=arm)
        ax.set_xticks(xs, [p["games"] for p in data["curve"]], rotation=45, fontsize=7)
    ax.set_ylabel("win rate")
    title = f"season vs {data['voldemort']}"
    if len(set(opponents)) > 2:
        title = f"season vs {', '.join(sorted(set(opponents)))}, one drawn per game"
    elif data["switch_to"] and data["switch_at"] is None:
        title += f" and {data['switch_to']}, alternating"
    elif data["switch_to"]:
        title += f" -> {data['switch_to']} at {data['switch_at']}"
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / f"{name}.png", dpi=110)
    plt.close(fig)
    written.append(str(folder / f"{name}.png"))
    return written
