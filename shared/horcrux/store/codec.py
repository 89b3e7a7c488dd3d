"""Compact item encoding, shared by both adapters (so both hold byte-identical items).

Items are DynamoDB's low-level attribute values (`{"S": ...}`, `{"N": ...}`, `{"B": ...}`),
which is what the boto3 client sends and what `item_size` measures as DynamoDB does.

Snapshot item (games table, pk `GAME#<id>`, sk `SNAPSHOT`): small scalar attributes for
the lobby and for inspection (`v`, `status`, `turn`, `phase`, `rules`, `seats`, `created`,
`ttl`), the whole `GameState` as zlib-compressed JSON (`state`), each seat's Layer-2
belief snapshot as opaque bytes (`belief`, a map seat -> B), the bounded belief history
as zlib-compressed compact JSON (`bhist`), and, only while the game is open, the sparse
lobby index keys (`lobby`, `lobby_sk`, `open_seats`).

Event item (events table, pk `GAME#<id>`, sk `seq` number): `type`, `turn`, `body` (the
event's JSON), `ttl`, `winner` on the event that ends the game, and `next_ai` (`harry` |
`voldemort`) on an event after which an AI seat must act (both are stream filter keys: the
compaction Lambda filters on `winner`, the AI-turn Lambdas on `next_ai`).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from horcrux.models import GameState, Seat
from horcrux.store.port import (
    EVENT_ADAPTER,
    SEATS,
    AnyEvent,
    BeliefPoint,
    GameSnapshot,
    LobbyEntry,
    SeatInfo,
)

Item = dict[str, Any]
"""One item as low-level attribute values: `{"pk": {"S": "GAME#x"}, "v": {"N": "3"}}`."""

SNAPSHOT_SK = "SNAPSHOT"
LOBBY_OPEN = "open"
_ZLEVEL = 9


def game_pk(game_id: str) -> str:
    return f"GAME#{game_id}"


def game_id_of(pk: str) -> str:
    prefix, _, game_id = pk.partition("#")
    if prefix != "GAME" or not game_id:
        raise ValueError(f"not a game key: {pk!r}")
    return game_id


def lobby_sort_key(snapshot: GameSnapshot) -> str:
    """Oldest first: creation time in milliseconds, zero-padded, then the id (unique)."""
    return f"{round(snapshot.created_at * 1000):015d}#{snapshot.game_id}"


def _n(value: int | float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


# ---------------------------------------------------------------- snapshot
def encode_state(state: GameState) -> bytes:
    return zlib.compress(state.model_dump_json().encode(), _ZLEVEL)


def decode_state(blob: bytes) -> GameState:
    return GameState.model_validate_json(zlib.decompress(blob))


def encode_history(history: tuple[BeliefPoint, ...]) -> bytes:
    rows = [
        [p.turn, round(p.entropy, 4), [[loc, round(prob, 4)] for loc, prob in p.top]]
        for p in history
    ]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), _ZLEVEL)


def decode_history(blob: bytes) -> tuple[BeliefPoint, ...]:
    rows = json.loads(zlib.decompress(blob))
    return tuple(
        BeliefPoint(turn=t, entropy=e, top=tuple((loc, p) for loc, p in top)) for t, e, top in rows
    )


def _encode_seat(info: SeatInfo) -> Item:
    out: Item = {"kind": {"S": info.kind}}
    if info.brain is not None:
        out["brain"] = {"S": info.brain}
    if info.token_hash is not None:
        out["tok"] = {"S": info.token_hash}
    return {"M": out}


def _decode_seat(value: Item) -> SeatInfo:
    m = value["M"]
    return SeatInfo(
        kind=m["kind"]["S"],
        brain=m["brain"]["S"] if "brain" in m else None,
        token_hash=m["tok"]["S"] if "tok" in m else None,
    )


def encode_snapshot(snapshot: GameSnapshot) -> Item:
    """The snapshot item. Lobby keys are present only while the game is open (sparse GSI)."""
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
        item["bhist"] = {"B": encode_history(snapshot.belief_history)}
    if snapshot.status == "open":
        item["lobby"] = {"S": LOBBY_OPEN}
        item["lobby_sk"] = {"S": lobby_sort_key(snapshot)}
        item["open_seats"] = {"SS": list(snapshot.open_seats)}
    return item


def decode_snapshot(item: Item) -> GameSnapshot:
    seats: dict[Seat, SeatInfo] = {seat: _decode_seat(item["seats"]["M"][seat]) for seat in SEATS}
    beliefs = {k: bytes(v["B"]) for k, v in item.get("belief", {"M": {}})["M"].items()}
    history = decode_history(bytes(item["bhist"]["B"])) if "bhist" in item else ()
    return GameSnapshot(
        game_id=game_id_of(item["pk"]["S"]),
        version=int(item["v"]["N"]),
        seats=seats,
        state=decode_state(bytes(item["state"]["B"])),
        beliefs=beliefs,
        belief_history=history,
        created_at=float(item["created"]["N"]),
        expires_at=int(item["ttl"]["N"]),
    )


def decode_lobby_entry(item: Item) -> LobbyEntry:
    return LobbyEntry(
        game_id=game_id_of(item["pk"]["S"]),
        rules_name=item["rules"]["S"],
        open_seats=tuple(s for s in SEATS if s in item["open_seats"]["SS"]),
        created_at=float(item["created"]["N"]),
    )


# ---------------------------------------------------------------- events
def next_ai(snapshot: GameSnapshot) -> Seat | None:
    """The AI seat that must act next in `snapshot` (None: a person's turn, or the end)."""
    phase = snapshot.state.phase
    if phase == "over":
        return None
    return phase if snapshot.seats[phase].kind == "ai" else None


def encode_event(
    game_id: str, event: AnyEvent, expires_at: int, next_ai: Seat | None = None
) -> Item:
    """The event item; `next_ai` marks an event after which that AI seat must act."""
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
    return item


def decode_event(item: Item) -> AnyEvent:
    return EVENT_ADAPTER.validate_json(item["body"]["S"])


def ttl_of(item: Item) -> int | None:
    value = item.get("ttl")
    return int(value["N"]) if value is not None else None


def is_expired(item: Item, now: float) -> bool:
    """TTL deletion is lazy (and moto never deletes): reads must filter expired items."""
    ttl = ttl_of(item)
    return ttl is not None and ttl <= now


# ---------------------------------------------------------------- sizes, as DynamoDB counts
def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").split("e")[0].split("E")[0]
    significant = digits.strip("0") or "0"
    return (len(significant) + 1) // 2 + 1


def value_size(value: Item) -> int:
    """The size DynamoDB bills for one attribute value (without its name)."""
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(_number_size(s) for s in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(x) for k, x in v.items())
    if kind == "L":
        return 3 + sum(1 + value_size(x) for x in v)
    raise ValueError(f"unknown attribute value type {kind!r}")


def item_size(item: Item) -> int:
    """Item size as DynamoDB measures it: every attribute name plus its value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def read_units(size: int, *, consistent: bool = True) -> float:
    """Read capacity units of one GetItem: 4 KB per unit, half for eventually consistent."""
    units = max(1, -(-size // 4096))
    return float(units) if consistent else units / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    """Write capacity units of one item write: 1 KB per unit, doubled in a transaction."""
    units = max(1, -(-size // 1024))
    return float(units * (2 if transactional else 1))
