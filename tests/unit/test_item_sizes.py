"""The hot path's items stay compact and bounded: the same capacity units every turn.

* The binary `GameState` codec round-trips every state of random legal games (Hypothesis:
  all presets and custom rules, allies, decoys, relocations, game-over states), the belief
  point codec round-trips, and items written before these formats still decode.
* For whole games of each kind (people or AIs in either seat, classic and standard,
  planner / naive / reference / random brains), the snapshot item and the event item stay
  under 1 KB at every turn: 1 RCU for the consistent GetItem and 2 + 2 WCU for the
  transactional write, at turn 1 as at turn 50.
* The planner is rebuilt from its view each turn instead of restored from a blob: over
  many games it takes exactly the decisions the restored brain takes.
"""

from __future__ import annotations

import random
from typing import Any, Literal, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from horcrux import engine
from horcrux.agents.legal import legal_harry_actions, legal_voldemort_actions
from horcrux.decisions import DecisionNote
from horcrux.models import (
    Ally,
    AnyAction,
    Attack,
    GameState,
    HarryAction,
    HarryMoved,
    HarryRecord,
    Observation,
    Seat,
    VoldemortAction,
)
from horcrux.rules import (
    ALLY_NAMES,
    CLASSIC,
    LOCATIONS,
    STANDARD,
    AllyName,
    AllyRules,
    RuleSet,
    Sensor,
)
from horcrux.service import GameService, SeatRequest
from horcrux.store import (
    BeliefPoint,
    GameSnapshot,
    MemoryStore,
    SeatInfo,
    capacity,
    mapping,
    wire,
)
from horcrux.store.port import TurnEvent, merge_history, new_snapshot
from horcrux.views import harry_view, voldemort_view

ONE_KB = 1024
TINY = RuleSet(
    name="tiny",
    locations=("attic", "cellar", "garden", "shed", "barn"),
    horcruxes=2,
    max_turns=12,
    attacks=3,
    relocations=2,
    decoys=2,
    allies={
        "ron": AllyRules(rest=1),
        "hermione": AllyRules(rest=0, max_uses=3, sensor=Sensor(d=0.9, f=0.1)),
        "dumbledore": AllyRules(rest=2, max_uses=1),
    },
)
FAKE_CLASSIC = CLASSIC.model_copy(update={"max_turns": 20})
"""Named like a preset but not equal to it: must be stored as a custom rule set."""
RULES = [CLASSIC, STANDARD, TINY, FAKE_CLASSIC]


# ---------------------------------------------------------------- random legal games
def random_move(state: GameState, rnd: random.Random) -> AnyAction:
    """A random legal move, biased towards the rare ones (allies, attacks, Voldemort's)."""
    if state.phase == "harry":
        moves: list[Any] = legal_harry_actions(harry_view(state)).moves()
        special: list[Any] = [m for m in moves if isinstance(m, Ally | Attack)]
    else:
        moves = legal_voldemort_actions(voldemort_view(state)).moves()
        special = [m for m in moves if m.type != "pass"]
    pool = special if special and rnd.random() < 0.5 else moves
    move: AnyAction = rnd.choice(pool)
    return move


def random_game(rules: RuleSet, seed: int, rnd: random.Random) -> list[GameState]:
    state, _ = engine.new_game(rules, seed)
    states = [state]
    while not state.over:
        state, _ = engine.apply(state, random_move(state, rnd))
        states.append(state)
    return states


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rules=st.sampled_from(RULES),
    seed=st.integers(min_value=0, max_value=2**63 - 1),
    rnd=st.randoms(use_true_random=False),
)
def test_the_binary_state_round_trips_every_state_of_random_legal_games(
    rules: RuleSet, seed: int, rnd: random.Random
) -> None:
    states = random_game(rules, seed, rnd)
    assert states[-1].over and states[-1].winner is not None
    for state in states:
        blob = wire.encode_state(state)
        assert blob[0] in (wire.STATE_RAW, wire.STATE_DEFLATE)
        assert wire.decode_state(blob) == state
    if rules in (CLASSIC, STANDARD):
        assert len(wire.encode_state(states[-1])) < 260  # 50 turns: a few bytes each
    else:  # a custom rule set travels as JSON, even one named like a preset
        assert wire.decode_state(wire.encode_state(states[0])).rules == rules


def test_the_legacy_json_state_still_decodes_and_exotic_states_fall_back_to_it() -> None:
    states = random_game(STANDARD, 5, random.Random(5))
    legacy = wire.encode_state_json(states[-1])
    assert legacy[0] == 0x78 and wire.decode_state(legacy) == states[-1]
    huge = RuleSet(name="huge", locations=tuple(f"l{i}" for i in range(300)))
    state, _ = engine.new_game(huge, 1)
    blob = wire.encode_state(state)
    assert blob[0] == 0x78 and wire.decode_state(blob) == state
    with pytest.raises(ValueError):
        wire.decode_state(b"\x7f")


# ---------------------------------------------------------------- the compact tables
def _literal_fields(model: type[BaseModel], out: dict[str, set[Any]]) -> dict[str, set[Any]]:
    """Every `Model.field` with literal values a `model` can hold, as far as the binary
    state reaches: the values its literal types allow (None where the field is optional).
    The rules are stored whole (a preset code, or their JSON), so they are not walked."""

    def walk(name: str, annotation: Any) -> None:
        if annotation is type(None):
            out.setdefault(name, set()).add(None)
        elif get_origin(annotation) is Literal:
            out.setdefault(name, set()).update(get_args(annotation))
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation is not RuleSet and annotation.__name__ not in walked:
                walked.add(annotation.__name__)
                for field, info in annotation.model_fields.items():
                    walk(f"{annotation.__name__}.{field}", info.annotation)
        else:
            for arg in get_args(annotation):
                walk(name, arg)

    walked: set[str] = set()
    walk(model.__name__, model)
    return {name: values for name, values in out.items() if values != {None}}  # str | None


def _harry_action_classes() -> list[type[BaseModel]]:
    (union, *_) = get_args(HarryAction)  # Annotated[Search | Attack | Ally, discriminator]
    return list(get_args(union))


def test_the_compact_tables_cover_every_type_and_value_a_state_can_hold() -> None:
    """A value missing from the binary format's tables would silently store the state in
    the larger JSON format: every literal a `GameState` can hold must be in a table."""
    fields = _literal_fields(GameState, {})
    actions = {
        (cls.model_fields["type"].default, ally)
        for cls in _harry_action_classes()
        for ally in (get_args(AllyName) if "ally" in cls.model_fields else (None,))
    }
    assert set(wire.ACTIONS) == actions  # every Harry action, an ally each
    tables: dict[str, tuple[Any, ...]] = {
        "GameState.phase": wire.PHASES,
        "GameState.winner": wire.WINNERS,
        "GameState.ally_ready_turn": ALLY_NAMES,
        "GameState.ally_uses_left": ALLY_NAMES,
        "Observation.kind": wire.KINDS,
        "Observation.outcome": wire.OUTCOMES,
        "Observation.sensor": wire.SENSORS,
    }
    in_actions = {
        f"{cls.__name__}.{f}" for cls in _harry_action_classes() for f in ("type", "ally")
    }
    unknown = set(fields) - set(tables) - in_actions
    assert not unknown, f"the binary state has no table for {sorted(unknown)}"
    for name, values in fields.items():
        if name in tables:
            assert values <= set(tables[name]), f"{name}: {values - set(tables[name])} missing"
    assert set(get_args(AnyAction)) == set(_harry_action_classes()) | set(
        get_args(get_args(VoldemortAction)[0])
    )  # Voldemort's actions and the events travel as JSON, in the event item's body


def test_a_record_of_every_action_and_observation_is_stored_in_the_binary_format() -> None:
    """From the models' own types: one record per Harry action (each ally), holding every
    observation kind, outcome and sensor; the state must not fall back to JSON."""
    rules = STANDARD
    locs = rules.locations
    fields = _literal_fields(GameState, {})
    observations = [
        Observation(location=locs[i % len(locs)], kind=kind, outcome=outcome, sensor=sensor)
        for i, (kind, outcome, sensor) in enumerate(
            (k, o, s)
            for k in sorted(fields["Observation.kind"])
            for o in sorted(fields["Observation.outcome"])
            for s in fields["Observation.sensor"]
        )
    ]
    history: list[HarryRecord] = []
    for cls in _harry_action_classes():
        for ally in get_args(AllyName) if "ally" in cls.model_fields else (None,):
            if ally is None:
                action: Any = cls.model_validate({"location": locs[0]})
            else:
                n = 2 if ally == "ron" else 1
                action = cls.model_validate({"ally": ally, "locations": locs[:n]})
            for start in range(0, len(observations), 15):
                chunk = tuple(observations[start : start + 15])
                history.append(
                    HarryRecord(turn=len(history) + 1, action=action, observations=chunk)
                )
    state, _ = engine.new_game(rules, 3)
    for phase, winner in (("harry", None), ("over", "harry"), ("over", "voldemort")):
        full = state.model_copy(
            update={"history": tuple(history), "phase": phase, "winner": winner}
        )
        blob = wire.encode_state(full)
        assert blob[0] in (wire.STATE_RAW, wire.STATE_DEFLATE), "fell back to the JSON format"
        assert wire.decode_state(blob) == full


def test_every_stored_format_has_a_decoder_in_its_version_table() -> None:
    state = random_game(CLASSIC, 2, random.Random(2))[-1]
    written = {wire.encode_state(state)[0], wire.encode_state_json(state)[0]}
    raw = bytes([wire.STATE_RAW]) + wire.zlib.decompress(wire.encode_state(state)[1:], -15)
    written.add(raw[0])
    assert written == set(wire.STATE_FORMATS) == {0x01, 0x02, 0x78}
    for code in wire.STATE_FORMATS:
        blob = {0x01: raw, 0x02: wire.encode_state(state), 0x78: wire.encode_state_json(state)}
        assert wire.decode_state(blob[code]) == state
    point = BeliefPoint(turn=3, entropy=2.5, top=(("hogwarts", 0.5),))
    assert set(wire.POINT_FORMATS) == {wire.encode_point(point)[0]}
    with pytest.raises(ValueError, match="unknown belief point format"):
        wire.decode_point(b"\x09\x00")
    with pytest.raises(ValueError, match="unknown state format"):
        wire.decode_state(b"")


top_entry = st.tuples(
    st.one_of(st.sampled_from(LOCATIONS), st.text(min_size=1, max_size=20)),
    st.floats(min_value=0.0, max_value=1.0),
)


@given(
    turn=st.integers(min_value=0, max_value=10_000),
    entropy=st.floats(min_value=0.0, max_value=64.0),
    top=st.lists(top_entry, max_size=3),
)
def test_a_belief_point_round_trips_in_a_few_bytes(
    turn: int, entropy: float, top: list[tuple[str, float]]
) -> None:
    point = BeliefPoint(turn=turn, entropy=entropy, top=tuple(top))
    blob = wire.encode_point(point)
    assert wire.decode_point(blob) == point
    if all(loc in LOCATIONS for loc, _ in top):
        assert len(blob) <= 20


def test_a_snapshot_item_written_before_the_compact_formats_still_decodes() -> None:
    states = random_game(CLASSIC, 9, random.Random(9))
    history = tuple(
        BeliefPoint(turn=t, entropy=3.0 - t / 30, top=(("hogwarts", 0.25),)) for t in range(1, 51)
    )
    snap = new_snapshot("old", states[-1], AI_SEATS, now=1.7e9, ttl_seconds=86400)
    snap = snap.model_copy(update={"belief_history": history, "beliefs": {"harry": b"blob"}})
    item = mapping.encode_snapshot(snap)
    item["state"] = {"B": wire.encode_state_json(snap.state)}
    del item["bpt"]
    item["bhist"] = {"B": wire.encode_history(history)}
    assert mapping.decode_snapshot(item) == snap
    # the replay and compaction merge it with the log's points (none in an old log)
    assert merge_history(snap.belief_history, ()) == history


# ---------------------------------------------------------------- item sizes per turn
AI_SEATS: dict[Seat, SeatInfo] = {
    "harry": SeatInfo(kind="ai", brain="naive"),
    "voldemort": SeatInfo(kind="ai", brain="reference"),
}


class SizedStore(MemoryStore):
    """A MemoryStore noting, per commit, (turn, seat, snapshot bytes, event bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[tuple[int, str, int, int]] = []

    def commit_turn(
        self,
        expected_version: int,
        snapshot: GameSnapshot,
        event: TurnEvent,
        decision: DecisionNote | None = None,
    ) -> GameSnapshot:
        stored = super().commit_turn(expected_version, snapshot, event, decision)
        seat = "harry" if isinstance(event, HarryMoved) else "voldemort"
        self.sizes.append(
            (
                event.turn,
                seat,
                capacity.item_size(mapping.encode_snapshot(snapshot)),
                capacity.item_size(mapping.encode_turn_event(snapshot, event, decision)),
            )
        )
        return stored


def person_move(view_state: GameState, seat: Seat, rnd: random.Random) -> AnyAction:
    """A person's move: Harry never attacks (the game lasts all 50 turns) and calls his
    allies whenever he can (the longest history); Voldemort plays at random."""
    if seat == "harry":
        moves = legal_harry_actions(harry_view(view_state)).moves()
        allies: list[AnyAction] = [m for m in moves if isinstance(m, Ally)]
        searches: list[AnyAction] = [m for m in moves if not isinstance(m, Ally | Attack)]
        return rnd.choice(allies or searches)
    return random_move(view_state, rnd)


GAME_KINDS = [
    pytest.param("standard", "human", "ai:reference", id="person-vs-reference-standard"),
    pytest.param("classic", "human", "ai:reference", id="person-vs-reference-classic"),
    pytest.param("standard", "ai:planner", "human", id="planner-vs-person-standard"),
    pytest.param("classic", "ai:planner", "human", id="planner-vs-person-classic"),
    pytest.param("standard", "human", "human", id="person-vs-person-standard"),
    pytest.param("standard", "ai:planner", "ai:reference", id="planner-vs-reference-standard"),
    pytest.param("classic", "ai:planner:static", "ai:random", id="planner-static-vs-random"),
    pytest.param("classic", "ai:naive", "ai:reference", id="naive-vs-reference-classic"),
    pytest.param("standard", "ai:seed-heuristic", "ai:passive", id="heuristic-vs-passive"),
]


def seat_request(spec: str) -> SeatRequest:
    if spec == "human":
        return SeatRequest(kind="human")
    return SeatRequest(kind="ai", brain=spec.removeprefix("ai:"))


def play_kind(rules: str, harry: str, voldemort: str, seed: int) -> tuple[SizedStore, str]:
    store = SizedStore()
    service = GameService(store, inline_ai=True)
    created = service.create_game(
        seat_request(harry), seat_request(voldemort), rules=rules, seed=seed
    )
    gid = created["game_id"]
    tokens: dict[str, str] = {}
    if created["seat"] is not None:
        tokens[created["seat"]] = created["token"]
    for free in store.load(gid).open_seats:
        tokens[free] = service.join(gid, free)["token"]
    rnd = random.Random(seed)
    snap = store.load(gid)
    while not snap.state.over:
        seat: Seat = "harry" if snap.state.phase == "harry" else "voldemort"
        service.move(gid, tokens[seat], person_move(snap.state, seat, rnd))
        snap = store.load(gid)
    return store, gid


def test_a_person_harry_game_lasts_50_turns_at_constant_units() -> None:
    store, _ = play_kind("standard", "human", "ai:reference", 3)
    turns = [t for t, _, _, _ in store.sizes]
    assert turns[0] == 1 and turns[-1] == 50


# ---------------------------------------------------------------- the planner: rebuilt == restored
def test_the_service_stores_no_planner_blob() -> None:
    store = MemoryStore()
    service = GameService(store)
    created = service.create_game(
        SeatRequest(kind="ai", brain="planner"),
        SeatRequest(kind="ai", brain="reference"),
        rules="standard",
        seed=4,
    )
    gid = created["game_id"]
    outcome = service.play_ai_turn(gid, "harry", 0)
    assert outcome.status == "played"
    after = store.load(gid)
    assert after.beliefs == {} and len(after.belief_history) == 1
    item = store.raw_items(gid)[0]
    assert "belief" not in item and wire.decode_point(item["bpt"]["B"]).turn == 1
