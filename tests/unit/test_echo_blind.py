"""The fourth rate, `plant_blind` (docs/ECHO.md): decoys planted at the top-evidence free
location before any positive there, one definition with or without the events, its
learned model `learned-greedy` (the filter's `greedy` placement) and what it changes."""

from __future__ import annotations

import numpy as np
import pytest

from horcrux.belief.bayes import AdversaryModel, BayesBelief
from horcrux.echo.extract import decoy_placements, extract
from horcrux.echo.use import rate_models
from horcrux.models import HarryRecord, Observation, Search
from horcrux.rules import CLASSIC
from horcrux_tools.echo.season import play


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_decoy_heavy_plants_every_decoy_at_the_top_evidence_either_blind_or_by_the_rule(
    seed: int,
) -> None:
    played = play(CLASSIC, seed, "decoy-heavy", None, "g")
    placed = decoy_placements(played.events)
    assert len(placed) == len(played.summary.decoys) == CLASSIC.decoys
    assert all(p.rule_top != p.blind for p in placed)  # top evidence: one or the other
    assert placed[0].blind  # turn 1: no evidence above 0 anywhere free yet
    # compaction stores both verdicts on the summary, so a rebuild reads the same rates
    assert [d.at_blind_top for d in played.summary.decoys] == [p.blind for p in placed]
    assert [d.at_rule_top for d in played.summary.decoys] == [p.rule_top for p in placed]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reference_never_plants_blind(seed: int) -> None:
    played = play(CLASSIC, seed, "reference", None, "g")
    placed = decoy_placements(played.events)
    assert placed and not any(p.blind for p in placed)
    assert all(p.rule_top for p in placed)


def test_plant_blind_has_one_definition_with_or_without_the_events() -> None:
    played = play(CLASSIC, 4, "decoy-heavy", None, "g")

    from_summary = [e.success for e in extract(played.summary, 1.0) if e.subject == "plant_blind"]
    bare = played.summary.model_copy(
        update={
            "decoys": tuple(
                d.model_copy(update={"at_blind_top": None}) for d in played.summary.decoys
            )
        }
    )
    from_events = [
        e.success for e in extract(bare, 1.0, events=played.events) if e.subject == "plant_blind"
    ]
    assert from_summary == from_events == [p.blind for p in decoy_placements(played.events)]
    # a record written before the field, without events: no experience, never a guess
    assert not [e for e in extract(bare, 1.0) if e.subject == "plant_blind"]


def test_the_blind_rate_adds_the_greedy_model_with_its_share_of_the_static_prior() -> None:
    base = {"relocates": 0.0, "immediate": None, "plant_top": 0.2}
    plain = rate_models(base)
    assert plain is not None and [m.name for m in plain] == ["trigger", "static"]
    assert rate_models({**base, "plant_blind": 0.0}) == plain
    models = rate_models({**base, "plant_blind": 0.8})
    assert models is not None
    by = {m.name: m for m in models}
    assert set(by) == {"trigger", "static", "greedy"}
    rest = plain[1].prior
    assert by["greedy"].prior == round(rest * 0.8, 4)
    assert by["static"].prior == round(rest * 0.2, 4)
    assert by["greedy"].placement == "greedy" and by["greedy"].motion == "static"
    assert by["greedy"].plant == 1.0
    # the counter baseline's three rates never bring it
    assert "greedy" not in {m.name for m in rate_models({**base}) or ()}


def test_the_greedy_placement_expects_a_decoy_before_any_positive() -> None:
    evidence = AdversaryModel("e", "static", plant=1.0, placement="evidence")
    greedy = AdversaryModel("g", "static", plant=1.0, placement="greedy")
    first, second = CLASSIC.locations[0], CLASSIC.locations[1]
    record = HarryRecord(
        turn=1,
        action=Search(location=first),
        observations=(Observation(kind="search", location=first, outcome="negative"),),
    )
    beliefs = {}
    for model in (evidence, greedy):
        b = BayesBelief(CLASSIC, models=(model,))
        b.update(record)
        beliefs[model.name] = b.decoy_probability()
    # no evidence above 0 anywhere: the planting rule expects nothing ...
    assert np.allclose(beliefs["e"], 0.0)
    # ... a greedy planter puts it at the top-evidence free location: evidence 0 beats the
    # negative searched one, first in board order on ties
    assert beliefs["g"][1] > 0.5 and beliefs["g"][0] < 1e-6  # the searched one: last
    assert int(np.argmax(beliefs["g"])) == CLASSIC.locations.index(second)
