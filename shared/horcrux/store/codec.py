"""Compact item encoding, shared by both adapters (so both hold byte-identical items).

Items are DynamoDB's low-level attribute values (`{"S": ...}`, `{"N": ...}`, `{"B": ...}`),
which is what the boto3 client sends and what `item_size` measures as DynamoDB does.

Snapshot item (games table, pk `GAME#<id>`, sk `SNAPSHOT`): small scalar attributes for
the lobby and for inspection (`v`, `status`, `turn`, `phase`, `rules`, `seats`, `created`,
`ttl`), the whole `GameState` in the binary format below (`state`), the Layer-2 snapshot of
a seat whose brain cannot be rebuilt from its view as opaque bytes (`belief`, a map seat ->
B; the planner stores none), Harry's latest belief point (`bpt`, binary), and the lobby
index keys (`lobby` = the status, `lobby_sk`; `open_seats` while a seat is free).

Event item (events table, pk `GAME#<id>`, sk `seq` number): `type`, `turn`, `body` (the
event's JSON), `ttl`, `winner` on the event that ends the game, `next_ai` (`harry` |
`voldemort`) on an event after which an AI seat must act (both are stream filter keys: the
compaction Lambda filters on `winner`, the AI-turn Lambdas on `next_ai`), and `bpt` on a
Harry move an AI Harry made with a belief: the belief point it acted on. The belief
history lives in the log, one point per event, so no item grows with the game's length
beyond the state's few bytes per turn (docs/STORE.md, "Item sizes").

`state` formats (the leading byte): 0x01 binary, 0x02 binary raw-deflated, 0x78 the
legacy zlib'd JSON (still read; and written for a state the binary format cannot hold).
The binary payload: rules as a preset code (0: custom, its JSON follows), then seed, turn,
phase, seq, the Horcruxes' and decoys' location indexes, the counters, the allies' rest and
uses, winner, end reason, and Harry's history at 3-6 bytes per record (turn delta, one
byte of action type and observation count, the action's location indexes, one byte per
observation: kind, outcome, sensor, and a flag for a location other than the action's).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from horcrux.models import (
    Ally,
    Attack,
    GameState,
    HarryRecord,
    Observation,
    Search,
    Seat,
)
from horcrux.rules import ALLY_NAMES, LOCATIONS, PRESETS, AllyName, RuleSet
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
# ---------------------------------------------------------------- GameState, binary (format 1/2)
STATE_RAW = 0x01
"""Leading byte of a binary state, uncompressed (docs/STORE.md, "The state encoding")."""
STATE_DEFLATE = 0x02
"""Leading byte of a binary state whose payload is raw-deflated (when that is smaller)."""
_ZLIB_HEADER = 0x78
"""A legacy state (zlib-compressed JSON) starts with zlib's header byte."""
_PRESET_CODES: tuple[str, ...] = ("", "classic", "standard")
"""Rules by code: 0 custom (its JSON follows), then the presets. Append only."""
_PHASES: tuple[str, ...] = ("harry", "voldemort", "over")
_WINNERS: tuple[str | None, ...] = (None, "harry", "voldemort")
_ACTIONS: tuple[tuple[str, str | None], ...] = (
    ("search", None),
    ("attack", None),
    ("ally", "ron"),
    ("ally", "hermione"),
    ("ally", "dumbledore"),
)
_KINDS: tuple[str, ...] = ("search", "attack", "reveal")
_OUTCOMES: tuple[str, ...] = ("positive", "negative", "destroyed", "decoy", "empty", "horcrux")
_SENSORS: tuple[str | None, ...] = (None, "harry", "hermione")
_EXPLICIT_LOCATION = 0x80


class _Unencodable(Exception):
    """The state holds something the binary format cannot say: use the JSON format."""


def _uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise _Unencodable(f"negative value {value}")
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _svarint(out: bytearray, value: int) -> None:
    _uvarint(out, value * 2 if value >= 0 else -value * 2 - 1)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        if len(chunk) != n:
            raise ValueError("truncated state")
        self.pos += n
        return chunk

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def svarint(self) -> int:
        raw = self.uvarint()
        return raw >> 1 if not raw & 1 else -((raw + 1) >> 1)

    def text(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()


def _index(table: tuple[Any, ...], value: Any) -> int:
    try:
        return table.index(value)
    except ValueError:
        raise _Unencodable(f"{value!r} is not in {table!r}") from None


def _text(out: bytearray, value: str | None) -> None:
    if value is None:
        _uvarint(out, 0)
        return
    raw = value.encode()
    _uvarint(out, len(raw) + 1)
    out += raw


def _rules_code(rules: RuleSet) -> int:
    for code, name in enumerate(_PRESET_CODES):
        if name and rules.name == name and PRESETS.get(name) == rules:
            return code
    return 0


def _locations(out: bytearray, locs: tuple[str, ...], table: dict[str, int]) -> None:
    _uvarint(out, len(locs))
    for loc in locs:
        out.append(_loc(table, loc))


def _loc(table: dict[str, int], loc: str) -> int:
    index = table.get(loc)
    if index is None:
        raise _Unencodable(f"location {loc!r} is not on the board")
    return index


def _allies(out: bytearray, values: dict[AllyName, int]) -> None:
    mask = 0
    for i, name in enumerate(ALLY_NAMES):
        if name in values:
            mask |= 1 << i
    if len(values) != bin(mask).count("1"):
        raise _Unencodable(f"unknown ally in {values!r}")
    out.append(mask)
    for name in ALLY_NAMES:
        if name in values:
            _svarint(out, values[name])


def _action_code(action: Search | Attack | Ally) -> int:
    if isinstance(action, Ally):
        return _index(_ACTIONS, ("ally", action.ally))
    return _index(_ACTIONS, (action.type, None))


def _record(out: bytearray, record: HarryRecord, prev_turn: int, table: dict[str, int]) -> None:
    _svarint(out, record.turn - prev_turn)
    action = record.action
    locs = action.locations if isinstance(action, Ally) else (action.location,)
    if len(record.observations) > 15:
        raise _Unencodable("more than 15 observations in one record")
    out.append(_action_code(action) | len(record.observations) << 4)
    for loc in locs:
        out.append(_loc(table, loc))
    for i, obs in enumerate(record.observations):
        bits = (
            _index(_KINDS, obs.kind)
            | _index(_OUTCOMES, obs.outcome) << 2
            | _index(_SENSORS, obs.sensor) << 5
        )
        if i < len(locs) and obs.location == locs[i]:
            out.append(bits)
        else:
            out.append(bits | _EXPLICIT_LOCATION)
            out.append(_loc(table, obs.location))


def _binary_state(state: GameState) -> bytes:
    rules = state.rules
    if len(rules.locations) > 256:
        raise _Unencodable("more than 256 locations")
    table = {loc: i for i, loc in enumerate(rules.locations)}
    out = bytearray()
    code = _rules_code(rules)
    _uvarint(out, code)
    if code == 0:
        _text(out, rules.model_dump_json())
    _svarint(out, state.seed)
    _svarint(out, state.turn)
    out.append(_index(_PHASES, state.phase))
    _svarint(out, state.seq)
    _locations(out, state.horcruxes, table)
    _locations(out, state.decoys, table)
    for number in (
        state.destroyed,
        state.attacks_left,
        state.relocations_left,
        state.decoys_left,
    ):
        _svarint(out, number)
    _allies(out, state.ally_ready_turn)
    _allies(out, state.ally_uses_left)
    out.append(_index(_WINNERS, state.winner))
    _text(out, state.end_reason)
    _uvarint(out, len(state.history))
    prev = 0
    for record in state.history:
        _record(out, record, prev, table)
        prev = record.turn
    return bytes(out)


def _read_locations(r: _Reader, locations: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(locations[r.byte()] for _ in range(r.uvarint()))


def _read_allies(r: _Reader) -> dict[AllyName, int]:
    mask = r.byte()
    return {name: r.svarint() for i, name in enumerate(ALLY_NAMES) if mask & 1 << i}


def _read_record(r: _Reader, prev_turn: int, locations: tuple[str, ...]) -> HarryRecord:
    turn = prev_turn + r.svarint()
    head = r.byte()
    kind, ally = _ACTIONS[head & 0x0F]
    n_obs = head >> 4
    action: Search | Attack | Ally
    if kind == "ally":
        assert ally is not None
        n = 2 if ally == "ron" else 1
        locs = tuple(locations[r.byte()] for _ in range(n))
        action = Ally(ally=ally, locations=locs)
    else:
        locs = (locations[r.byte()],)
        action = Search(location=locs[0]) if kind == "search" else Attack(location=locs[0])
    observations = []
    for i in range(n_obs):
        bits = r.byte()
        loc = locations[r.byte()] if bits & _EXPLICIT_LOCATION else locs[i]
        observations.append(
            Observation(
                location=loc,
                kind=_KINDS[bits & 0x03],
                outcome=_OUTCOMES[bits >> 2 & 0x07],
                sensor=_SENSORS[bits >> 5 & 0x03],
            )
        )
    return HarryRecord(turn=turn, action=action, observations=tuple(observations))


def _read_state(payload: bytes) -> GameState:
    r = _Reader(payload)
    code = r.uvarint()
    if code == 0:
        text = r.text()
        assert text is not None
        rules = RuleSet.model_validate_json(text)
    else:
        rules = PRESETS[_PRESET_CODES[code]]
    locations = rules.locations
    seed = r.svarint()
    turn = r.svarint()
    phase = _PHASES[r.byte()]
    seq = r.svarint()
    horcruxes = _read_locations(r, locations)
    decoys = _read_locations(r, locations)
    destroyed, attacks_left, relocations_left, decoys_left = (r.svarint() for _ in range(4))
    ally_ready_turn = _read_allies(r)
    ally_uses_left = _read_allies(r)
    winner = _WINNERS[r.byte()]
    end_reason = r.text()
    history = []
    prev = 0
    for _ in range(r.uvarint()):
        record = _read_record(r, prev, locations)
        history.append(record)
        prev = record.turn
    if r.pos != len(payload):
        raise ValueError(f"{len(payload) - r.pos} stray bytes after the state")
    return GameState(
        rules=rules,
        seed=seed,
        turn=turn,
        phase=phase,
        seq=seq,
        horcruxes=horcruxes,
        decoys=decoys,
        destroyed=destroyed,
        attacks_left=attacks_left,
        relocations_left=relocations_left,
        decoys_left=decoys_left,
        ally_ready_turn=ally_ready_turn,
        ally_uses_left=ally_uses_left,
        history=tuple(history),
        winner=winner,
        end_reason=end_reason,
    )


def encode_state(state: GameState) -> bytes:
    """The state as stored: binary (a format byte, then the payload, raw or deflated,
    whichever is smaller); zlib'd JSON for a state the binary format cannot hold."""
    try:
        payload = _binary_state(state)
    except _Unencodable:
        return encode_state_json(state)
    packer = zlib.compressobj(_ZLEVEL, zlib.DEFLATED, -15)
    packed = packer.compress(payload) + packer.flush()
    if len(packed) < len(payload):
        return bytes([STATE_DEFLATE]) + packed
    return bytes([STATE_RAW]) + payload


def encode_state_json(state: GameState) -> bytes:
    """The legacy format (zlib-compressed JSON): still decoded, and the fallback."""
    return zlib.compress(state.model_dump_json().encode(), _ZLEVEL)


def decode_state(blob: bytes) -> GameState:
    """Any stored format: binary (format byte 1 or 2) or the legacy zlib'd JSON."""
    head = blob[0] if blob else None
    if head == STATE_RAW:
        return _read_state(blob[1:])
    if head == STATE_DEFLATE:
        return _read_state(zlib.decompress(blob[1:], -15))
    if head == _ZLIB_HEADER:
        return GameState.model_validate_json(zlib.decompress(blob))
    raise ValueError(f"unknown state format {head!r}")


# ---------------------------------------------------------------- belief points, binary
POINT_FORMAT = 0x01
"""Leading byte of a binary belief point (`bpt` on the snapshot and on an event)."""
_POINT_SCALE = 10_000
"""Entropy and probabilities are kept to 4 decimals, as `BeliefPoint` rounds them."""
_NAMED_LOCATION = 0xFF
"""A top location off the default board follows as text."""


def encode_point(point: BeliefPoint) -> bytes:
    """One belief point in 8-20 bytes: format, turn, entropy (1e-4 bits), then per top
    location its index on the default board (or 0xFF and its name) and p (1e-4)."""
    out = bytearray([POINT_FORMAT])
    _svarint(out, point.turn)
    _svarint(out, round(point.entropy * _POINT_SCALE))
    out.append(len(point.top))
    for loc, p in point.top:
        if loc in _BOARD:
            out.append(_BOARD[loc])
        else:
            out.append(_NAMED_LOCATION)
            _text(out, loc)
        _svarint(out, round(p * _POINT_SCALE))
    return bytes(out)


def decode_point(blob: bytes) -> BeliefPoint:
    r = _Reader(blob)
    if r.byte() != POINT_FORMAT:
        raise ValueError(f"unknown belief point format {blob[:1]!r}")
    turn = r.svarint()
    entropy = r.svarint() / _POINT_SCALE
    top = []
    for _ in range(r.byte()):
        index = r.byte()
        loc = r.text() if index == _NAMED_LOCATION else LOCATIONS[index]
        top.append((loc or "", r.svarint() / _POINT_SCALE))
    return BeliefPoint(turn=turn, entropy=entropy, top=tuple(top))


_BOARD = {loc: i for i, loc in enumerate(LOCATIONS)}


def encode_history(history: tuple[BeliefPoint, ...]) -> bytes:
    """A whole belief history as zlib'd compact JSON (the end-of-game record's `bhist`,
    and the snapshot's before the history moved to the log)."""
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
    return {"M": out}


def _decode_seat(value: Item) -> SeatInfo:
    m = value["M"]
    return SeatInfo(
        kind=m["kind"]["S"],
        brain=m["brain"]["S"] if "brain" in m else None,
        token_hash=m["tok"]["S"] if "tok" in m else None,
    )


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
    # the lobby index, by status (`open`, `active`, `over`): the lobby and the game history;
    # its keys and projected attributes change only when the status does, not per move
    item["lobby"] = {"S": snapshot.status}
    item["lobby_sk"] = {"S": lobby_sort_key(snapshot)}
    if snapshot.open_seats:
        item["open_seats"] = {"SS": list(snapshot.open_seats)}
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
    )


def decode_lobby_entry(item: Item) -> LobbyEntry:
    return LobbyEntry(
        game_id=game_id_of(item["pk"]["S"]),
        rules_name=item["rules"]["S"],
        open_seats=tuple(s for s in SEATS if s in item.get("open_seats", {"SS": []})["SS"]),
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
    game_id: str,
    event: AnyEvent,
    expires_at: int,
    next_ai: Seat | None = None,
    point: BeliefPoint | None = None,
) -> Item:
    """The event item; `next_ai` marks an event after which that AI seat must act, `point`
    is the belief Harry acted on in this event (`bpt`, binary)."""
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
    return item


def encode_turn_event(snapshot: GameSnapshot, event: AnyEvent) -> Item:
    """The item of the event that leads to `snapshot` (a turn's, or `game_started`)."""
    return encode_event(
        snapshot.game_id,
        event,
        snapshot.expires_at,
        next_ai(snapshot),
        event_point(snapshot, event),
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
