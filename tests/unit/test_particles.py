"""Harry's particle belief over who Voldemort is (`horcrux.agents.particles`) and the brains
on it (`told:SEED`, `untold`): exact outcomes, the searches' evidence, a told belief that
knows the adversary's reaction, repairs, determinism, the held-out guard."""

from __future__ import annotations

import random

import pytest

from horcrux.agents import HARRY_BRAINS
from horcrux.agents.family import FamilyReaction, HeldOutDraw, draw
from horcrux.agents.particle_harry import ParticleHarry, horcrux_information
from horcrux.agents.particles import ParticleBelief, Prior, family_prior, told
from horcrux.errors import UnknownBrain
from horcrux.models import Attack, HarryRecord, Observation, Search
from horcrux.rules import CLASSIC
from horcrux.views import HarryView, public_view

PASSIVE = 6  # dev draws (docs/FAMILY.md): family:6 is the passive member, family:0 the reference
REFERENCE = 0
LOCS = CLASSIC.locations


def _search(turn: int, loc: str, positive: bool) -> HarryRecord:
    outcome = "positive" if positive else "negative"
    return HarryRecord(
        turn=turn,
        action=Search(location=loc),
        observations=(Observation(location=loc, kind="search", outcome=outcome, sensor="harry"),),
    )


def _attack(turn: int, loc: str, outcome: str) -> HarryRecord:
    return HarryRecord(
        turn=turn,
        action=Attack(location=loc),
        observations=(Observation(location=loc, kind="attack", outcome=outcome),),  # type: ignore[arg-type]
    )


def _view(history: tuple[HarryRecord, ...]) -> HarryView:
    attacks = sum(1 for r in history for o in r.observations if o.kind == "attack")
    destroyed = sum(1 for r in history for o in r.observations if o.outcome == "destroyed")
    return HarryView(
        rules=CLASSIC,
        turn=len(history) + 1,
        phase="harry",
        attacks_left=CLASSIC.attacks - attacks,
        horcruxes_destroyed=destroyed,
        horcruxes_left=CLASSIC.horcruxes - destroyed,
        allies={},
        history=history,
    )


def _fed(prior: Prior, records: list[HarryRecord], count: int = 256) -> ParticleBelief:
    belief = ParticleBelief(CLASSIC, prior, count)
    belief.sync(_view(tuple(records)))
    return belief


def test_a_fresh_belief_is_the_uniform_placement() -> None:
    m = ParticleBelief(CLASSIC, told(PASSIVE), 512).horcrux_marginals()
    assert sum(m) == pytest.approx(CLASSIC.horcruxes)
    assert max(m) < 0.35 and min(m) > 0.1  # 3 / 15 = 0.2 each, up to sampling


def test_positive_searches_raise_the_searched_location() -> None:
    records = [_search(t, LOCS[4], True) for t in (1, 2, 3)]
    m = _fed(told(PASSIVE), records).horcrux_marginals()
    assert m[4] > 0.9
    assert max(v for i, v in enumerate(m) if i != 4) < 0.3


def test_negative_searches_lower_it() -> None:
    records = [_search(t, LOCS[4], False) for t in (1, 2, 3)]
    m = _fed(told(PASSIVE), records).horcrux_marginals()
    assert m[4] < 0.05


def test_attack_outcomes_are_exact() -> None:
    records = [
        _search(1, LOCS[2], True),
        _attack(2, LOCS[2], "destroyed"),
        _attack(3, LOCS[5], "empty"),
    ]
    belief = _fed(told(PASSIVE), records)
    m = belief.horcrux_marginals()
    assert m[2] == 0.0 and m[5] == 0.0  # repairs never move a Horcrux where an attack looked
    assert sum(m) == pytest.approx(CLASSIC.horcruxes - 1)
    assert all(len(p.horcruxes) == 2 for p in belief.particles)


def test_a_contradicted_belief_is_repaired_not_lost() -> None:
    # one particle cannot hold every placement: an attack that destroys where it holds none
    belief = ParticleBelief(CLASSIC, told(PASSIVE), 1)
    loc = next(loc for loc in LOCS if loc not in belief.particles[0].horcruxes)
    belief.sync(_view((_attack(1, loc, "destroyed"),)))
    assert belief.repaired == 1
    assert belief.particles[0].weight == pytest.approx(1.0)
    assert loc not in belief.particles[0].horcruxes
    assert sum(belief.horcrux_marginals()) == pytest.approx(2.0)


def test_a_told_belief_knows_the_reaction_to_a_positive() -> None:
    """The reference moves a Horcrux the moment a search finds it: told so, Harry reads one
    positive as "it was here, it is gone", where against the passive member it stays."""
    records = [_search(1, LOCS[7], True)]
    passive = _fed(told(PASSIVE), records).horcrux_marginals()
    reacting = _fed(told(REFERENCE), records).horcrux_marginals()
    assert passive[7] > 0.4
    assert reacting[7] < 0.1


def test_the_belief_is_a_function_of_the_record() -> None:
    records = [_search(1, LOCS[3], True), _search(2, LOCS[3], True), _search(3, LOCS[9], False)]
    records += [_attack(4, LOCS[3], "empty"), _search(5, LOCS[11], True)]
    prior = family_prior(16)
    one, two = _fed(prior, records, 128), _fed(prior, records, 128)
    assert one.horcrux_marginals() == two.horcrux_marginals()
    assert one.decoy_marginals() == two.decoy_marginals()
    assert one.log_evidence == two.log_evidence
    # turn by turn or all at once: the same belief
    stepwise = ParticleBelief(CLASSIC, prior, 128)
    for n in range(1, len(records) + 1):
        stepwise.sync(_view(tuple(records[:n])))
    assert stepwise.horcrux_marginals() == one.horcrux_marginals()


def test_a_public_view_counts_the_record() -> None:
    history = (
        _search(1, LOCS[0], True),
        _attack(2, LOCS[0], "destroyed"),
        _attack(3, LOCS[1], "empty"),
    )
    public = public_view(_view(history), history)
    assert (public.turn, public.attacks_left, public.horcruxes_left) == (3, 5, 2)
    assert public.phase == "voldemort" and public.horcrux_locations == ()


def test_the_priors() -> None:
    assert told(37).policies == (draw(37),)
    with pytest.raises(HeldOutDraw):
        told(100_001)
    prior = family_prior(32)
    assert prior == family_prior(32)  # the same policies every time
    assert len(prior.policies) == 32 and all(p.seed == -1 for p in prior.policies)
    assert len({p.trigger for p in prior.policies}) >= 4


def test_a_reaction_clone_shares_the_record_and_owns_its_pending_moves() -> None:
    reaction = FamilyReaction(CLASSIC, draw(5))  # positive+2: pending moves
    reaction.pending["hogwarts"] = 3
    twin = reaction.clone()
    assert twin.evidence is reaction.evidence and twin.looked is reaction.looked
    twin.pending["azkaban"] = 4
    assert reaction.pending == {"hogwarts": 3}


def test_information_favours_the_uncertain_location() -> None:
    info = horcrux_information([0.5, 0.0, 1.0, 0.2], [0.0, 0.0, 0.0, 0.0], 0.8, 0.15)
    assert info[1] == 0.0 and info[2] == 0.0
    assert info[0] > info[3] > 0.0


def test_brain_specs() -> None:
    brain = HARRY_BRAINS.create("told:37:64", CLASSIC)
    assert isinstance(brain, ParticleHarry) and brain.name == "told:37"
    assert brain.belief.count == 64 and brain.default is None
    hedged = HARRY_BRAINS.create("untold:32:8:hedged", CLASSIC)
    assert isinstance(hedged, ParticleHarry) and hedged.default is not None
    assert len(hedged.belief.prior.policies) == 8
    for bad in ("untold:x", "untold:32:8:maybe", "told:-1", "told:3:x"):
        with pytest.raises(UnknownBrain):
            HARRY_BRAINS.create(bad, CLASSIC)
    with pytest.raises(UnknownBrain):
        HARRY_BRAINS.create("told:100001", CLASSIC)
    assert "told" not in HARRY_BRAINS.names(seat_only=True)


def test_the_told_brain_decides_on_its_belief() -> None:
    brain = HARRY_BRAINS.create("told:6:128", CLASSIC)
    assert isinstance(brain, ParticleHarry)
    history = tuple(_search(t, LOCS[4], True) for t in (1, 2, 3, 4))
    move = brain.decide(_view(history), random.Random(0))
    assert move == Attack(location=LOCS[4])  # 0.99 is past every threshold
    assert brain.stats()["actions"] == {"attack": 1}


def test_the_belief_reads_as_a_map() -> None:
    belief = _fed(told(PASSIVE), [_search(t, LOCS[4], True) for t in (1, 2, 3)])
    occupancy = belief.occupancy()
    assert list(occupancy) == list(LOCS) and occupancy[LOCS[4]] > 0.9
    assert belief.top(2)[0][0] == LOCS[4] and len(belief.top(2)) == 2
    fresh = ParticleBelief(CLASSIC, told(PASSIVE), 64)
    assert 2.0 < belief.entropy() < fresh.entropy() < 3.91  # log2 15 = 3.91 bits at most
