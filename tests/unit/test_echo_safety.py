"""ECHO never silently loses (issue 16, items 2, 3 and 6): the leak guard quarantines and
cannot lock a scope, at any size; per-level budgets keep room for experience and count
what they evict; a rebuild is lossless or says what it could not rebuild, and keeps frozen
beliefs frozen; one definition of `plant_top`; evidence revises corrections; the config
file is honoured and checked; the hours clock is reachable; confirming evidence and
recall reinforce."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import Clock
from test_echo import PLANNER_SEATS, fresh, season_of, summary

from horcrux import compaction
from horcrux.compaction_records import CountingMetrics, compaction_record_handler
from horcrux.echo import Belief, Correction, EchoMemory, Experience, consolidate, persist
from horcrux.echo.config import EchoConfigError, config_path, default_config, load_config
from horcrux.echo.corrections import (
    MemoryFull,
    add_correction,
    confirm_correction,
    retire_correction,
)
from horcrux.echo.extract import extract
from horcrux.rules import CLASSIC
from horcrux.store import MemoryStore
from horcrux_tools.selfplay import play_to_end, start_game

CFG = default_config()


def _faded(n: int) -> list[Experience]:
    """`n` unprotected experiences last touched at game 0 with a one-game half-life: they
    fade out at the next consolidation (fewer than 5 `note`s form no belief)."""
    return [
        Experience(
            id=f"old{i}",
            subject="note",
            text=f"an old experience {i}",
            created=0.0,
            last_access=0.0,
            life=1.0,
            success=True,
            game_id="old",
        )
        for i in range(n)
    ]


# ---------------------------------------------------------------- the leak guard
def test_a_leak_guard_trip_quarantines_and_the_scope_keeps_learning() -> None:
    memory = season_of([summary(f"w{i}", decoys_away=2) for i in range(6)])
    base = len(memory.items)
    assert base >= 5
    memory = memory.model_copy(update={"items": (*memory.items, *_faded(4))})
    results = []
    for g in range(40):
        result = consolidate(memory, summary(f"n{g}", decoys_away=1))
        results.append(result)
        memory = result.memory
    first = results[0]
    assert first.leaked and first.dropped >= 4
    assert {q.item.id for q in memory.quarantine} >= {f"old{i}" for i in range(4)}
    assert all(q.reason == "faded" for q in memory.quarantine if q.item.id.startswith("old"))
    assert sum(r.leaked for r in results) < 5, "the guard locked the scope"
    # what the last game brought is learned (in an experience or a belief)
    assert memory.last_game == "n39" and memory.games == 46
    assert memory.items != results[-2].memory.items, "the last game changed nothing"
    assert memory.counters["quarantined"] == sum(r.dropped for r in results if r.leaked)


def test_the_leak_guard_works_on_a_small_scope() -> None:
    memory = fresh().model_copy(update={"items": tuple(_faded(3)), "games": 50})
    result = consolidate(memory, summary("small"))
    assert result.leaked
    assert sorted(q.item.id for q in result.memory.quarantine) == ["old0", "old1", "old2"]


# ---------------------------------------------------------------- budgets
def _with_corrections(n: int) -> EchoMemory:
    corrections = tuple(
        Correction(
            id=f"c{i}",
            subject="note",
            text=f"note {i}",
            created=0.0,
            last_access=0.0,
            life=50.0,
            wrong=f"w{i}",
            right=f"r{i}",
            valid_from=0.0,
        )
        for i in range(n)
    )
    return fresh().model_copy(update={"items": corrections})


def test_a_hundred_corrections_do_not_evict_new_experience() -> None:
    memory = _with_corrections(100)
    for g in range(3):
        result = consolidate(memory, summary(f"x{g}", immediate=1, decoys_away=1))
        memory = result.memory
        assert not result.leaked
    kept = [i for i in memory.items if not isinstance(i, Correction)]
    assert kept, "every new experience was evicted by the corrections"
    assert memory.of_level("experience") or memory.of_level("belief"), "nothing was learned"
    assert len(memory.of_level("correction")) == 100  # protected, never evicted


def test_a_new_correction_beyond_the_budget_is_refused() -> None:
    memory = _with_corrections(CFG.budget("correction"))
    with pytest.raises(MemoryFull, match="corrections"):
        add_correction(memory, wrong="a", right="b")


def test_evictions_are_counted_and_reported_as_a_metric() -> None:
    tight = replace(
        CFG,
        budgets=(
            ("experience", 3),
            ("belief", 25),
            ("skill", 10),
            ("correction", 25),
        ),
        max_drop_share=1.0,
    )
    memory = fresh()
    evicted = 0
    for g in range(5):
        result = consolidate(memory, summary(f"e{g}", immediate=1, decoys_away=2), config=tight)
        memory = result.memory
        evicted += result.evicted.get("experience", 0)
        assert len(memory.of_level("experience")) <= 3
    assert evicted > 0 and memory.counters["evicted:experience"] == evicted
    # the record handler turns a consolidation's evictions into `MemoryEvicted`


def test_the_record_handler_emits_memory_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
        DynamoDBRecord,
    )
    from test_compaction import final_record

    store = MemoryStore()
    tight = replace(
        CFG,
        budgets=(("experience", 1), ("belief", 1), ("skill", 1), ("correction", 1)),
        max_drop_share=1.0,
    )
    monkeypatch.setattr(persist, "default_config", lambda: tight)
    sink = CountingMetrics()
    handle = compaction_record_handler(lambda: store, sink, keep=20)
    for n in range(3):
        start_game(store, f"m{n}", CLASSIC, 30 + n, dict(PLANNER_SEATS))
        play_to_end(store, f"m{n}")
        handle(DynamoDBRecord(final_record(store, f"m{n}")))
    assert sink.counts["MemoryConsolidated"] == 3
    assert sink.counts["MemoryEvicted"] > 0


# ---------------------------------------------------------------- rebuild
def _store_with_results(summaries: list[Any]) -> MemoryStore:
    store = MemoryStore()
    for s in summaries:
        store.put_result(s, keep=20)
    return store


def test_a_stale_rebuild_keeps_every_game_and_frozen_beliefs_frozen() -> None:
    games = [summary(f"r{i}") for i in range(41)]
    stale = season_of(games[:40])
    frozen = {b.id for b in stale.of_level("belief") if isinstance(b, Belief) and b.frozen}
    assert frozen, "the season should freeze a belief"
    store = _store_with_results(games)
    store.put_scope_item(persist.encode_memory(stale.model_copy(update={"version": 1})), 0)
    got = persist.startup(store, "planner", "reference")
    assert got.rebuilt == "stale" and got.memory is not None
    assert got.memory.games == 41 and got.memory.last_game == "r40"
    after = {b.id: b for b in got.memory.of_level("belief") if isinstance(b, Belief)}
    assert all(after[i].frozen for i in frozen), "a rebuild thawed a frozen belief"
    assert got.unrebuilt == 0


def test_a_rebuild_from_nothing_says_what_it_could_not_rebuild() -> None:
    games = [summary(f"q{i}") for i in range(41)]
    store = _store_with_results(games)
    got = persist.startup(store, "planner", "reference")
    assert got.rebuilt == "missing" and got.memory is not None
    assert got.unrebuilt == 21 and got.memory.counters["unrebuilt_games"] == 21
    assert got.memory.games == 41


def test_plant_top_has_one_definition_with_or_without_the_events() -> None:
    store = MemoryStore()
    for n in range(8):
        game = f"p{n}"
        start_game(store, game, CLASSIC, 40 + n, dict(PLANNER_SEATS))
        play_to_end(store, game)
        s = compaction.compact(store, game).summary
        events = compaction.read_events(store, game)

        def rates(exp: list[Experience]) -> list[bool]:
            return [e.success for e in exp if e.subject == "plant_top"]

        with_events = rates(extract(s, 1.0, events=events))
        assert rates(extract(s, 1.0)) == with_events  # a rebuild reads the same rate
        assert len(with_events) == len(s.decoys)


# ---------------------------------------------------------------- corrections vs evidence
def test_a_wrong_correction_is_flagged_within_30_games_then_confirmed_or_retired() -> None:
    memory = add_correction(fresh(), wrong="at once", right="late", subject="immediate", rate=0.1)
    flagged_at = None
    for g in range(30):
        result = consolidate(memory, summary(f"c{g}", immediate=2))
        memory = result.memory
        if result.conflicts and flagged_at is None:
            flagged_at = g
    assert flagged_at is not None and flagged_at < 30
    belief = memory.active_beliefs()["immediate"]
    assert belief.source == "correction" and belief.conflict and belief.confidence < 0.05
    assert belief.mean > 0.5, "evidence moves a correction's rate: a prior, not a law"
    from horcrux.echo.ops import _item_view

    view = _item_view(belief, memory.clock)
    assert view["conflict"] is True and view["evidence"] == {
        "successes": belief.evidence_successes,
        "trials": belief.evidence_trials,
    }
    confirmed = confirm_correction(memory, belief.id)
    again = confirmed.active_beliefs()["immediate"]
    assert not again.conflict and again.mean == pytest.approx(0.1, abs=0.01)
    retired = retire_correction(memory, belief.id)
    assert "immediate" not in retired.active_beliefs()
    (c,) = [i for i in retired.items if isinstance(i, Correction)]
    assert c.valid_to is not None
    for g in range(20):  # the evidence forms its own belief again
        retired = consolidate(retired, summary(f"d{g}", immediate=2)).memory
    assert retired.active_beliefs()["immediate"].source == "evidence"


def test_a_supported_correction_raises_no_conflict() -> None:
    memory = add_correction(fresh(), wrong="late", right="at once", subject="immediate", rate=1.0)
    for g in range(30):
        result = consolidate(memory, summary(f"s{g}", immediate=2))
        memory = result.memory
        assert not result.conflicts
    assert memory.active_beliefs()["immediate"].confidence > 0.9


def _threshold_correction(memory: EchoMemory) -> Correction:
    (c,) = [i for i in memory.items if isinstance(i, Correction) and i.subject == "threshold"]
    return c


def test_the_compaction_alarms_on_a_contradicted_threshold_correction() -> None:
    """Through the store: an operator's threshold correction, games against `shadow`
    compacted by the record handler (the factors recomputed from the events), the
    `MemoryCorrectionConflict` metric, `GET /memory`'s conflicts, then a retire."""
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
        DynamoDBRecord,
    )
    from test_compaction import final_record

    from horcrux.echo import ops
    from horcrux.store.port import SeatInfo

    store = MemoryStore()
    seats = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="shadow"),
    }
    ops.correct(store, "planner", "shadow", wrong="", right="", subject="threshold", rate=0.8)
    sink = CountingMetrics()
    handle = compaction_record_handler(lambda: store, sink, keep=20)
    for n in range(30):
        start_game(store, f"s{n}", CLASSIC, n, dict(seats))
        play_to_end(store, f"s{n}")
        handle(DynamoDBRecord(final_record(store, f"s{n}")))
        if sink.counts.get("MemoryCorrectionConflict"):
            break
    assert sink.counts.get("MemoryCorrectionConflict", 0) > 0
    view = ops.inspect(store, "planner", "shadow")
    (c,) = [i for i in view["items"] if i["level"] == "correction"]
    assert view["conflicts"] == [c["id"]] and c["conflict"] is True
    after = ops.retire(store, "planner", "shadow", c["id"])
    assert after["conflicts"] == []


# ---------------------------------------------------------------- config
def test_horcrux_echo_config_is_honoured(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        '[memory.consolidation]\nbelief_threshold = 2\n[memory.decay]\nclock = "hours"\n'
    )
    monkeypatch.setenv("HORCRUX_ECHO_CONFIG", str(path))
    assert config_path() == path
    cfg = default_config()
    assert cfg.belief_threshold == 2 and cfg.clock == "hours" and cfg.half_life == 168.0
    monkeypatch.delenv("HORCRUX_ECHO_CONFIG")
    assert default_config().belief_threshold == 5


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[memory.consolidation]\npatern_threshold = 2\n", "memory.consolidation.patern_threshold"),
        ("[memory.decays]\nenabled = true\n", "memory.decays"),
        ("[memory.decay]\nhalf_life_games = 'fifty'\n", "memory.decay.half_life_games"),
        ("[memory.decay]\nclock = 'weeks'\n", "games or hours"),
        ("[memory.limits.budget]\nexperiences = 4\n", "experiences"),
        ("memory: {}\n", "not TOML"),
    ],
)
def test_a_bad_config_is_refused_naming_the_key(tmp_path: Any, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(EchoConfigError, match=needle.replace(".", r"\.")):
        load_config(path)


def test_the_hours_clock_is_reachable_through_compaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hours = replace(CFG, clock="hours")
    monkeypatch.setattr(persist, "default_config", lambda: hours)
    t0 = 1_700_000_000.0
    store = MemoryStore(clock=Clock(t0))
    start_game(store, "h1", CLASSIC, 3, dict(PLANNER_SEATS), now=t0, ttl_seconds=86400)
    play_to_end(store, "h1")
    outcome = compaction.compact(store, "h1")
    assert outcome.memory is not None
    assert outcome.memory.memory.clock == pytest.approx(t0 / 3600)  # its creation, in hours
    assert all(i.created == pytest.approx(t0 / 3600) for i in outcome.memory.memory.items)


# ---------------------------------------------------------------- reinforcement
def test_confirming_evidence_keeps_a_well_backed_belief_alive() -> None:
    memory = fresh()
    ids: set[str] = set()
    for g in range(300):  # wins and losses alternate: a 50% belief, never frozen
        memory = consolidate(memory, summary(f"a{g}", won=g % 2 == 0)).memory
        win = memory.active_beliefs().get("win")
        if win is not None:
            ids.add(win.id)
    win = memory.active_beliefs()["win"]
    assert not win.frozen and win.trials > 200
    assert len(ids) == 1, "the win belief was forgotten and formed again"
    assert win.accesses > 0


def test_recall_counts_as_an_access() -> None:
    memory = add_correction(fresh(), wrong="x", right="prefers the shack", text="noted")
    (note,) = [i for i in memory.items if isinstance(i, Correction)]
    assert note.accesses == 0
    after = consolidate(memory, summary("k0")).memory  # its start-up's line recalled it
    (again,) = [i for i in after.items if isinstance(i, Correction)]
    assert again.accesses == 1 and again.last_access == after.clock
