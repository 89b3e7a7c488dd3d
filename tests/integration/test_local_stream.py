"""The local stream: the events table's DynamoDB stream read in order from a checkpoint
(`horcrux.store.stream.EventStream`) and handed to the AI workers (`StreamTail`), over
moto with the local DynamoDB's patches: only committed writes are in the stream (a
cancelled transaction takes its records back), and a reader that fell behind the kept
records reads on from the oldest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import set_aws_env
from moto import mock_aws

from horcrux.service import GameService
from horcrux.service.models import SeatRequest
from horcrux.store import Conflict, DynamoDbStore
from horcrux.store.stream import EventStream
from horcrux_tools.local.dynamo_process import patched_moto
from horcrux_tools.local.stream import StreamTail
from horcrux_tools.local.tables import create_tables

pytestmark = pytest.mark.moto


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoDbStore]:
    set_aws_env(monkeypatch)
    with mock_aws(), patched_moto():
        dynamo = DynamoDbStore()
        create_tables(dynamo)
        yield dynamo


def _ai_game(service: GameService, seed: int) -> str:
    created = service.create_game(
        SeatRequest(kind="ai", brain="naive"), SeatRequest(kind="ai"), rules="classic", seed=seed
    )
    return created.game_id


@pytest.mark.slow
def test_the_stream_reads_committed_events_in_order_from_its_checkpoint(
    store: DynamoDbStore,
) -> None:
    service = GameService(store)
    stream = EventStream(store.settings)
    assert stream.read() == []
    game = _ai_game(service, 1)
    first = stream.read()
    assert [(c.game_id, c.seq, c.next_ai) for c in first] == [(game, 0, "harry")]
    assert stream.read() == []  # the checkpoint moved past it
    service.dispatch(game, max_turns=3)
    played = stream.read()
    assert [c.seq for c in played] == [1, 2, 3]
    assert [c.next_ai for c in played] == ["voldemort", "harry", "voldemort"]
    assert all(c.game_id == game and c.winner is None for c in played)
    # a commit refused by its condition (a stale version) leaves nothing in the stream
    snapshot = store.load(game)
    with pytest.raises(Conflict):
        store.commit_turn(snapshot.version - 1, *_next_turn(service, snapshot))
    assert stream.read() == []
    # played to the end: the final event carries the winner
    service.dispatch(game)
    rest = stream.read()
    assert [c.seq for c in rest] == list(range(4, 4 + len(rest)))
    assert rest[-1].winner in ("harry", "voldemort") and rest[-1].next_ai is None


def _next_turn(service: GameService, snapshot: Any) -> tuple[Any, Any]:
    """A turn built on `snapshot`, as an AI worker would commit it (version + 1)."""
    from horcrux import engine
    from horcrux.service.ai import decide, make_brain

    seat = snapshot.state.phase
    made = make_brain(service.store, snapshot, seat)
    new_state, event = engine.apply(snapshot.state, decide(made.brain, snapshot.state, seat))
    after = snapshot.advanced(new_state)
    stale = after.model_copy(update={"version": snapshot.version})
    return stale, event


def test_a_reader_behind_the_kept_records_reads_on_from_the_oldest(store: DynamoDbStore) -> None:
    from moto.dynamodb.models import dynamodb_backends

    service = GameService(store)
    stream = EventStream(store.settings)
    game = _ai_game(service, 2)
    assert [c.seq for c in stream.read()] == [0]
    service.dispatch(game, max_turns=5)
    shard = (
        dynamodb_backends["123456789012"]["eu-west-1"]
        .tables[store.settings.events_table]
        .stream_shard
    )
    del shard.items[:3]  # the cap dropped the three oldest records: 0 (read), 1 and 2
    shard.starting_sequence_number += 3
    assert [c.seq for c in stream.read()] == [3, 4, 5]


@pytest.mark.slow
def test_the_tail_hands_the_workers_every_event_that_asks_for_work(store: DynamoDbStore) -> None:
    service = GameService(store)
    handed: list[str] = []
    tail = StreamTail(EventStream(store.settings), handed.append)
    first, second = _ai_game(service, 3), _ai_game(service, 4)
    assert tail.poll() == 2 and handed == [first, second]
    service.dispatch(first)  # to the end: every event asks for a turn, the last one ends it
    count = len(store.events(first, limit=1000).events) - 1
    assert tail.poll() == count
    assert handed[2:] == [first] * count
    assert tail.stats() == {"delivered": 2 + count, "read_errors": 0, "restarts": 0}
