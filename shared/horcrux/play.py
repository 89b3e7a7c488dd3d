"""The one game loop: two brains play turns through the engine until the game ends.

Every way a game is played runs these functions, so a game is the same game wherever it
is played (bit for bit: the same engine calls and the same RNG streams):

* `decide(brain, state, seat)`: the seat's brain asked once, with its seat's view and the
  turn's RNG stream (`rng.stream(seed, seat, turn)`);
* `play_turn(state, harry, voldemort)`: one turn, the seat to move decides and the
  engine applies its move (a `Step`); the service, which persists after every move, plays
  its AI turns with `decide` and `apply` (`horcrux.service.ai.play_ai_turn`);
* `play(game, harry, voldemort, on_step=...)`: `play_turn` until the game is over, with a
  hook after each step (simulation's tallies, the evaluation's tracer);
* `play_game(rules, seed, harry_spec, voldemort_spec)`: a fresh game and fresh brains
  built from their specs (the evaluation-only brains read the truth, `Game.truth`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from horcrux import engine, rng
from horcrux.agents.base import HARRY_BRAINS, VOLDEMORT_BRAINS, HarryBrain, VoldemortBrain
from horcrux.agents.contract import Brain
from horcrux.models import (
    AnyAction,
    GameStarted,
    GameState,
    HarryMoved,
    Seat,
    VoldemortMoved,
)
from horcrux.rules import RuleSet
from horcrux.views import HarryView, VoldemortView, harry_view, voldemort_view

GameEvent = GameStarted | HarryMoved | VoldemortMoved


def view_of(state: GameState, seat: Seat) -> HarryView | VoldemortView:
    """What `seat` sees of `state`."""
    return harry_view(state) if seat == "harry" else voldemort_view(state)


def turn_stream(state: GameState, seat: Seat) -> random.Random:
    """The RNG stream of `seat`'s decision in this turn (fixed by the game's seed)."""
    return rng.stream(state.seed, seat, state.turn)


def decide(brain: Brain, state: GameState, seat: Seat) -> AnyAction:
    """The brain's move in `state`: asked with the seat's view and the turn's stream."""
    move: AnyAction = brain.decide(view_of(state, seat), turn_stream(state, seat))
    return move


@dataclass(frozen=True)
class Step:
    """One turn played: the state before, what the seat saw and chose, the state after
    and the event the engine wrote."""

    before: GameState
    seat: Seat
    view: HarryView | VoldemortView
    move: AnyAction
    state: GameState
    event: HarryMoved | VoldemortMoved


def apply(before: GameState, seat: Seat, view: HarryView | VoldemortView, move: AnyAction) -> Step:
    """The engine applies `move` (an `IllegalAction` if it is not legal: nothing changes)."""
    state, event = engine.apply(before, move)
    return Step(before, seat, view, move, state, event)


def play_turn(state: GameState, harry: HarryBrain, voldemort: VoldemortBrain) -> Step:
    """One turn: the seat to move decides, the engine applies its move."""
    seat: Seat = "harry" if state.phase == "harry" else "voldemort"
    brain: Brain = harry if seat == "harry" else voldemort
    view = view_of(state, seat)
    move: AnyAction = brain.decide(view, turn_stream(state, seat))
    return apply(state, seat, view, move)


@dataclass
class Game:
    """A game being played: its state and every event so far (`game_started` first)."""

    state: GameState
    events: list[GameEvent] = field(default_factory=list)

    def truth(self) -> GameState:
        """The true state now: what an evaluation-only brain (`oracle`) is built to read."""
        return self.state


def new_game(rules: RuleSet, seed: int) -> Game:
    """A fresh game: the Horcruxes placed from the seed, its `game_started` event."""
    state, started = engine.new_game(rules, seed)
    return Game(state, [started])


def play(
    game: Game,
    harry: HarryBrain,
    voldemort: VoldemortBrain,
    *,
    on_step: Callable[[Step], None] | None = None,
) -> Game:
    """Play `game` to its end (`play_turn` after `play_turn`); `on_step` sees each step
    after the game has moved (`game.state` is the step's `state`). Returns `game`."""
    while not game.state.over:
        step = play_turn(game.state, harry, voldemort)
        game.state = step.state
        game.events.append(step.event)
        if on_step is not None:
            on_step(step)
    return game


@dataclass
class Played:
    """A finished game and the two brains that played it (their records, their stats)."""

    game: Game
    harry: HarryBrain
    voldemort: VoldemortBrain


def play_game(
    rules: RuleSet,
    seed: int,
    harry: str,
    voldemort: str,
    *,
    settings: Mapping[str, Any] | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> Played:
    """A fresh game (seed `seed`) between fresh brains built from their specs, played to
    its end. `settings` go to Harry's brain (`BrainOptions.settings`)."""
    game = new_game(rules, seed)
    harry_brain = HARRY_BRAINS.create(
        harry, rules, truth=game.truth, settings=dict(settings) if settings else None
    )
    voldemort_brain = VOLDEMORT_BRAINS.create(voldemort, rules, truth=game.truth)
    play(game, harry_brain, voldemort_brain, on_step=on_step)
    return Played(game, harry_brain, voldemort_brain)


__all__ = [
    "Game",
    "GameEvent",
    "Played",
    "Step",
    "apply",
    "decide",
    "new_game",
    "play",
    "play_game",
    "play_turn",
    "turn_stream",
    "view_of",
]
