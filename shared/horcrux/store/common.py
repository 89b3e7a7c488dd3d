"""What both adapters share, so they store and answer alike: the snapshot key, the item size
limit, the TTL filter on reads, the items of a turn or a result, pages and the version
conflict. No I/O here (boto3 stays in `horcrux.store.dynamodb`)."""

from __future__ import annotations

from dataclasses import dataclass

from horcrux.decisions import DecisionNote
from horcrux.store import capacity, mapping, results, wire
from horcrux.store.capacity import Item
from horcrux.store.port import (
    MAX_ITEM_BYTES,
    AnyEvent,
    BeliefPoint,
    Conflict,
    EventPage,
    GameSnapshot,
    GameStatus,
    ItemTooLarge,
    LobbyPage,
    Status,
    live_since,
)
from horcrux.store.results import GameSummary

JOIN_ATTEMPTS = 3
WRITE_ID_ATTR = "wid"
"""The event item's attribute holding the id of the write that put it (`commit_turn`)."""
RECENT_WRITES = 16
"""How many of a game's latest events `find_write` looks through."""


def with_write_id(event_item: Item, write_id: str) -> Item:
    """The event item, marked with the id of the write that puts it."""
    return {**event_item, WRITE_ID_ATTR: {"S": write_id}}


def write_seq(items: list[Item], write_id: str) -> int | None:
    """The seq of the event item among `items` written with `write_id` (None: none)."""
    for item in items:
        if item.get(WRITE_ID_ATTR, {}).get("S") == write_id:
            return int(item["seq"]["N"])
    return None


# ---------------------------------------------------------------- keys
def snapshot_key(game_id: str) -> Item:
    """The games-table key of a game's snapshot (`GAME#<id>` / `SNAPSHOT`)."""
    return {"pk": {"S": mapping.game_pk(game_id)}, "sk": {"S": mapping.SNAPSHOT_SK}}


def key_of(item: Item) -> tuple[str, str]:
    """The (pk, sk) strings of a games-table key or item."""
    return (item["pk"]["S"], item["sk"]["S"])


# ---------------------------------------------------------------- items
def checked_sizes(*items: Item) -> tuple[int, ...]:
    """The items' sizes; ItemTooLarge for the first one above DynamoDB's item limit."""
    sizes = tuple(capacity.item_size(i) for i in items)
    for size in sizes:
        if size > MAX_ITEM_BYTES:
            raise ItemTooLarge(f"item of {size} bytes exceeds {MAX_ITEM_BYTES}")
    return sizes


def turn_items(
    snapshot: GameSnapshot, event: AnyEvent, decision: DecisionNote | None = None
) -> tuple[Item, Item]:
    """The snapshot item and the event item one turn (or a game's start) writes."""
    return mapping.encode_snapshot(snapshot), mapping.encode_turn_event(snapshot, event, decision)


def result_item(summary: GameSummary, belief_history: tuple[BeliefPoint, ...]) -> Item:
    """The `GAME#<id>` / `RESULT` item, with the belief history blob if there is one."""
    blob = wire.encode_history(belief_history) if belief_history else None
    return results.encode_result(summary, blob)


# ---------------------------------------------------------------- reads (TTL is lazy)
def live_snapshot(item: Item | None, now: float) -> GameSnapshot | None:
    """The snapshot an item holds; None if there is no item or it has expired."""
    if not item or mapping.is_expired(item, now):
        return None
    return mapping.decode_snapshot(item)


def event_page(raw: list[Item], limit: int, now: float, *, more: bool = False) -> EventPage:
    """A page of events from the event items read in seq order (up to `limit + 1` of them;
    `more`: the read itself was cut short), expired ones left out."""
    more = more or len(raw) > limit
    page = raw[:limit]
    live = [i for i in page if not mapping.is_expired(i, now)]
    next_after = int(page[-1]["seq"]["N"]) if more and page else None
    return EventPage(
        events=[mapping.decode_event(i) for i in live],
        next_after=next_after,
        belief_history=mapping.decode_event_points(live),
        decisions=mapping.decode_event_decisions(live),
    )


def lobby_page(raw: list[Item], limit: int, now: float, *, more: bool = False) -> LobbyPage:
    """A lobby page from the open snapshot items read in lobby order (up to `limit + 1` of
    them; `more`: the read itself was cut short), expired ones left out."""
    more = more or len(raw) > limit
    page = raw[:limit]
    games = [mapping.decode_lobby_entry(i) for i in page if not mapping.is_expired(i, now)]
    return LobbyPage(games=games, cursor=page[-1]["lobby_sk"]["S"] if more and page else None)


# ---------------------------------------------------------------- the lobby's key ranges
@dataclass(frozen=True)
class LobbyRange:
    """What one lobby query reads: the index partition `status` and the `lobby_sk` range
    after `after` (exclusive) and before `before` (exclusive), in key order. Both stores
    read exactly this (`holds`; `DynamoDbStore` as a key condition, `condition`)."""

    status: Status
    after: str | None = None
    before: str | None = None

    @property
    def empty(self) -> bool:
        """Nothing can lie in the range (the query is not sent)."""
        return self.after is not None and self.before is not None and self.after >= self.before

    def holds(self, sort_key: str) -> bool:
        if self.after is not None and self.before is not None:  # DynamoDB's BETWEEN
            return self.after + "#" <= sort_key <= self.before
        if self.after is not None and not sort_key > self.after:
            return False
        return self.before is None or sort_key < self.before

    def condition(self) -> tuple[str, dict[str, str], Item]:
        """The key condition, its names and its values."""
        names = {"#lobby": "lobby"}
        values: Item = {":status": {"S": self.status}}
        condition = "#lobby = :status"
        if self.after is not None or self.before is not None:
            names["#lsk"] = "lobby_sk"
        if self.after is not None and self.before is not None:
            # BETWEEN is inclusive: a key after `after` is at least `after#` (a key is
            # `<15 digits>#<id>` and every id character sorts above "#"); `before` is a
            # bare time, which no key equals
            condition += " AND #lsk BETWEEN :after AND :before"
            values[":after"] = {"S": self.after + "#"}
            values[":before"] = {"S": self.before}
        elif self.after is not None:
            condition += " AND #lsk > :after"
            values[":after"] = {"S": self.after}
        elif self.before is not None:
            condition += " AND #lsk < :before"
            values[":before"] = {"S": self.before}
        return condition, names, values


def lobby_range(status: GameStatus, now: float, cursor: str | None = None) -> LobbyRange:
    """The range a `list_games(status)` reads at `now`: `open` and `over` their partition
    after the cursor; `active` the active partition from `live_since(now)` on (the games
    being played), `abandoned` the same partition before it."""
    if status in ("open", "over"):
        return LobbyRange("open" if status == "open" else "over", after=cursor)
    cut = mapping.heartbeat_key(live_since(now))
    if status == "active":
        return LobbyRange("active", after=cut if cursor is None else max(cursor, cut))
    return LobbyRange("active", after=cursor, before=cut)


# ---------------------------------------------------------------- conflicts
def version_moved(game_id: str, current: GameSnapshot, expected: int) -> Conflict:
    """Conflict(`version`): the snapshot is no longer at the version the writer read."""
    return Conflict(
        f"game {game_id} moved to version {current.version} (expected {expected})",
        reason="version",
        current=current,
    )


def kept_changing(game_id: str, current: GameSnapshot | None) -> Conflict:
    """Conflict(`busy`): a seat could not be taken in `JOIN_ATTEMPTS` tries."""
    return Conflict(f"game {game_id} kept changing; retry", reason="busy", current=current)
