"""What both adapters share, so they store and answer alike: the snapshot key, the item size
limit, the TTL filter on reads, the items of a turn or a result, pages and the version
conflict. No I/O here (boto3 stays in `horcrux.store.dynamodb`)."""

from __future__ import annotations

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
    ItemTooLarge,
    LobbyPage,
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
