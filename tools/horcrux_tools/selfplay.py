"""The reference turn loop over the port: load the snapshot, decide, commit. Nothing else.

This is what an AI-turn Lambda does once per move, and what the contract tests and the
benchmark play whole games with. It never reads the event log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from horcrux import engine, play
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.models import AnyAction, Seat
from horcrux.rules import RuleSet
from horcrux.store.port import GameSnapshot, GameStore, SeatInfo, new_snapshot

BeliefHook = Callable[[GameSnapshot, GameSnapshot], tuple[dict[str, bytes], Any] | None]
"""(before, after-without-belief) -> (beliefs to store, belief point) or None."""


def start_game(
    store: GameStore,
    game_id: str,
    rules: RuleSet,
    seed: int,
    seats: dict[Seat, SeatInfo],
    *,
    now: float | None = None,
    ttl_seconds: int | None = None,
) -> GameSnapshot:
    """Create a game: its version-0 snapshot and its `game_started` event."""
    state, started = engine.new_game(rules, seed)
    snapshot = new_snapshot(game_id, state, seats, now=now, ttl_seconds=ttl_seconds)
    return store.create_game(snapshot, started)


def play_move(
    store: GameStore,
    game_id: str,
    decide: Callable[[GameSnapshot], AnyAction],
    belief: BeliefHook | None = None,
) -> GameSnapshot:
    """One move: one load, one decision, one commit (Conflict if someone moved first)."""
    before = store.load(game_id)
    state, event = engine.apply(before.state, decide(before))
    after = before.advanced(state)
    if belief is not None:
        update = belief(before, after)
        if update is not None:
            after = before.advanced(state, beliefs=update[0], belief_point=update[1])
    return store.commit_turn(before.version, after, event)


def play_to_end(
    store: GameStore,
    game_id: str,
    *,
    belief: BeliefHook | None = None,
    on_move: Callable[[GameSnapshot], None] | None = None,
) -> GameSnapshot:
    """Play an all-AI game to its end, brains built from the seats' specs: `play_move`
    (a commit per move) with the one game loop's decision (`horcrux.play.decide`)."""
    snap = store.load(game_id)
    rules = snap.state.rules
    harry = HARRY_BRAINS.create(snap.seats["harry"].brain or "naive", rules, stored=True)
    voldemort = VOLDEMORT_BRAINS.create(snap.seats["voldemort"].brain or "reference", rules)

    def decide(s: GameSnapshot) -> AnyAction:
        if s.state.phase == "harry":
            return play.decide(harry, s.state, "harry")
        return play.decide(voldemort, s.state, "voldemort")

    while not snap.state.over:
        snap = play_move(store, game_id, decide, belief)
        if on_move is not None:
            on_move(snap)
    return snap
