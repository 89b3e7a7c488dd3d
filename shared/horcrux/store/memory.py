"""The in-memory adapter: the DynamoDB adapter's semantics without I/O, for fast tests.

It holds the same encoded items (`codec`) in two dicts standing for the two tables, takes a
lock for each "transaction", never deletes expired items (like moto, and like DynamoDB for
up to a few days) and filters them on read. `op_counts` counts the DynamoDB operations the
same call would make, so the contract tests check both adapters' round trips alike.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from collections.abc import Callable

from horcrux.models import GameStarted, Seat
from horcrux.store import codec, results
from horcrux.store.codec import Item
from horcrux.store.port import (
    MAX_ITEM_BYTES,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    ItemTooLarge,
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

JOIN_ATTEMPTS = 3


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
        return self._games.get((codec.game_pk(game_id), codec.SNAPSHOT_SK))

    def _live(self, item: Item | None) -> GameSnapshot | None:
        if item is None or codec.is_expired(item, self._clock()):
            return None
        return codec.decode_snapshot(item)

    @staticmethod
    def _check_size(*items: Item) -> None:
        for item in items:
            size = codec.item_size(item)
            if size > MAX_ITEM_BYTES:
                raise ItemTooLarge(f"item of {size} bytes exceeds {MAX_ITEM_BYTES}")

    # ------------------------------------------------------------ the port
    def create_game(self, snapshot: GameSnapshot, started: GameStarted) -> GameSnapshot:
        check_create(snapshot, started)
        snap_item = codec.encode_snapshot(snapshot)
        event_item = codec.encode_turn_event(snapshot, started)
        self._check_size(snap_item, event_item)
        pk = codec.game_pk(snapshot.game_id)
        with self._lock:
            self.op_counts["TransactWriteItems"] += 1
            current = self._snapshot_item(snapshot.game_id)
            if current is not None or (pk, 0) in self._events:
                raise Conflict(
                    f"game {snapshot.game_id} already exists",
                    reason="exists",
                    current=self._live(current),
                )
            self._games[(pk, codec.SNAPSHOT_SK)] = snap_item
            self._events[(pk, 0)] = event_item
        return codec.as_stored(snapshot)

    def load(self, game_id: str) -> GameSnapshot:
        with self._lock:
            self.op_counts["GetItem"] += 1
            found = self._live(copy.deepcopy(self._snapshot_item(game_id)))
        if found is None:
            raise NotFound(f"no game {game_id}")
        return found

    def commit_turn(
        self, expected_version: int, snapshot: GameSnapshot, event: TurnEvent
    ) -> GameSnapshot:
        check_commit(expected_version, snapshot, event)
        snap_item = codec.encode_snapshot(snapshot)
        event_item = codec.encode_turn_event(snapshot, event)
        self._check_size(snap_item, event_item)
        pk = codec.game_pk(snapshot.game_id)
        with self._lock:
            self.op_counts["TransactWriteItems"] += 1
            current_item = self._snapshot_item(snapshot.game_id)
            current = self._live(current_item)
            if current is None:
                raise NotFound(f"no game {snapshot.game_id}")
            event_exists = (pk, event.seq) in self._events
            if current.version != expected_version:
                raise Conflict(
                    f"game {snapshot.game_id} moved to version {current.version} "
                    f"(expected {expected_version})",
                    reason="version",
                    current=current,
                )
            if event_exists:
                raise Conflict(
                    f"event {event.seq} of game {snapshot.game_id} already exists",
                    reason="duplicate_event",
                    current=current,
                )
            self._games[(pk, codec.SNAPSHOT_SK)] = snap_item
            self._events[(pk, event.seq)] = event_item
        return codec.as_stored(snapshot)

    def events(self, game_id: str, after: int = -1, limit: int = 100) -> EventPage:
        check_limit(limit)
        pk = codec.game_pk(game_id)
        now = self._clock()
        with self._lock:
            self.op_counts["Query"] += 1
            seqs = sorted(seq for (p, seq) in self._events if p == pk and seq > after)
            page = [self._events[(pk, s)] for s in seqs[: limit + 1]]
        more = len(page) > limit
        page = page[:limit]
        live = [i for i in page if not codec.is_expired(i, now)]
        next_after = int(page[-1]["seq"]["N"]) if more and page else None
        return EventPage(
            events=[codec.decode_event(i) for i in live],
            next_after=next_after,
            belief_history=codec.decode_event_points(live),
        )

    def list_open_games(self, limit: int = 20, cursor: str | None = None) -> LobbyPage:
        check_limit(limit)
        now = self._clock()
        with self._lock:
            self.op_counts["Query"] += 1
            lobby = sorted(
                (i for i in self._games.values() if i.get("lobby") == {"S": codec.LOBBY_OPEN}),
                key=lambda i: str(i["lobby_sk"]["S"]),
            )
        if cursor is not None:
            lobby = [i for i in lobby if i["lobby_sk"]["S"] > cursor]
        page = lobby[: limit + 1]
        more = len(page) > limit
        page = page[:limit]
        games = [codec.decode_lobby_entry(i) for i in page if not codec.is_expired(i, now)]
        return LobbyPage(games=games, cursor=page[-1]["lobby_sk"]["S"] if more and page else None)

    def join_seat(self, game_id: str, seat: Seat, token_hash: str) -> GameSnapshot:
        for _ in range(JOIN_ATTEMPTS):
            current = self.load(game_id)
            after = joined(current, seat, token_hash)
            item = codec.encode_snapshot(after)
            with self._lock:
                self.op_counts["PutItem"] += 1
                stored = self._live(self._snapshot_item(game_id))
                if stored is None:
                    raise NotFound(f"no game {game_id}")
                if stored.version == current.version:
                    self._games[(codec.game_pk(game_id), codec.SNAPSHOT_SK)] = item
                    return after
        raise Conflict(f"game {game_id} kept changing; retry", reason="busy", current=stored)

    # ------------------------------------------------------------ end-of-game records
    def _key(self, key: Item) -> tuple[str, str]:
        return (key["pk"]["S"], key["sk"]["S"])

    def put_result(
        self,
        summary: GameSummary,
        *,
        belief_history: tuple[BeliefPoint, ...] = (),
        keep: int = RESULTS_MAX,
    ) -> bool:
        blob = codec.encode_history(belief_history) if belief_history else None
        result_item = results.encode_result(summary, blob)
        self._check_size(result_item)
        result_key = self._key(results.result_key(summary.game_id))
        scope = summary.scope
        with self._lock:
            if scope is None:
                self.op_counts["PutItem"] += 1
                if result_key in self._games:
                    return False
                self._games[result_key] = result_item
                return True
            self.op_counts["GetItem"] += 1
            recent_key = self._key(results.recent_key(*scope))
            recent = results.decode_recent(*scope, copy.deepcopy(self._games.get(recent_key)))
            if recent.has(summary.game_id):
                return False
            recent_item = results.encode_recent(recent.appended(summary, keep))
            self._check_size(recent_item)
            self.op_counts["TransactWriteItems"] += 1
            if result_key in self._games:
                return False
            self._games[result_key] = result_item
            self._games[recent_key] = recent_item
            return True

    def result(self, game_id: str) -> GameSummary:
        with self._lock:
            self.op_counts["GetItem"] += 1
            item = self._games.get(self._key(results.result_key(game_id)))
        if item is None:
            raise NotFound(f"no result for game {game_id}")
        return results.decode_result(item)

    def recent_results(self, agent: str, opponent: str) -> RecentResults:
        with self._lock:
            self.op_counts["GetItem"] += 1
            item = copy.deepcopy(self._games.get(self._key(results.recent_key(agent, opponent))))
        return results.decode_recent(agent, opponent, item)

    def repair_snapshot(self, expected_version: int, snapshot: GameSnapshot) -> GameSnapshot:
        check_repair(expected_version, snapshot)
        item = codec.encode_snapshot(snapshot)
        self._check_size(item)
        with self._lock:
            self.op_counts["PutItem"] += 1
            current = self._live(self._snapshot_item(snapshot.game_id))
            if current is None:
                raise NotFound(f"no game {snapshot.game_id}")
            if current.version != expected_version:
                raise Conflict(
                    f"game {snapshot.game_id} moved to version {current.version} "
                    f"(expected {expected_version})",
                    reason="version",
                    current=current,
                )
            self._games[(codec.game_pk(snapshot.game_id), codec.SNAPSHOT_SK)] = item
        return codec.as_stored(snapshot)

    # ------------------------------------------------------------ scope items (ECHO memory)
    def scope_item(self, key: Item) -> Item | None:
        """One strongly consistent read of an `AGENT#...` item (None: absent)."""
        with self._lock:
            self.op_counts["GetItem"] += 1
            return copy.deepcopy(self._games.get(self._key(key)))

    def put_scope_item(self, item: Item, expected_version: int) -> None:
        """Put an `AGENT#...` item whose `v` is expected_version + 1, conditioned on the
        stored `v` being `expected_version` (0: absent); Conflict(`version`) otherwise."""
        self._check_size(item)
        key = self._key(item)
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
                gone += self._games.pop(self._key(key), None) is not None
        return gone

    # ------------------------------------------------------------ diagnostics
    def raw_items(self, game_id: str) -> list[Item]:
        """Every stored item of a game (snapshot first, then events by seq), expired or not."""
        pk = codec.game_pk(game_id)
        with self._lock:
            snaps = [i for (p, _), i in self._games.items() if p == pk]
            events = [self._events[k] for k in sorted(k for k in self._events if k[0] == pk)]
            return copy.deepcopy(snaps + events)
