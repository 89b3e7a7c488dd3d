"""The item mapping: domain values to the items both adapters store, and back.

Items are DynamoDB's low-level attribute values (`{"S": ...}`, `{"N": ...}`, `{"B": ...}`),
which is what the boto3 client sends and what `capacity.item_size` measures as DynamoDB
does; the binary attributes are in the formats of `horcrux.store.wire`.

Snapshot item (games table, pk `GAME#<id>`, sk `SNAPSHOT`): small scalar attributes for
the lobby and for inspection (`v`, `status`, `turn`, `phase`, `rules`, `seats`, `created`,
`ttl`, `beat`: the heartbeat, once a turn or a join refreshed it), the whole `GameState`
(`state`, `wire.encode_state`), the Layer-2 snapshot of a
seat whose brain cannot be rebuilt from its view as opaque bytes (`belief`, a map seat ->
B; the planner stores none), Harry's latest belief point (`bpt`, `wire.encode_point`), and
the lobby index keys (`lobby` = the status, `lobby_sk`; `open_seats` while a seat is free).

Event item (events table, pk `GAME#<id>`, sk `seq` number): `type`, `turn`, `body` (the
event's JSON), `ttl`, `winner` on the event that ends the game, `next_ai` (`harry` |
`voldemort`) on an event after which an AI seat must act (both are stream filter keys: the
compaction Lambda filters on `winner`, the AI-turn Lambdas on `next_ai`), and `bpt` on a
Harry move an AI Harry made with a belief: the belief point it acted on; `dec` on an AI
seat's move: its decision note (`wire.encode_decision`: tier, the context its model saw, the
move), released with the replay only. The belief
history lives in the log, one point per event, so no item grows with the game's length
beyond the state's few bytes per turn (docs/STORE.md, "Item sizes").
"""

from __future__ import annotations

from horcrux.decisions import DecisionNote
from horcrux.models import Seat
from horcrux.store.capacity import Item
from horcrux.store.port import (
    BELIEF_HISTORY_MAX,
    EVENT_ADAPTER,
    SEATS,
    AnyEvent,
    BeliefPoint,
    GameSnapshot,
    LobbyEntry,
    SeatInfo,
)
from horcrux.store.wire import (
    decode_decision,
    decode_history,
    decode_point,
    decode_state,
    encode_decision,
    encode_point,
    encode_state,
)

SNAPSHOT_SK = "SNAPSHOT"
LOBBY_OPEN = "open"


def game_pk(game_id: str) -> str:
    return f"GAME#{game_id}"


def game_id_of(pk: str) -> str:
    prefix, _, game_id = pk.partition("#")
    if prefix != "GAME" or not game_id:
        raise ValueError(f"not a game key: {pk!r}")
    return game_id


def lobby_sort_key(snapshot: GameSnapshot) -> str:
    """Oldest first: creation time in milliseconds, zero-padded, then the id (unique); an
    `active` game's by its heartbeat instead (`heartbeat_key`), so the games being played
    and the abandoned ones are two ranges of one key (`common.LobbyRange`)."""
    if snapshot.status == "active":
        return f"{heartbeat_key(snapshot.heartbeat)}#{snapshot.game_id}"
    return f"{round(snapshot.created_at * 1000):015d}#{snapshot.game_id}"


def heartbeat_key(epoch_s: int) -> str:
    """The lobby key's time part for a heartbeat (epoch seconds), in milliseconds."""
    return f"{epoch_s * 1000:015d}"


def _n(value: int | float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def event_point(snapshot: GameSnapshot, event: AnyEvent) -> BeliefPoint | None:
    """The belief point an event item carries: the snapshot's latest point, if it is the
    one Harry acted on in this event (a `harry_moved` of the same turn)."""
    if event.type != "harry_moved" or not snapshot.belief_history:
        return None
    point = snapshot.belief_history[-1]
    return point if point.turn == event.turn else None


def as_stored(snapshot: GameSnapshot) -> GameSnapshot:
    """The snapshot as `load` will return it: its belief history cut to the latest point
    (every point lives in the event of its turn; `EventPage.belief_history`)."""
    if len(snapshot.belief_history) <= 1:
        return snapshot
    return snapshot.model_copy(update={"belief_history": snapshot.belief_history[-1:]})


def _encode_seat(info: SeatInfo) -> Item:
    out: Item = {"kind": {"S": info.kind}}
    if info.brain is not None:
        out["brain"] = {"S": info.brain}
    if info.token_hash is not None:
        out["tok"] = {"S": info.token_hash}
    if info.name is not None:
        out["name"] = {"S": info.name}
    if info.player is not None:
        out["ply"] = {"S": info.player}
    return {"M": out}


def _decode_seat(value: Item) -> SeatInfo:
    m = value["M"]
    return SeatInfo(
        kind=m["kind"]["S"],
        brain=m["brain"]["S"] if "brain" in m else None,
        token_hash=m["tok"]["S"] if "tok" in m else None,
        name=stored_name(m["name"]["S"]) if "name" in m else None,
        player=m["ply"]["S"] if "ply" in m else None,
    )


STORED_NAME_MAX = 32
"""The longest display name a view shows (the API accepts 1-32 characters)."""


def stored_name(value: str) -> str | None:
    """A stored display name as views show it: trimmed and cut to `STORED_NAME_MAX`
    characters (an item written by another version or by hand may hold a longer one; a
    read must never fail on it); None if nothing is left."""
    name = value.strip()[:STORED_NAME_MAX].strip()
    return name or None


def encode_snapshot(snapshot: GameSnapshot) -> Item:
    """The snapshot item, keyed in the lobby index by its status."""
    item: Item = {
        "pk": {"S": game_pk(snapshot.game_id)},
        "sk": {"S": SNAPSHOT_SK},
        "v": _n(snapshot.version),
        "status": {"S": snapshot.status},
        "turn": _n(snapshot.turn),
        "phase": {"S": snapshot.phase},
        "rules": {"S": snapshot.rules_name},
        "seats": {"M": {seat: _encode_seat(snapshot.seats[seat]) for seat in SEATS}},
        "state": {"B": encode_state(snapshot.state)},
        "created": _n(snapshot.created_at),
        "ttl": _n(snapshot.expires_at),
    }
    if snapshot.beliefs:
        item["belief"] = {"M": {k: {"B": bytes(v)} for k, v in sorted(snapshot.beliefs.items())}}
    if snapshot.belief_history:
        item["bpt"] = {"B": encode_point(snapshot.belief_history[-1])}
    if snapshot.invite_hash is not None:
        item["inv"] = {"S": snapshot.invite_hash}
    if snapshot.active_at is not None:
        item["beat"] = _n(snapshot.active_at)
    # the lobby index, by status (`open`, `active`, `over`): the lobby and the game history;
    # its keys and projected attributes change only when the status does, not per move, and
    # an active game's key when its heartbeat does (at most once per `HEARTBEAT_S`).
    # A private game has no lobby keys: the sparse index never holds it.
    if snapshot.invite_hash is None:
        item["lobby"] = {"S": snapshot.status}
        item["lobby_sk"] = {"S": lobby_sort_key(snapshot)}
    if snapshot.open_seats:
        item["open_seats"] = {"SS": list(snapshot.open_seats)}
    names = {s: {"S": i.name} for s, i in snapshot.seats.items() if i.name is not None}
    if names:  # the players' display names, projected into the lobby index
        item["names"] = {"M": names}
    return item


def decode_snapshot(item: Item) -> GameSnapshot:
    seats: dict[Seat, SeatInfo] = {seat: _decode_seat(item["seats"]["M"][seat]) for seat in SEATS}
    beliefs = {k: bytes(v["B"]) for k, v in item.get("belief", {"M": {}})["M"].items()}
    history: tuple[BeliefPoint, ...] = ()
    if "bpt" in item:
        history = (decode_point(bytes(item["bpt"]["B"])),)
    elif "bhist" in item:  # an item written before the history moved to the log
        history = decode_history(bytes(item["bhist"]["B"]))[-BELIEF_HISTORY_MAX:]
    return GameSnapshot(
        game_id=game_id_of(item["pk"]["S"]),
        version=int(item["v"]["N"]),
        seats=seats,
        state=decode_state(bytes(item["state"]["B"])),
        beliefs=beliefs,
        belief_history=history,
        created_at=float(item["created"]["N"]),
        expires_at=int(item["ttl"]["N"]),
        invite_hash=item["inv"]["S"] if "inv" in item else None,
        active_at=int(item["beat"]["N"]) if "beat" in item else None,
    )


def _decode_names(item: Item) -> dict[Seat, str]:
    stored = item.get("names", {"M": {}})["M"]
    names = {seat: stored_name(stored[seat]["S"]) for seat in SEATS if seat in stored}
    return {seat: name for seat, name in names.items() if name is not None}


def decode_lobby_entry(item: Item) -> LobbyEntry:
    return LobbyEntry(
        game_id=game_id_of(item["pk"]["S"]),
        rules_name=item["rules"]["S"],
        open_seats=tuple(s for s in SEATS if s in item.get("open_seats", {"SS": []})["SS"]),
        created_at=float(item["created"]["N"]),
        names=_decode_names(item),
    )


# ---------------------------------------------------------------- events
def next_ai(snapshot: GameSnapshot) -> Seat | None:
    """The AI seat that must act next in `snapshot` (None: a person's turn, or the end)."""
    phase = snapshot.state.phase
    if phase == "over":
        return None
    return phase if snapshot.seats[phase].kind == "ai" else None


def encode_event(
    game_id: str,
    event: AnyEvent,
    expires_at: int,
    next_ai: Seat | None = None,
    point: BeliefPoint | None = None,
    decision: DecisionNote | None = None,
) -> Item:
    """The event item; `next_ai` marks an event after which that AI seat must act, `point`
    is the belief Harry acted on in this event (`bpt`, binary), `decision` the AI seat's
    decision note (`dec`, binary)."""
    item: Item = {
        "pk": {"S": game_pk(game_id)},
        "seq": _n(event.seq),
        "type": {"S": event.type},
        "turn": _n(event.turn),
        "body": {"S": event.model_dump_json()},
        "ttl": _n(expires_at),
    }
    winner = getattr(event, "winner", None)
    if winner is not None:
        item["winner"] = {"S": winner}
    if next_ai is not None:
        item["next_ai"] = {"S": next_ai}
    if point is not None:
        item["bpt"] = {"B": encode_point(point)}
    if decision is not None:
        item["dec"] = {"B": encode_decision(decision)}
    return item


def encode_turn_event(
    snapshot: GameSnapshot, event: AnyEvent, decision: DecisionNote | None = None
) -> Item:
    """The item of the event that leads to `snapshot` (a turn's, or `game_started`), with
    the AI seat's decision note if it has one."""
    return encode_event(
        snapshot.game_id,
        event,
        snapshot.expires_at,
        next_ai(snapshot),
        event_point(snapshot, event),
        decision,
    )


def decode_event(item: Item) -> AnyEvent:
    return EVENT_ADAPTER.validate_json(item["body"]["S"])


def decode_event_point(item: Item) -> BeliefPoint | None:
    """The belief point an event item carries, if any."""
    value = item.get("bpt")
    return decode_point(bytes(value["B"])) if value is not None else None


def decode_event_points(items: list[Item]) -> tuple[BeliefPoint, ...]:
    """The belief points a page of event items carries, in order."""
    return tuple(decode_point(bytes(i["bpt"]["B"])) for i in items if "bpt" in i)


def decode_event_decisions(items: list[Item]) -> tuple[DecisionNote, ...]:
    """The decision notes a page of event items carries, in order."""
    return tuple(decode_decision(bytes(i["dec"]["B"])) for i in items if "dec" in i)


def ttl_of(item: Item) -> int | None:
    value = item.get("ttl")
    return int(value["N"]) if value is not None else None


def is_expired(item: Item, now: float) -> bool:
    """TTL deletion is lazy (and moto never deletes): reads must filter expired items."""
    ttl = ttl_of(item)
    return ttl is not None and ttl <= now
