"""The game service over the in-memory store: seats and tokens, moves, projections, AI turns
and the local dispatcher (the same `play_ai_turn` the stream-driven Lambdas call)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from api_fixtures import leaks

from horcrux.agents import HARRY_BRAINS
from horcrux.api.stream_handler import turn_request
from horcrux.decisions import DecisionNote
from horcrux.errors import GameOver, NotYourTurn, UnknownBrain, UnknownLocation
from horcrux.models import Attack, Pass, Search
from horcrux.rules import CLASSIC
from horcrux.service import (
    ECHO_KEY,
    GameService,
    InvalidRequest,
    MadeBrain,
    MoveConflict,
    MoveResponse,
    NotOver,
    SeatRequest,
    SeatTaken,
    TurnRequest,
    Unauthorized,
    WaitingForPlayer,
    WrongSeat,
    default_harry_brain,
    project_event,
)
from horcrux.store import Conflict, GameSnapshot, MemoryStore, NotFound, hash_token, read_log
from horcrux.store.port import GameStore, ScopeStore, TurnEvent
from horcrux_tools import sim

HUMAN = SeatRequest(kind="human")
T0 = 1_700_000_000.0


def ai(brain: str | None = None) -> SeatRequest:
    return SeatRequest(kind="ai", brain=brain)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def service(store: MemoryStore) -> GameService:
    return GameService(store)


# ---------------------------------------------------------------- create, seats, tokens
def test_the_creator_takes_the_first_human_seat_and_only_its_hash_is_stored(
    service: GameService, store: MemoryStore
) -> None:
    created = service.create_game(HUMAN, ai(), rules="classic", seed=5)
    assert created["seat"] == "harry" and len(created["token"]) >= 43  # 32 bytes, base64
    snap = store.load(created["game_id"])
    assert snap.seats["harry"].token_hash == hash_token(created["token"])
    assert snap.seats["voldemort"].brain == "reference"
    assert created["token"] not in repr(store.raw_items(created["game_id"]))
    assert leaks(created) == []
    assert created["game"]["legal"]["types"] == ["search", "attack"]
    other = service.create_game(ai(), HUMAN)
    assert other["seat"] == "voldemort" and other["game"]["view"]["seat"] == "voldemort"
    assert store.load(other["game_id"]).seats["harry"].brain == default_harry_brain()


def test_ai_vs_ai_has_no_creator_seat_and_seeds_are_drawn(service: GameService) -> None:
    a = service.create_game(ai("naive"), ai())
    b = service.create_game(ai("naive"), ai())
    assert a["seat"] is None and a["token"] is None
    sa = service.store.load(a["game_id"]).state.seed
    sb = service.store.load(b["game_id"]).state.seed
    assert sa != sb


def test_default_harry_brain_is_the_planner_when_registered() -> None:
    expected = "planner" if "planner" in HARRY_BRAINS.names(seat_only=True) else "naive"
    assert default_harry_brain() == expected


@pytest.mark.parametrize(
    ("harry", "voldemort", "error", "words"),
    [
        (ai("oracle"), ai(), UnknownBrain, "known: "),
        (ai(), ai("nobody"), UnknownBrain, "reference"),
        (ai("naive:zero"), ai(), UnknownBrain, "whole number"),
        (ai(), ai("family:100000"), UnknownBrain, "held-out report split"),
        (SeatRequest(kind="human", brain="naive"), ai(), InvalidRequest, "takes no brain"),
    ],
)
def test_bad_seats_are_refused_naming_the_problem(
    service: GameService,
    store: MemoryStore,
    harry: SeatRequest,
    voldemort: SeatRequest,
    error: type[Exception],
    words: str,
) -> None:
    with pytest.raises(error, match=words):
        service.create_game(harry, voldemort)
    assert store.op_counts["TransactWriteItems"] == 0


def retire_seat(store: GameStore, game_id: str, seat: str, spec: str) -> None:
    """Rewrite a stored seat's brain spec (a game stored before `spec` was retired)."""
    snap = store.load(game_id)
    seats = {**snap.seats, seat: snap.seats[seat].model_copy(update={"brain": spec})}
    store.repair_snapshot(
        snap.version, snap.model_copy(update={"version": snap.version + 1, "seats": seats})
    )


def test_a_new_seat_naming_a_retired_planner_mode_is_refused_naming_the_modes(
    service: GameService, store: MemoryStore
) -> None:
    with pytest.raises(UnknownBrain, match="unknown planner mode 'aware-lag'; known: ") as caught:
        service.create_game(ai("planner:aware-lag"), HUMAN)
    known = str(caught.value).rpartition("known: ")[2].split(" (seat")[0].split(", ")
    assert "aware-copy" in known and "aware-lag" not in known
    assert store.op_counts["TransactWriteItems"] == 0


def test_a_stored_seat_of_a_retired_planner_mode_plays_the_default_planner_and_says_so(
    service: GameService, store: MemoryStore
) -> None:
    created = service.create_game(ai("planner"), HUMAN, rules="classic", seed=21)
    gid = created["game_id"]
    assert created["game"]["seats"]["harry"]["brain_used"] is None
    retire_seat(store, gid, "harry", "planner:aware-charge")
    seats = service.game(gid, None)["seats"]
    assert seats["harry"]["brain"] == "planner:aware-charge"
    assert seats["harry"]["brain_used"] == "planner"
    assert seats["voldemort"]["brain_used"] is None  # a person's seat
    made = service.make_brain(store.load(gid), "harry")
    assert made.brain.name == "planner" and made.brain.mode == "aware-copy"


def test_join_lobby_and_taken_seats(service: GameService) -> None:
    created = service.create_game(HUMAN, HUMAN, rules="classic", seed=1)
    gid = created["game_id"]
    assert [g["game_id"] for g in service.lobby()["games"]] == [gid]
    with pytest.raises(WaitingForPlayer, match="voldemort seat is still free"):
        service.move(gid, created["token"], Search(location="hogwarts"))
    joined = service.join(gid, "voldemort")
    assert joined["seat"] == "voldemort" and joined["token"] != created["token"]
    assert service.lobby()["games"] == []
    with pytest.raises(SeatTaken):
        service.join(gid, "voldemort")
    with pytest.raises(SeatTaken):
        service.join(service.create_game(HUMAN, ai())["game_id"], "voldemort")
    with pytest.raises(NotFound):
        service.join("no-such-game", "harry")


def test_tokens_authenticate_only_their_own_game(service: GameService) -> None:
    one = service.create_game(HUMAN, ai(), seed=1)
    two = service.create_game(HUMAN, ai(), seed=1)
    assert service.game(one["game_id"], one["token"])["your_seat"] == "harry"
    assert service.game(one["game_id"], None)["your_seat"] is None
    for token in (two["token"], "", "x" * 300, one["token"] + "x"):
        with pytest.raises(Unauthorized):
            service.game(one["game_id"], token)


# ---------------------------------------------------------------- moves
def test_moves_are_checked_before_anything_is_written(
    service: GameService, store: MemoryStore
) -> None:
    created = service.create_game(HUMAN, ai(), rules="classic", seed=2)
    gid, token = created["game_id"], created["token"]
    before = store.raw_items(gid)
    with pytest.raises(Unauthorized):
        service.move(gid, None, Search(location="hogwarts"))
    with pytest.raises(UnknownLocation, match="'atlantis'"):
        service.move(gid, token, Search(location="atlantis"))
    with pytest.raises(WrongSeat, match="voldemort action"):
        service.move(gid, token, Pass())
    assert store.raw_items(gid) == before
    moved = service.move(gid, token, Search(location="hogwarts"))
    assert moved["event"]["type"] == "harry_moved" and moved["game"]["to_move"] == "voldemort"
    with pytest.raises(NotYourTurn) as info:
        service.move(gid, token, Search(location="hogwarts"))
    assert info.value.expected == "voldemort"


def test_two_concurrent_moves_one_wins_the_other_conflicts(store: MemoryStore) -> None:
    service = GameService(store)
    created = service.create_game(HUMAN, ai(), rules="classic", seed=3)
    gid, token = created["game_id"], created["token"]
    barrier = threading.Barrier(2)
    real_load = store.load

    def load(game_id: str) -> GameSnapshot:
        snap = real_load(game_id)
        barrier.wait(timeout=5)  # both read version 0 before either commits
        return snap

    store.load = load  # type: ignore[method-assign]
    results: list[Any] = []

    def play(loc: str) -> None:
        try:
            results.append(service.move(gid, token, Search(location=loc)))
        except MoveConflict as exc:
            results.append(exc)

    threads = [threading.Thread(target=play, args=(loc,)) for loc in ("hogwarts", "azkaban")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.load = real_load  # type: ignore[method-assign]
    wins = [r for r in results if isinstance(r, MoveResponse)]
    conflicts = [r for r in results if isinstance(r, MoveConflict)]
    assert len(wins) == 1 and len(conflicts) == 1
    assert conflicts[0].details["game"]["version"] == 1
    seqs = [e.seq for e in store.events(gid).events]
    assert seqs == [0, 1]


# ---------------------------------------------------------------- projections
def test_events_are_projected_per_seat_while_running_and_released_at_the_end(
    store: MemoryStore,
) -> None:
    service = GameService(store)
    created = service.create_game(HUMAN, HUMAN, rules="classic", seed=4)
    gid, harry = created["game_id"], created["token"]
    voldemort = service.join(gid, "voldemort")["token"]
    service.move(gid, harry, Search(location="hogwarts"))
    service.move(gid, voldemort, Pass())
    service.move(gid, harry, Search(location="azkaban"))
    for token in (harry, None):
        page = service.events(gid, token)
        assert [e["type"] for e in page["events"]] == ["game_started", "harry_moved", "harry_moved"]
        assert leaks(page) == []
    mine = service.events(gid, voldemort)["events"]
    kinds = ["game_started", "harry_moved", "voldemort_moved", "harry_moved"]
    assert [e["type"] for e in mine] == kinds
    assert "seed" not in mine[0] and mine[0]["horcruxes"]
    paged = service.events(gid, harry, after=0, limit=1)
    assert [e["seq"] for e in paged["events"]] == [1] and paged["next_after"] == 1
    hidden = service.events(gid, harry, after=1, limit=1)
    assert hidden["events"] == [] and hidden["next_after"] == 2  # Voldemort's move: skipped
    with pytest.raises(NotOver):
        service.replay(gid)
    for _ in range(CLASSIC.attacks):  # attack until the game ends
        snap = store.load(gid)
        if snap.state.over:
            break
        if snap.state.phase == "voldemort":
            service.move(gid, voldemort, Pass())
        service.move(gid, harry, Attack(location="the-burrow"))
    assert store.load(gid).state.over
    after = service.events(gid, None)["events"]
    assert after[0]["seed"] == 4 and "voldemort_moved" in {e["type"] for e in after}
    assert service.replay(gid)["replay"]["seed"] == 4


def test_project_event_hides_voldemort_from_harry(store: MemoryStore) -> None:
    service = GameService(store)
    created = service.create_game(HUMAN, ai(), rules="classic", seed=6)
    service.move(created["game_id"], created["token"], Search(location="hogwarts"))
    service.dispatch(created["game_id"])
    started, harry, voldemort = store.events(created["game_id"]).events[:3]
    assert project_event(voldemort, "harry", over=False) is None
    assert project_event(voldemort, None, over=False) is None
    assert project_event(voldemort, "voldemort", over=False) is not None
    assert set(project_event(started, "harry", over=False) or {}) == {
        "type",
        "seq",
        "turn",
        "rules",
    }
    assert project_event(harry, None, over=False) == harry.model_dump(mode="json")


# ---------------------------------------------------------------- AI turns
@pytest.mark.parametrize("harry", ["naive", "planner"])
def test_dispatch_plays_an_ai_game_exactly_as_the_simulator(store: MemoryStore, harry: str) -> None:
    assert harry in HARRY_BRAINS.names(seat_only=True)  # a built-in brain: always registered
    service = GameService(store)
    created = service.create_game(ai(harry), ai("reference"), rules="classic", seed=11)
    outcomes = service.dispatch(created["game_id"])
    snap = store.load(created["game_id"])
    expected = sim.play_game(CLASSIC, 11, harry, "reference")
    assert snap.state.over and all(o.status == "played" for o in outcomes)
    assert (snap.state.winner, snap.state.turn) == (expected.winner, expected.turns)
    assert len(outcomes) == snap.state.seq  # one turn per event, none twice
    if harry == "planner":  # rebuilt from its view each turn (no blob); a point per turn
        assert "harry" not in snap.beliefs
        history = read_log(store, created["game_id"])[1]
        assert [p.turn for p in history] == list(range(1, expected.turns + 1))
        assert all(len(p.top) == 3 for p in history)
        assert snap.belief_history == history[-1:]


def test_inline_dispatch_answers_with_the_ai_reply_already_played(store: MemoryStore) -> None:
    service = GameService(store, inline_ai=True)
    created = service.create_game(ai("naive"), HUMAN, rules="classic", seed=8)
    assert created["game"]["to_move"] == "voldemort" and created["game"]["turn"] == 1
    moved = service.move(created["game_id"], created["token"], Pass())
    assert moved["game"]["to_move"] == "voldemort" and moved["game"]["turn"] == 2


def test_a_stored_seat_whose_brain_no_longer_builds_plays_its_default(
    service: GameService, store: MemoryStore
) -> None:
    """A spec the runtime no longer builds and no retirement lists (a plugin uninstalled)
    plays the seat's default, reported by the turn (`replaced`, alarmed by the turn
    functions), with the stored spec kept; a listed retirement is no replacement."""
    gid = service.create_game(ai("naive"), ai("random"), rules="classic", seed=31)["game_id"]
    retire_seat(store, gid, "harry", "planner:aware-lag")  # listed: its replacement plays
    played = service.play_ai_turn(gid, "harry", 0)
    assert played.status == "played" and played.replaced is None
    retire_seat(store, gid, "voldemort", "no-such-brain:3")  # unlisted: the seat's default
    assert service.game(gid, None).seats["voldemort"].brain_used is None
    played = service.play_ai_turn(gid, "voldemort", 1)
    assert played.status == "played" and played.replaced == "no-such-brain:3"
    assert played.as_dict()["replaced"] == "no-such-brain:3"
    snap = store.load(gid)
    assert snap.state.seq == 2 and snap.seats["voldemort"].brain == "no-such-brain:3"


def test_a_stale_or_foreign_turn_request_writes_nothing(
    service: GameService, store: MemoryStore
) -> None:
    created = service.create_game(ai("naive"), ai(), rules="classic", seed=9)
    gid = created["game_id"]
    assert service.play_ai_turn(gid, "harry", 0).status == "played"
    before = store.raw_items(gid)
    assert service.play_ai_turn(gid, "harry", 0).status == "skipped"  # a stream retry
    assert service.play_ai_turn(gid, "harry", 1).status == "skipped"  # not harry's turn
    assert service.play_ai_turn(gid, "voldemort", 7).status == "skipped"
    assert service.play_ai_turn("gone", "harry", 0).status == "gone"
    assert store.raw_items(gid) == before
    assert service.play_ai_turn(gid, "voldemort", 1).status == "played"
    after_two = store.raw_items(gid)
    assert service.play_ai_turn(gid, "harry", 0).status == "skipped"  # harry's turn, stale seq
    assert store.raw_items(gid) == after_two


def test_a_turn_that_loses_the_race_does_nothing(store: MemoryStore) -> None:
    class Racing:
        """Lets another writer commit the same turn between the read and the write."""

        def __init__(self, inner: MemoryStore) -> None:
            self.inner = inner
            self.raced = False

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def commit_turn(
            self,
            expected_version: int,
            snapshot: GameSnapshot,
            event: TurnEvent,
            decision: DecisionNote | None = None,
        ) -> GameSnapshot:
            if not self.raced:
                self.raced = True
                self.inner.commit_turn(expected_version, snapshot, event, decision)
            return self.inner.commit_turn(expected_version, snapshot, event, decision)

    racing: GameStore = Racing(store)  # type: ignore[assignment]
    service = GameService(racing)
    gid = service.create_game(ai("naive"), ai(), rules="classic", seed=9)["game_id"]
    outcome = service.play_ai_turn(gid, "harry", 0)
    assert outcome.status == "lost_race"
    assert [e.seq for e in store.events(gid).events] == [0, 1]


def test_a_conflict_while_busy_is_raised_for_a_retry(store: MemoryStore) -> None:
    service = GameService(store)
    gid = service.create_game(ai("naive"), ai(), rules="classic", seed=9)["game_id"]

    def busy(*args: Any) -> GameSnapshot:
        raise Conflict("busy", reason="busy")

    store.commit_turn = busy  # type: ignore[method-assign,assignment]
    with pytest.raises(Conflict):
        service.play_ai_turn(gid, "harry", 0)


def test_turn_requests_parse_both_image_forms() -> None:
    low = {"pk": {"S": "GAME#abc"}, "seq": {"N": "4"}, "next_ai": {"S": "voldemort"}}
    from decimal import Decimal

    high = {"pk": "GAME#abc", "seq": Decimal(4), "next_ai": "voldemort"}
    assert turn_request(low) == turn_request(high) == TurnRequest("abc", 4, "voldemort")
    assert turn_request({"pk": {"S": "GAME#abc"}, "seq": {"N": "4"}}) is None
    with pytest.raises(ValueError):
        turn_request({"pk": {"S": "NOPE"}, "seq": {"N": "4"}, "next_ai": {"S": "harry"}})


def test_expired_games_are_not_found_and_moves_after_the_end_conflict() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    service = GameService(store, clock=clock, ttl_seconds=60)
    created = service.create_game(HUMAN, ai(), rules="classic", seed=1)
    gid, token = created["game_id"], created["token"]
    for loc in CLASSIC.locations[: CLASSIC.attacks]:
        if store.load(gid).state.over:
            break
        service.move(gid, token, Attack(location=loc))
        service.dispatch(gid)
    assert store.load(gid).state.over
    with pytest.raises(GameOver):
        service.move(gid, token, Search(location="hogwarts"))
    clock.now += 61
    with pytest.raises(NotFound):
        service.game(gid, token)


# ---------------------------------------------------------------- no per-call state
def test_the_brain_factory_returns_the_brain_with_its_memory_pin(store: MemoryStore) -> None:
    from horcrux.agents.planner import PlannerHarry

    service = GameService(store)
    created = service.create_game(ai("planner"), HUMAN, rules="classic", seed=21)
    snapshot = store.load(created["game_id"])
    made = service.make_brain(snapshot, "harry")
    assert isinstance(made, MadeBrain) and made.pin is None and made.memory == "read"
    pin = json.dumps({"v": 2, "models": None, "line": "relocates at once"}).encode()
    pinned = snapshot.model_copy(update={"beliefs": {ECHO_KEY: pin}})
    made = service.make_brain(pinned, "harry")
    assert made.pin == pin and made.memory is None  # the pin, not a read of the memory item
    assert made.brain.name == "planner"
    # a pin of another version (none: the format before version 2) is not guessed at: the
    # brain plays without memory, the pin is kept for review and counted
    old = json.dumps({"models": None, "line": "relocates at once"}).encode()
    before = service.memory_counts["pin-unreadable"]
    made = service.make_brain(snapshot.model_copy(update={"beliefs": {ECHO_KEY: old}}), "harry")
    assert made.pin == old and made.memory == "pin-unreadable"
    assert service.memory_counts["pin-unreadable"] == before + 1
    fresh = PlannerHarry(CLASSIC).belief.models
    assert made.brain.belief.models == fresh  # type: ignore[attr-defined]


def test_a_mirror_voldemorts_copy_plays_the_memory_pinned_for_harry(store: MemoryStore) -> None:
    """The memory comes from past games Voldemort saw whole, by code he has read: the
    copy of Harry's brain that `mirror` runs gets the game's pin too."""
    from dataclasses import asdict

    from horcrux.belief.bayes import DEFAULT_MODE, MODES
    from horcrux.echo.use import joined_models, rate_models

    models = joined_models(rate_models({"relocates": 0.9, "immediate": 0.2}))
    pin = json.dumps(
        {"v": 2, "models": [asdict(m) for m in models], "params": {"jitter": 0.25}, "line": None}
    ).encode()
    service = GameService(store)
    created = service.create_game(ai("planner"), ai("mirror"), rules="classic", seed=23)
    snapshot = store.load(created["game_id"])
    bare = service.make_brain(snapshot, "voldemort").brain
    assert bare.copy.belief.models == MODES[DEFAULT_MODE]  # nothing pinned: the default brain
    pinned = snapshot.model_copy(update={"beliefs": {ECHO_KEY: pin}})
    harry = service.make_brain(pinned, "harry").brain
    copy = service.make_brain(pinned, "voldemort").brain.copy
    assert copy.belief.models == harry.belief.models == models != MODES[DEFAULT_MODE]
    assert copy.params == harry.params and copy.params.jitter == 0.25
    broken = snapshot.model_copy(update={"beliefs": {ECHO_KEY: b"{not json"}})
    assert service.make_brain(broken, "voldemort").brain.copy.belief.models == MODES[DEFAULT_MODE]


BAD_PIN = b"{not json"


def pin_store(store: GameStore, game_id: str, pin: bytes) -> None:
    """Put `pin` in the game's stored snapshot (a repair: version + 1)."""
    snap = store.load(game_id)
    pinned = snap.model_copy(
        update={"version": snap.version + 1, "beliefs": {**snap.beliefs, ECHO_KEY: pin}}
    )
    store.repair_snapshot(snap.version, pinned)


def test_an_unreadable_pin_is_counted_and_kept_and_harry_plays_without_it(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    service = GameService(store)
    gid = service.create_game(ai("planner"), ai(), rules="classic", seed=24)["game_id"]
    pin_store(store, gid, BAD_PIN)
    with caplog.at_level("WARNING", logger="horcrux.service.ai"):
        first = service.play_ai_turn(gid, "harry", 0)
    assert first.status == "played" and first.memory == "pin-unreadable"
    assert f"unreadable memory pin in game {gid}" in caplog.text
    assert store.load(gid).beliefs[ECHO_KEY] == BAD_PIN  # kept for review
    outcomes = service.dispatch(gid)  # every later turn: the same pin, still unreadable
    assert store.load(gid).state.over
    harry = [o.memory for o in outcomes if o.seat == "harry"]
    assert harry and set(harry) == {"pin-unreadable"}
    assert all(o.memory is None for o in outcomes if o.seat == "voldemort")  # no copy
    assert store.load(gid).beliefs[ECHO_KEY] == BAD_PIN
    assert service.memory_counts["pin-unreadable"] == 1 + len(harry)
    assert service.memory_counts["applied"] == 0


def test_an_unreadable_first_turn_pin_is_stored_for_review(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from horcrux.service import ai as service_ai

    def read(*args: Any) -> service_ai.MemoryRead:
        return service_ai.MemoryRead(pin=BAD_PIN, status="read")

    monkeypatch.setattr(service_ai, "read_memory", read)
    service = GameService(store)
    gid = service.create_game(ai("planner"), HUMAN, rules="classic", seed=25)["game_id"]
    first = service.play_ai_turn(gid, "harry", 0)
    assert first.status == "played" and first.memory == "pin-unreadable"
    assert store.load(gid).beliefs[ECHO_KEY] == BAD_PIN


def test_a_mirror_voldemort_reports_the_copied_or_unreadable_pin(store: MemoryStore) -> None:
    from dataclasses import asdict

    from horcrux.echo.use import joined_models, rate_models

    models = joined_models(rate_models({"relocates": 0.9, "immediate": 0.2}))
    good = json.dumps({"v": 2, "models": [asdict(m) for m in models], "line": None}).encode()
    service = GameService(store)
    for pin, memory in ((good, "copied"), (BAD_PIN, "pin-unreadable")):
        gid = service.create_game(ai("planner"), ai("mirror"), rules="classic", seed=26)["game_id"]
        pin_store(store, gid, pin)
        assert service.play_ai_turn(gid, "harry", 0).status == "played"
        turn = service.play_ai_turn(gid, "voldemort", 1)
        assert (turn.status, turn.memory) == ("played", memory)
        assert store.load(gid).state.seq == 2
        assert store.load(gid).beliefs[ECHO_KEY] == pin  # untouched, for review
        assert service.play_ai_turn(gid, "harry", 2).status == "played"
        assert store.load(gid).beliefs[ECHO_KEY] == pin
    assert service.memory_counts["copied"] == 1
    assert service.memory_counts["pin-unreadable"] == 3  # Harry twice, Voldemort once
    unpinned = service.create_game(ai("planner"), ai("mirror"), rules="classic", seed=27)
    outcomes = service.dispatch(unpinned["game_id"])
    assert all(o.memory is None for o in outcomes if o.seat == "voldemort")  # nothing pinned


def test_the_service_keeps_nothing_per_call_between_turns(store: MemoryStore) -> None:
    service = GameService(store)
    before = set(vars(service))
    created = service.create_game(ai("planner"), ai(), rules="classic", seed=22)
    outcomes = service.dispatch(created["game_id"])
    assert outcomes[0].memory == "read" and all(o.memory is None for o in outcomes[1:])
    assert set(vars(service)) == before
    assert not {"_pinned", "_memory_read"} & before


class GameOnly:
    """A store with the `GameStore` port only: no cross-game memory."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner
        for name in (
            "create_game",
            "load",
            "commit_turn",
            "find_write",
            "events",
            "list_open_games",
            "list_games",
            "join_seat",
        ):
            setattr(self, name, getattr(inner, name))


def test_memory_is_read_only_from_a_scope_store(store: MemoryStore) -> None:
    plain: Any = GameOnly(store)
    assert isinstance(plain, GameStore) and not isinstance(plain, ScopeStore)
    service = GameService(plain)
    assert service.scope_store is None and GameService(store).scope_store is store
    created = service.create_game(ai("planner"), ai(), rules="classic", seed=23)
    first = service.play_ai_turn(created["game_id"], "harry", 0)
    assert first.status == "played" and first.memory is None


# ---------------------------------------------------------------- decision notes
def test_every_ai_move_keeps_its_decision_note_and_only_the_replay_shows_them(
    store: MemoryStore,
) -> None:
    from horcrux.agents.candidates import move_label
    from horcrux.models import HarryMoved, VoldemortMoved

    service = GameService(store)
    created = service.create_game(ai("planner"), ai("reference"), rules="classic", seed=11)
    gid = created["game_id"]
    service.dispatch(gid)
    moves = [e for e in store.events(gid).events if isinstance(e, HarryMoved | VoldemortMoved)]
    notes = service.replay(gid).model_dump(mode="json")["decisions"]
    assert len(notes) == len(moves) > 2  # one per AI move, in order
    for note, event in zip(notes, moves, strict=True):
        seat = "harry" if isinstance(event, HarryMoved) else "voldemort"
        assert (note["seat"], note["turn"]) == (seat, event.turn)
        assert note["move"] == move_label(event.action)  # type: ignore[arg-type]
        assert note["tier"] == "zero" and note["context"] is None
        assert note["brain"] == ("planner" if seat == "harry" else "reference")
        assert note["source"] == ("planner" if seat == "harry" else "rule")
    assert all(n["latency_ms"] > 0 for n in notes if n["seat"] == "harry")
    # never in the events route, for anyone, while or after the game runs
    public = service.events(gid, None).model_dump_json()
    assert '"tier"' not in public and '"brain"' not in public and '"latency_ms"' not in public


def test_a_person_s_move_keeps_no_decision_note(store: MemoryStore) -> None:
    service = GameService(store)
    created = service.create_game(HUMAN, ai("reference"), rules="classic", seed=4)
    gid, token = created["game_id"], created["token"]
    for _ in range(CLASSIC.attacks):
        snap = store.load(gid)
        if snap.state.over:
            break
        service.move(gid, token, Attack(location="the-burrow"))
        service.dispatch(gid)
    assert store.load(gid).state.over
    notes = service.replay(gid).model_dump(mode="json")["decisions"]
    assert notes and {n["seat"] for n in notes} == {"voldemort"}
