"""The in-memory adapter: the DynamoDB adapter's semantics without I/O, for fast tests.

It holds the same encoded items (`mapping`) in two dicts standing for the two tables, takes a
lock for each "transaction", never deletes expired items (like moto, and like DynamoDB for
up to a few days) and filters them on read. `op_counts` counts the DynamoDB operations the
same call would make, so the contract tests check both adapters' round trips alike.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable

from horcrux.decisions import DecisionNote
from horcrux.models import GameStarted, Seat
from horcrux.store import common, mapping, results
from horcrux.store.capacity import Item
from horcrux.store.common import JOIN_ATTEMPTS, key_of, snapshot_key
from horcrux.store.port import (
    AnyEvent,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    GameStatus,
    LobbyPage,
    NotFound,
    TurnEvent,
    check_commit,
    check_create,
    check_limit,
    check_repair,
    joined,
)
from horcrux.store.results import RESULTS_MAX, GameSummary, RecentResults


class MemoryStore:
    """`GameStore` in process memory. Thread-safe; every write is atomic under one lock."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._games: dict[tuple[str, str], Item] = {}
        self._events: dict[tuple[str, int], Item] = {}
        self.op_counts: Counter[str] = Counter()

    # ------------------------------------------------------------ helpers
    def _snapshot_item(self, game_id: str) -> Item | None:
        return self._games.get(key_of(snapshot_key(game_id)))

    def _put_snapshot(self, game_id: str, item: Item) -> None:
        self._games[key_of(snapshot_key(game_id))] = item

    def _live(self, item: Item | None) -> GameSnapshot | None:
        return common.live_snapshot(item, self._clock())

    def _write_turn(
        self,
        snapshot: GameSnapshot,
        event: AnyEvent,
        check: Callable[[Item | None, bool], None],
        decision: DecisionNote | None = None,
        write_id: str | None = None,
    ) -> GameSnapshot:
        """One "TransactWriteItems": the event and the snapshot, once `check` (given the
        stored snapshot item and whether the event exists) has not raised."""
        snap_item, event_item = common.turn_items(snapshot, event, decision)
        event_item = common.with_write_id(event_item, write_id or uuid.uuid4().hex)
        common.checked_sizes(snap_item, event_item)
        pk = mapping.game_pk(snapshot.game_id)
        with self._lock:
            self.op_counts["TransactWriteItems"] += 1
            check(self._snapshot_item(snapshot.game_id), (pk, event.seq) in self._events)
            self._put_snapshot(snapshot.game_id, snap_item)
            self._events[(pk, event.seq)] = event_item
        return mapping.as_stored(snapshot)

    # ------------------------------------------------------------ the port
    def create_game(self, snapshot: GameSnapshot, started: GameStarted) -> GameSnapshot:
        check_create(snapshot, started)

        def absent(current: Item | None, event_exists: bool) -> None:
            if current is not None or event_exists:
                raise Conflict(
                    f"game {snapshot.game_id} already exists",
                    reason="exists",
                    current=self._live(current),
                )

        return self._write_turn(snapshot, started, absent)

    def load(self, game_id: str) -> GameSnapshot:
        with self._lock:
            self.op_counts["GetItem"] += 1
            found = self._live(copy.deepcopy(self._snapshot_item(game_id)))
        if found is None:
            raise NotFound(f"no game {game_id}")
        return found

    def commit_turn(
        self,
        expected_version: int,
        snapshot: GameSnapshot,
        event: TurnEvent,
        decision: DecisionNote | None = None,
        *,
        write_id: str | None = None,
    ) -> GameSnapshot:
        check_commit(expected_version, snapshot, event)
        snapshot = snapshot.beating(self._clock())

        def unmoved(current_item: Item | None, event_exists: bool) -> None:
            current = self._live(current_item)
            if current is None:
                raise NotFound(f"no game {snapshot.game_id}")
            if current.version != expected_version:
                raise common.version_moved(snapshot.game_id, current, expected_version)
            if event_exists:
                raise Conflict(
                    f"event {event.seq} of game {snapshot.game_id} already exists",
                    reason="duplicate_event",
                    current=current,
                )

        return self._write_turn(snapshot, event, unmoved, decision, write_id)

    def find_write(self, game_id: str, write_id: str) -> int | None:
        pk = mapping.game_pk(game_id)
        with self._lock:
            self.op_counts["Query"] += 1
            seqs = sorted((seq for (p, seq) in self._events if p == pk), reverse=True)
            items = [self._events[(pk, s)] for s in seqs[: common.RECENT_WRITES]]
        return common.write_seq(items, write_id)

    def events(self, game_id: str, after: int = -1, limit: int = 100) -> EventPage:
        check_limit(limit)
        pk = mapping.game_pk(game_id)
        now = self._clock()
        with self._lock:
            self.op_counts["Query"] += 1
            seqs = sorted(seq for (p, seq) in self._events if p == pk and seq > after)
            page = [self._events[(pk, s)] for s in seqs[: limit + 1]]
        return common.event_page(page, limit, now)

    def list_open_games(self, limit: int = 20, cursor: str | None = None) -> LobbyPage:
        return self.list_games("open", limit=limit, cursor=cursor)

    def list_games(
        self, status: GameStatus, limit: int = 20, cursor: str | None = None
    ) -> LobbyPage:
        check_limit(limit)
        now = self._clock()
        keys = common.lobby_range(status, now, cursor)
        if keys.empty:
            return LobbyPage(games=[], cursor=None)
        with self._lock:
            self.op_counts["Query"] += 1
            lobby = sorted(
                (
                    i
                    for i in self._games.values()
                    if i.get("lobby") == {"S": keys.status} and keys.holds(i["lobby_sk"]["S"])
                ),
                key=lambda i: str(i["lobby_sk"]["S"]),
            )
        return common.lobby_page(lobby[: limit + 1], limit, now)

    def join_seat(
        self,
        game_id: str,
        seat: Seat,
        token_hash: str,
        name: str | None = None,
        player: str | None = None,
    ) -> GameSnapshot:
        for _ in range(JOIN_ATTEMPTS):
            current = self.load(game_id)
            after = joined(current, seat, token_hash, name, player, now=self._clock())
            item = mapping.encode_snapshot(after)
            with self._lock:
                self.op_counts["PutItem"] += 1
                stored = self._live(self._snapshot_item(game_id))
                if stored is None:
                    raise NotFound(f"no game {game_id}")
                if stored.version == current.version:
                    self._put_snapshot(game_id, item)
                    return after
        raise common.kept_changing(game_id, stored)

    # ------------------------------------------------------------ end-of-game records
    def put_result(
        self,
        summary: GameSummary,
        *,
        belief_history: tuple[BeliefPoint, ...] = (),
        keep: int = RESULTS_MAX,
    ) -> bool:
        result_item = common.result_item(summary, belief_history)
        common.checked_sizes(result_item)
        result_key = key_of(results.result_key(summary.game_id))
        scope = summary.scope
        with self._lock:
            if scope is None:
                self.op_counts["PutItem"] += 1
                if result_key in self._games:
                    return False
                self._games[result_key] = result_item
                return True
            self.op_counts["GetItem"] += 1
            recent_key = key_of(results.recent_key(*scope))
            recent = results.decode_recent(*scope, copy.deepcopy(self._games.get(recent_key)))
            if recent.has(summary.game_id):
                return False
            recent_item = results.encode_recent(recent.appended(summary, keep))
            common.checked_sizes(recent_item)
            self.op_counts["TransactWriteItems"] += 1
            if result_key in self._games:
                return False
            self._games[result_key] = result_item
            self._games[recent_key] = recent_item
            return True

    def result(self, game_id: str) -> GameSummary:
        with self._lock:
            self.op_counts["GetItem"] += 1
            item = self._games.get(key_of(results.result_key(game_id)))
        if item is None:
            raise NotFound(f"no result for game {game_id}")
        return results.decode_result(item)

    def recent_results(self, agent: str, opponent: str) -> RecentResults:
        with self._lock:
            self.op_counts["GetItem"] += 1
            item = copy.deepcopy(self._games.get(key_of(results.recent_key(agent, opponent))))
        return results.decode_recent(agent, opponent, item)

    def repair_snapshot(self, expected_version: int, snapshot: GameSnapshot) -> GameSnapshot:
        check_repair(expected_version, snapshot)
        item = mapping.encode_snapshot(snapshot)
        common.checked_sizes(item)
        with self._lock:
            self.op_counts["PutItem"] += 1
            current = self._live(self._snapshot_item(snapshot.game_id))
            if current is None:
                raise NotFound(f"no game {snapshot.game_id}")
            if current.version != expected_version:
                raise common.version_moved(snapshot.game_id, current, expected_version)
            self._put_snapshot(snapshot.game_id, item)
        return mapping.as_stored(snapshot)

    # ------------------------------------------------------------ scope items (ECHO memory)
    def scope_item(self, key: Item) -> Item | None:
        """One strongly consistent read of an `AGENT#...` item (None: absent)."""
        with self._lock:
            self.op_counts["GetItem"] += 1
            return copy.deepcopy(self._games.get(key_of(key)))

    def put_scope_item(self, item: Item, expected_version: int) -> None:
        """Put an `AGENT#...` item whose `v` is expected_version + 1, conditioned on the
        stored `v` being `expected_version` (0: absent); Conflict(`version`) otherwise."""
        common.checked_sizes(item)
        key = key_of(item)
        with self._lock:
            self.op_counts["PutItem"] += 1
            current = self._games.get(key)
            stored = int(current["v"]["N"]) if current else 0
            if stored != expected_version:
                raise Conflict(
                    f"{key} moved to version {stored} (expected {expected_version})",
                    reason="version",
                )
            self._games[key] = copy.deepcopy(item)

    def delete_scope_items(self, *keys: Item) -> int:
        """Delete `AGENT#...` items (one DeleteItem each); how many existed."""
        gone = 0
        with self._lock:
            for key in keys:
                self.op_counts["DeleteItem"] += 1
                gone += self._games.pop(key_of(key), None) is not None
        return gone

    # ------------------------------------------------------------ diagnostics
    def raw_items(self, game_id: str) -> list[Item]:
        """Every stored item of a game (snapshot first, then events by seq), expired or not."""
        pk = mapping.game_pk(game_id)
        with self._lock:
            snaps = [i for (p, _), i in self._games.items() if p == pk]
            events = [self._events[k] for k in sorted(k for k in self._events if k[0] == pk)]
            return copy.deepcopy(snaps + events)
