"""The one game loop (`horcrux.play`): the same game wherever it is played.

`reference_game` is the loop every caller had before it (`sim.play_game`'s: the engine and
`rng.stream(seed, seat, turn)` by hand); the loop, the simulator, the evaluation's traced
loop and self-play over a store must all play exactly its games.
"""

from __future__ import annotations

import itertools
import random

import pytest

from horcrux import engine, play, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.errors import IllegalAction
from horcrux.models import GameState, HarryMoved, Search
from horcrux.rules import CLASSIC
from horcrux.store.memory import MemoryStore
from horcrux.store.port import SeatInfo
from horcrux.views import HarryView, harry_view, voldemort_view
from horcrux_tools import sim
from horcrux_tools.evaluation.runner import play_traced
from horcrux_tools.selfplay import play_to_end, start_game

PAIRS = [
    ("planner", "reference"),
    ("seed-heuristic", "mirror"),
    ("naive", "shadow"),
    ("oracle", "random"),
]


def reference_game(harry: str, voldemort: str, seed: int) -> list[dict[str, object]]:
    """The game as the loop before `horcrux.play` played it: events as JSON."""
    state, started = engine.new_game(CLASSIC, seed)
    holder = [state]
    h = HARRY_BRAINS.create(harry, CLASSIC, truth=lambda: holder[0])
    v = VOLDEMORT_BRAINS.create(voldemort, CLASSIC, truth=lambda: holder[0])
    events = [started.model_dump(mode="json")]
    while not state.over:
        if state.phase == "harry":
            move = h.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            state, event = engine.apply(state, move)
        else:
            vmove = v.decide(voldemort_view(state), rng.stream(seed, "voldemort", state.turn))
            state, event = engine.apply(state, vmove)
        holder[0] = state
        events.append(event.model_dump(mode="json"))
    return events


@pytest.mark.parametrize(("harry", "voldemort"), PAIRS)
def test_the_loop_plays_the_reference_games(harry: str, voldemort: str) -> None:
    for seed in range(3):
        played = play.play_game(CLASSIC, seed, harry, voldemort)
        events = [e.model_dump(mode="json") for e in played.game.events]
        assert events == reference_game(harry, voldemort, seed)
        assert played.game.state.over and len(events) > 2


def test_the_simulator_and_the_evaluation_play_the_loops_games() -> None:
    for harry, voldemort in PAIRS[:2]:
        for seed in (0, 7):
            played = play.play_game(CLASSIC, seed, harry, voldemort)
            final = played.game.state
            result = sim.play_game(CLASSIC, seed, harry, voldemort, keep_events=True)
            assert result.events == played.game.events
            assert (result.winner, result.turns) == (final.winner or "voldemort", final.turn)
            traced = play_traced("classic", seed, harry, voldemort)
            assert (traced.win, traced.turns) == (final.winner == "harry", final.turn)
            assert len(traced.entropy) == sum(isinstance(e, HarryMoved) for e in result.events)


def test_self_play_over_a_store_plays_the_loops_game() -> None:
    store = MemoryStore()
    seats = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="reference"),
    }
    start_game(store, "g", CLASSIC, 4, seats)  # type: ignore[arg-type]
    final = play_to_end(store, "g")
    assert final.state == play.play_game(CLASSIC, 4, "planner", "reference").game.state


def test_each_step_is_seen_after_the_game_moved_and_the_truth_is_the_state_decided_on() -> None:
    game = play.new_game(CLASSIC, 3)
    seen: list[play.Step] = []
    truths: list[GameState] = []

    class Watcher:
        """Harry, who looks at the truth (as `oracle` does) when he decides."""

        name = "watcher"

        def __init__(self) -> None:
            self.inner = HARRY_BRAINS.create("naive", CLASSIC)

        def decide(self, view: HarryView, stream: random.Random) -> object:
            truths.append(game.truth())
            return self.inner.decide(view, stream)

    def on_step(step: play.Step) -> None:
        assert game.state is step.state and game.events[-1] is step.event
        seen.append(step)

    voldemort = VOLDEMORT_BRAINS.create("reference", CLASSIC)
    play.play(game, Watcher(), voldemort, on_step=on_step)  # type: ignore[arg-type]
    assert len(seen) == len(game.events) - 1 and game.state.over
    for before, after in itertools.pairwise(seen):
        assert after.before is before.state
    harry_steps = [s for s in seen if s.seat == "harry"]
    assert [s.before for s in harry_steps] == truths
    assert all(isinstance(s.view, HarryView) for s in harry_steps)
    assert all(s.seat == "voldemort" for s in seen if not isinstance(s.event, HarryMoved))


def test_an_illegal_move_raises_and_changes_nothing() -> None:
    class Stubborn:
        name = "stubborn"

        def decide(self, view: HarryView, stream: random.Random) -> Search:
            return Search(location="nowhere")

    game = play.new_game(CLASSIC, 0)
    before = game.state
    voldemort = VOLDEMORT_BRAINS.create("passive", CLASSIC)
    with pytest.raises(IllegalAction):
        play.play_turn(before, Stubborn(), voldemort)
    assert game.state is before and game.state == engine.new_game(CLASSIC, 0)[0]


def test_decide_uses_the_seats_view_and_the_turns_stream() -> None:
    state = play.new_game(CLASSIC, 9).state
    brain = HARRY_BRAINS.create("naive", CLASSIC)
    expected = HARRY_BRAINS.create("naive", CLASSIC).decide(
        harry_view(state), rng.stream(9, "harry", state.turn)
    )
    assert play.decide(brain, state, "harry") == expected
