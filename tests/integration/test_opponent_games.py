"""Who the opponent is, on whole games (the games half of `unit/test_opponent.py`): each
family policy's exact likelihood of a game's moves (`agents.family_fit`), the cross-game
posterior with "none of these" (`echo.opponent`), what memory plays from it and how it
says so (docs/ECHO.md, "Who the opponent is")."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest
from api_fixtures import moto_tables

from horcrux import compaction
from horcrux import play as loop
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.family import draw
from horcrux.agents.family_fit import (
    TRIGGER_CELLS,
    GameFit,
    cell_of,
    fit_game,
    params_of,
)
from horcrux.agents.particle_harry import ParticleHarry
from horcrux.agents.planner import PlannerHarry
from horcrux.belief.bayes import DEFAULT_MODE, MODES
from horcrux.echo import opponent as who
from horcrux.echo import opponent_words as words
from horcrux.echo import ops, persist, predictive
from horcrux.echo.corrections import add_correction
from horcrux.echo.model import Correction, EchoMemory, Opponent
from horcrux.echo.pin import decode_pin, encode_pin
from horcrux.echo.use import MemoryPlan, memory_line, memory_plan
from horcrux.models import HarryMoved, VoldemortMoved
from horcrux.rules import CLASSIC
from horcrux.service import ECHO_KEY, GameService
from horcrux.service.ai import make_brain
from horcrux.store import MemoryStore
from horcrux.store.port import AnyEvent, SeatInfo
from horcrux_tools.selfplay import play_to_end, start_game


@cache
def game(voldemort: str, seed: int) -> tuple[AnyEvent, ...]:
    """The events of one game of the default planner against `voldemort`."""
    g = loop.new_game(CLASSIC, seed)
    loop.play(
        g, HARRY_BRAINS.create("planner", CLASSIC), VOLDEMORT_BRAINS.create(voldemort, CLASSIC)
    )
    return tuple(g.events)


@cache
def fitted(voldemort: str, seed: int) -> tuple[GameFit, float]:
    """A game's fit and its log-likelihood under the default mixture ("none of these")."""
    events = game(voldemort, seed)
    default = MODES[DEFAULT_MODE]
    ll = predictive.move_logliks(CLASSIC, default, events)
    none = predictive.mix_loglik([(m.prior, ll[m.name]) for m in default])
    return fit_game(CLASSIC, events), none


def season(voldemort: str, seeds: range, item: Opponent | None = None) -> Opponent:
    for i, seed in enumerate(seeds):
        fit, none = fitted(voldemort, seed)
        item = who.updated(item, fit, none, float(i + 1))
    assert item is not None
    return item


def grid(fit: GameFit) -> np.ndarray:
    t, d, c = np.array(fit.trigger), np.array(fit.destination), np.array(fit.decoys)
    return t[:, :, None, None] + d.T[None, :, :, None] + c.T[None, :, None, :]


@pytest.mark.parametrize("seed", [37, 9, 1, 5])
def test_the_drawn_policy_explains_its_own_moves_as_well_as_any_policy(seed: int) -> None:
    fit, _ = fitted(f"family:{seed}", seed * 1000)
    lik = grid(fit)
    true = lik[cell_of(draw(seed))]
    assert fit.turns > 10
    assert true == pytest.approx(float(lik.max()), abs=1e-9)
    # and something was ruled out: the moves say something about who he is
    assert float(lik.min()) < true - 5.0


def test_a_policy_the_moves_contradict_pays_the_floor_per_contradiction() -> None:
    fit, _ = fitted("family:37", 37000)  # threshold 0.5 on a moving map: he relocates
    never = TRIGGER_CELLS.index(TRIGGER_CELLS[-1])
    assert TRIGGER_CELLS[never].trigger == "never"
    t, o, _, _ = cell_of(draw(37))
    assert fit.trigger[never][o] < fit.trigger[t][o] + math.log(0.01)


def test_memory_names_a_drawn_opponent_after_a_few_games_and_plays_him() -> None:
    item = season("family:37", range(37000, 37003))
    assert who.p_none(item) < 0.01
    best, weight = words.classes(item, 1)[0]
    assert (best.trigger, best.observer, best.motion) == ("threshold", "bayes-moving", "trigger")
    assert abs(best.threshold - 0.5) <= 0.02 and weight > 0.9
    prior = who.plan_prior(item)
    assert prior is not None and prior.policies[0].trigger == "threshold"
    assert all(w >= who.MIN_WEIGHT for w in prior.weights)
    memory = EchoMemory(agent="planner", opponent="family", items=(item,), games=3)
    plan = memory_plan(memory)
    assert plan is not None and plan.opponent == prior
    found = words.summary(item)
    assert found["plays"] is True
    assert str(found["sentence"]).startswith(
        "Voldemort relocates a Horcrux once a map of Harry's evidence"
    )
    assert "over 3 games" in str(found["sentence"])
    line = memory_line(memory)
    assert line is not None and "he moves a Horcrux once you look about 0.5" in line


def test_none_of_these_wins_against_an_opponent_outside_the_family() -> None:
    item = season("random", range(3))  # moves at random: no policy of the family
    assert who.p_none(item) > 0.99
    assert who.plan_prior(item) is None
    memory = EchoMemory(agent="planner", opponent="random", items=(item,), games=3)
    assert memory_plan(memory) is None  # exactly the default
    found = words.summary(item)
    assert found["plays"] is False and str(found["why"]).startswith("held back")
    assert words.line(item) is None


def test_a_changed_opponent_is_followed() -> None:
    first = season("family:37", range(37000, 37003))
    after = season("family:9", range(9000, 9004), first)  # within 4 games
    best, _ = words.classes(after, 1)[0]
    assert (best.trigger, best.observer) == (draw(9).trigger, draw(9).observer)


def test_the_pin_carries_the_opponent_compactly_and_refuses_a_malformed_one() -> None:
    item = season("family:37", range(37000, 37003))
    prior = who.plan_prior(item)
    assert prior is not None
    plan = MemoryPlan(MODES[DEFAULT_MODE], {}, prior)
    pin = encode_pin(plan, None)
    bare = encode_pin(MemoryPlan(MODES[DEFAULT_MODE]), None)
    assert pin is not None and bare is not None and len(pin) - len(bare) < 40 * len(prior.policies)
    got = decode_pin(pin).opponent
    assert got is not None and got.weights == prior.weights
    assert [cell_of(p) for p in got.policies] == [cell_of(p) for p in prior.policies]
    assert params_of(*cell_of(prior.policies[0])) == who.canonical(prior.policies[0])
    for bad in (b'{"v": 2, "opponent": []}', b'{"v": 2, "opponent": [[0, 0, 0, 0, -1]]}'):
        with pytest.raises((ValueError, TypeError)):
            decode_pin(bad)


# ---------------------------------------------------------------- through the service
FAMILY_SEATS: dict[Any, SeatInfo] = {
    "harry": SeatInfo(kind="ai", brain="planner"),
    "voldemort": SeatInfo(kind="ai", brain="family:37"),
}


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The in-memory store, or DynamoDB on moto (its tables)."""
    if request.param == "memory":
        yield MemoryStore()
    else:
        yield from moto_tables(monkeypatch)


def finished(store: Any, prefix: str, seeds: range, seats: dict[Any, SeatInfo]) -> None:
    """Games of these seeds played to their end by the seats' brains and compacted (the
    end of each writes the scope's memory)."""
    for i, seed in enumerate(seeds):
        start_game(store, f"{prefix}{i}", CLASSIC, seed, dict(seats))
        play_to_end(store, f"{prefix}{i}")
        compaction.compact(store, f"{prefix}{i}")


def test_the_end_of_a_game_names_the_opponent_and_the_next_game_plays_him(store: Any) -> None:
    """Three games end (compaction writes who the opponent is); the fourth game's first
    turn pins him, its Harry plays against him, and the operator's view says so."""
    scope = compaction.scope_of(FAMILY_SEATS)
    assert scope is not None
    finished(store, "f", range(37000, 37003), FAMILY_SEATS)
    memory = persist.load(store, *scope)[0]
    assert memory is not None
    item = memory.opponent_fit()
    assert item is not None and item.games == 3 and who.p_none(item) < 0.01
    service = GameService(store, inline_ai=True)
    start_game(store, "f3", CLASSIC, 37003, dict(FAMILY_SEATS))
    service.dispatch("f3", max_turns=4)
    pin = json.loads(store.load("f3").beliefs[ECHO_KEY])
    top = params_of(*pin["opponent"][0][:4])
    assert (top.trigger, top.observer) == ("threshold", "bayes-moving")
    made = make_brain(store, store.load("f3"), "harry")
    assert isinstance(made.brain, ParticleHarry) and made.brain.default is not None
    view = ops.inspect(store, *scope)
    (shown,) = [i for i in view["items"] if i["level"] == "opponent"]
    assert shown["plays"] is True and shown["games"] == 3
    assert shown["text"].startswith("Voldemort relocates a Horcrux once a map of Harry's evidence")
    assert shown["hypotheses"][0]["p"] > 0.9


def test_a_voldemort_outside_the_family_leaves_the_default_playing(store: Any) -> None:
    seats: dict[Any, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="random"),
    }
    scope = compaction.scope_of(seats)
    assert scope is not None
    finished(store, "r", range(3), seats)
    memory = persist.load(store, *scope)[0]
    assert memory is not None and memory.opponent_fit() is not None
    start_game(store, "r3", CLASSIC, 3, dict(seats))
    made = make_brain(store, store.load("r3"), "harry")
    assert isinstance(made.brain, PlannerHarry)
    assert made.pin is None or "opponent" not in json.loads(made.pin)


def test_a_correction_steers_the_very_next_game() -> None:
    """'He never relocates': with no game played, memory plays against the policies that
    never move a Horcrux at once; without the correction it plays the default."""
    empty = EchoMemory(agent="planner", opponent="family")
    assert memory_plan(empty) is None
    told = add_correction(
        empty, wrong="he relocates", right="he never relocates", subject="relocates", rate=0.0
    )
    plan = memory_plan(told)
    assert plan is not None and plan.opponent is not None
    assert plan.opponent.policies[0].trigger == "never"
    assert sum(
        w
        for p, w in zip(plan.opponent.policies, plan.opponent.weights, strict=True)
        if p.trigger == "never"
    ) > 0.9 * sum(plan.opponent.weights)


def test_a_wrong_correction_is_flagged_and_stops_steering_after_three_games() -> None:
    store = MemoryStore()
    scope = compaction.scope_of(FAMILY_SEATS)
    assert scope is not None
    wrong = add_correction(
        EchoMemory(agent=scope[0], opponent=scope[1]),
        wrong="he relocates",
        right="he never relocates",
        subject="relocates",
        rate=0.0,
    )
    store.put_scope_item(persist.encode_memory(wrong.model_copy(update={"version": 1})), 0)
    (correction,) = [i for i in wrong.items if isinstance(i, Correction)]
    flagged_at = None
    for i in range(4):
        finished(store, f"w{i}-", range(37000 + i, 37001 + i), FAMILY_SEATS)
        memory = persist.load(store, *scope)[0]
        assert memory is not None
        item = memory.opponent_fit()
        assert item is not None
        if flagged_at is None and correction.id in item.contradicted:
            flagged_at = i + 1
    assert flagged_at == who.MIN_GAMES  # as soon as a threshold correction can be
    plan = memory_plan(memory)
    assert plan is not None and plan.opponent is not None
    assert plan.opponent.policies[0].trigger == "threshold"  # the evidence plays
    shown = words.summary(item)
    assert shown["contradicted"] == [correction.id] and "contradict" in str(shown["why"])


@pytest.mark.slow
def test_a_warm_process_plays_the_same_game_as_fresh_brains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memory-playing Harry kept between turns (`service.ai.WARM_GAMES`) plays exactly
    the moves of one built afresh and synced to the view every turn."""
    from horcrux.service import ai

    store = MemoryStore()
    finished(store, "k", range(37000, 37002), FAMILY_SEATS)
    moves = {}
    for game_id, warm in (("warm", ai.WARM_GAMES), ("fresh", 0)):
        monkeypatch.setattr(ai, "WARM_GAMES", warm)
        ai._warm.clear()
        service = GameService(store, inline_ai=True)
        start_game(store, game_id, CLASSIC, 37050, dict(FAMILY_SEATS))
        service.dispatch(game_id, max_turns=200)
        assert store.load(game_id).state.over
        assert "opponent" in json.loads(store.load(game_id).beliefs[ECHO_KEY])
        events = store.events(game_id, limit=1000).events
        moves[game_id] = [e.action for e in events if isinstance(e, HarryMoved | VoldemortMoved)]
    assert len(ai._warm) == 0  # the fresh run kept nothing
    assert moves["warm"] == moves["fresh"] and len(moves["warm"]) > 10
