"""Voldemort's brains, the naive and oracle Harrys, and the brain registry."""

from __future__ import annotations

import math
import random

import pytest
from conftest import make_state
from test_views import walk

from horcrux import engine
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS, BrainOptions
from horcrux.agents.harry_baselines import NaiveHarry
from horcrux.agents.voldemort import EvidenceFold, ReferenceVoldemort, public_evidence
from horcrux.errors import HorcruxError, UnknownBrain
from horcrux.models import Attack, HarryRecord, Observation, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC, STANDARD
from horcrux.views import harry_view, voldemort_view


def record(turn: int, location: str, outcome: str, kind: str = "search") -> HarryRecord:
    action = Search(location=location) if kind == "search" else Attack(location=location)
    obs = Observation(
        location=location,
        kind=kind,  # type: ignore[arg-type]
        outcome=outcome,  # type: ignore[arg-type]
        sensor="harry" if kind == "search" else None,
    )
    return HarryRecord(turn=turn, action=action, observations=(obs,))


def voldemort_to_move(history: list[HarryRecord], **changes: object) -> object:
    turn = history[-1].turn if history else 1
    state = make_state(phase="voldemort", turn=turn, history=tuple(history), **changes)
    return voldemort_view(state)


# ---------------------------------------------------------------- reference Voldemort
def test_reference_relocates_after_a_positive_at_a_real_horcrux() -> None:
    view = voldemort_to_move([record(1, "hogwarts", "positive")])
    move = ReferenceVoldemort(CLASSIC).decide(view, random.Random(1))  # type: ignore[arg-type]
    assert isinstance(move, Relocate) and move.from_location == "hogwarts"
    assert move.to_location in view.free_locations()  # type: ignore[attr-defined]
    targets = {
        ReferenceVoldemort(CLASSIC).decide(view, random.Random(s)).to_location  # type: ignore[union-attr,arg-type]
        for s in range(300)
    }
    assert targets == set(view.free_locations())  # type: ignore[attr-defined]  # uniform over free


def test_reference_ignores_an_old_positive() -> None:
    history = [record(1, "hogwarts", "positive"), record(2, "the-burrow", "negative")]
    move = ReferenceVoldemort(CLASSIC).decide(voldemort_to_move(history), random.Random(1))  # type: ignore[arg-type]
    assert not isinstance(move, Relocate)


def test_reference_plants_where_public_evidence_is_highest() -> None:
    # a positive at an empty location: no relocation, but the best free location gets a decoy
    history = [record(1, "the-burrow", "positive"), record(2, "hogsmeade", "positive"),
               record(3, "hogsmeade", "positive")]  # fmt: skip
    move = ReferenceVoldemort(CLASSIC).decide(voldemort_to_move(history), random.Random(1))  # type: ignore[arg-type]
    assert move == PlantDecoy(location="hogsmeade")


def test_reference_relocation_needs_charges_then_falls_to_a_decoy() -> None:
    view = voldemort_to_move([record(1, "hogwarts", "positive")], relocations_left=0)
    move = ReferenceVoldemort(CLASSIC).decide(view, random.Random(1))  # type: ignore[arg-type]
    # hogwarts holds a Horcrux (not free): the best free location has evidence 0, so pass
    assert move == Pass()


def test_reference_passes_without_positive_evidence_or_charges() -> None:
    neg = [record(1, "the-burrow", "negative")]
    assert ReferenceVoldemort(CLASSIC).decide(voldemort_to_move(neg), random.Random(0)) == Pass()  # type: ignore[arg-type]
    pos = [record(1, "the-burrow", "positive")]
    view = voldemort_to_move(pos, decoys_left=0)
    assert ReferenceVoldemort(CLASSIC).decide(view, random.Random(0)) == Pass()  # type: ignore[arg-type]


def test_public_evidence_sums_log_ratios_and_resets_on_attack() -> None:
    d, f = 0.8, 0.15
    history = (record(1, "hogsmeade", "positive"), record(2, "hogsmeade", "negative"),
               record(3, "the-burrow", "positive"), record(4, "the-burrow", "empty", "attack"),
               record(5, "the-burrow", "negative"))  # fmt: skip
    score = public_evidence(CLASSIC, history)
    assert score["hogsmeade"] == pytest.approx(math.log(d / f) + math.log((1 - d) / (1 - f)))
    assert score["the-burrow"] == pytest.approx(math.log((1 - d) / (1 - f)))
    assert score["hogwarts"] == 0.0


def test_evidence_fold_matches_public_evidence_as_the_history_grows() -> None:
    """Folded record by record, the scores are `public_evidence`'s floats exactly; a
    history that does not extend the last one (another game) starts over."""
    rng = random.Random(5)
    locs = CLASSIC.locations
    history: tuple[HarryRecord, ...] = ()
    fold = EvidenceFold(CLASSIC)
    for turn in range(1, 40):
        kind = "attack" if rng.random() < 0.15 else "search"
        outcome = (
            rng.choice(["empty", "decoy"])
            if kind == "attack"
            else rng.choice(["positive", "negative"])
        )
        history = (*history, record(turn, rng.choice(locs[:5]), outcome, kind))
        if turn % 3:  # some turns are never read: the fold catches up
            assert fold(history) == public_evidence(CLASSIC, history)
    other = (*history[:4], record(5, locs[9], "positive"))
    assert fold(other) == public_evidence(CLASSIC, other)
    assert fold(history[:2]) == public_evidence(CLASSIC, history[:2])
    scores = fold(history)
    scores[locs[0]] = 99.0  # the caller's copy: the fold's own scores are untouched
    assert fold(history) == public_evidence(CLASSIC, history)


def test_reference_voldemort_reads_the_evidence_through_its_fold() -> None:
    """Over whole games, the reference folding the evidence turn by turn plays what a
    fresh one (reading the whole history at once) plays on every view."""
    decoys = 0
    for seed in range(15):
        brain = ReferenceVoldemort(CLASSIC)
        for state in walk("classic", seed, seed):
            if state.phase == "voldemort":
                view = voldemort_view(state)
                move = brain.decide(view, random.Random(seed))
                assert move == ReferenceVoldemort(CLASSIC).decide(view, random.Random(seed))
                decoys += isinstance(move, PlantDecoy)
    assert decoys > 0  # the evidence decided some of those moves


def test_passive_and_random_voldemort_play_legal_moves() -> None:
    rules = STANDARD
    for name in ("passive", "random"):
        for seed in range(20):
            brain = VOLDEMORT_BRAINS.create(name, rules)
            for state in walk("standard", seed, seed):
                if state.phase == "voldemort":
                    move = brain.decide(voldemort_view(state), random.Random(seed))
                    engine.check(state, move)  # raises if illegal
                    if name == "passive":
                        assert move == Pass()


# ---------------------------------------------------------------- naive Harry
def naive_view(history: list[HarryRecord]) -> object:
    return harry_view(make_state(turn=len(history) + 1, history=tuple(history)))


def test_naive_attacks_at_net_two() -> None:
    h = [record(1, "hogwarts", "positive"), record(2, "hogwarts", "positive")]
    assert NaiveHarry().decide(naive_view(h), random.Random(0)) == Attack(location="hogwarts")  # type: ignore[arg-type]


def test_naive_searches_again_at_net_one() -> None:
    h = [record(1, "hogwarts", "positive"), record(2, "azkaban", "negative")]
    assert NaiveHarry().decide(naive_view(h), random.Random(0)) == Search(location="hogwarts")  # type: ignore[arg-type]


def test_naive_explores_only_locations_his_memory_does_not_mention() -> None:
    h = [record(1, "hogwarts", "negative"), record(2, "azkaban", "positive"),
         record(3, "azkaban", "negative")]  # fmt: skip
    seen = {NaiveHarry().decide(naive_view(h), random.Random(s)).location for s in range(400)}  # type: ignore[arg-type,union-attr]
    assert seen == set(CLASSIC.locations) - {"hogwarts", "azkaban"}


def test_naive_forgets_beyond_his_window_and_resets_after_an_attack() -> None:
    old_hits = [record(1, "hogwarts", "positive"), record(2, "hogwarts", "positive")]
    filler = [record(t, "the-burrow", "negative") for t in range(3, 11)]
    brain = NaiveHarry(window=8)
    assert "hogwarts" not in brain.tally(naive_view(old_hits + filler))  # type: ignore[arg-type]
    assert NaiveHarry(window=10).tally(naive_view(old_hits + filler))["hogwarts"] == 2  # type: ignore[arg-type]
    after_attack = [*old_hits, record(3, "hogwarts", "decoy", "attack")]
    assert brain.tally(naive_view(after_attack))["hogwarts"] == 0  # type: ignore[arg-type]
    again = [*after_attack, record(4, "hogwarts", "positive")]
    assert brain.tally(naive_view(again))["hogwarts"] == 1  # type: ignore[arg-type]


def test_naive_ties_go_to_the_freshest() -> None:
    h = [record(1, "hogwarts", "positive"), record(2, "azkaban", "positive")]
    assert NaiveHarry().decide(naive_view(h), random.Random(0)) == Search(location="azkaban")  # type: ignore[arg-type]


# ---------------------------------------------------------------- oracle and registry
def test_oracle_needs_the_truth_and_is_not_for_seats() -> None:
    with pytest.raises(HorcruxError, match="simulation only"):
        HARRY_BRAINS.create("oracle", CLASSIC)
    with pytest.raises(UnknownBrain, match="unknown harry brain 'oracle'"):
        HARRY_BRAINS.create("oracle", CLASSIC, for_seat=True)
    state = make_state()
    oracle = HARRY_BRAINS.create("oracle", CLASSIC, truth=lambda: state)
    assert oracle.decide(harry_view(state), random.Random(0)) == Attack(location="azkaban")


def test_registry_errors_name_the_known_brains() -> None:
    with pytest.raises(UnknownBrain, match=r"known: .*naive"):
        HARRY_BRAINS.create("clever", CLASSIC)
    with pytest.raises(UnknownBrain, match="whole number"):
        HARRY_BRAINS.create("naive:eight", CLASSIC)
    with pytest.raises(UnknownBrain, match="at least 1"):
        HARRY_BRAINS.create("naive:0", CLASSIC)
    assert HARRY_BRAINS.create("naive:16", CLASSIC).window == 16  # type: ignore[attr-defined]


def test_third_party_brains_register_by_name() -> None:
    class Always:
        name = "always-hogwarts"

        def decide(self, view: object, rng: random.Random) -> Search:
            return Search(location="hogwarts")

    @HARRY_BRAINS.register("always-hogwarts", description="test brain")
    def factory(options: BrainOptions) -> Always:
        return Always()

    try:
        assert "always-hogwarts" in HARRY_BRAINS.names(seat_only=True)
        brain = HARRY_BRAINS.create("always-hogwarts", CLASSIC)
        assert brain.decide(harry_view(make_state()), random.Random(0)) == Search(
            location="hogwarts"
        )
    finally:
        HARRY_BRAINS._entries.pop("always-hogwarts")
