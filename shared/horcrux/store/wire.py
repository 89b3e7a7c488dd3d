"""The wire formats of the store's binary attributes, each behind a version table.

A binary attribute starts with a format byte; the tables below map that byte to its decoder,
so a reader takes every format ever written and a writer writes the newest one.

`state` (the snapshot's whole `GameState`, `STATE_FORMATS`): 0x01 binary, 0x02 binary
raw-deflated, 0x78 the legacy zlib'd JSON (still read; and written for a state the binary
format cannot hold: custom rules with more than 256 locations, a location off the board,
more than 15 observations in one record). The binary payload: rules as a preset code (0:
custom, its JSON follows), then seed, turn, phase, seq, the Horcruxes' and decoys' location
indexes, the counters, the allies' rest and uses, winner, end reason, and Harry's history at
3-6 bytes per record (turn delta, one byte of action type and observation count, the
action's location indexes, one byte per observation: kind, outcome, sensor, and a flag for
a location other than the action's). The compact tables (`ACTIONS`, `KINDS`, `OUTCOMES`,
`SENSORS`, `PHASES`, `WINNERS`) name by index every value those bytes can hold; they are
append-only, and tests/unit/test_item_sizes.py checks that they cover every action type and
every literal field of `horcrux.models` a state can hold.

`bpt` (a belief point, `POINT_FORMATS`): 0x01, 8-20 bytes. `bhist` (a whole belief
history, the end-of-game record's): zlib'd compact JSON. `dec` (an AI seat's decision note
on its event, `DECISION_FORMATS`): 0x01 then zlib'd compact JSON.

No I/O and no item layout here (that is `horcrux.store.mapping`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from horcrux.decisions import DecisionNote
from horcrux.models import Ally, Attack, GameState, HarryRecord, Observation, Search
from horcrux.rules import ALLY_NAMES, LOCATIONS, PRESETS, AllyName, RuleSet
from horcrux.store.port import BeliefPoint

_ZLEVEL = 9


@dataclass(frozen=True)
class WireFormat:
    """One version of a binary attribute: its leading byte, a name, and its decoder."""

    code: int
    name: str
    decode: Callable[[bytes], Any]
    """Takes the whole blob, format byte included."""


# ---------------------------------------------------------------- GameState, binary (format 1/2)
STATE_RAW = 0x01
"""Leading byte of a binary state, uncompressed (docs/STORE.md, "The state encoding")."""
STATE_DEFLATE = 0x02
"""Leading byte of a binary state whose payload is raw-deflated (when that is smaller)."""
STATE_JSON = 0x78
"""A legacy state (zlib-compressed JSON) starts with zlib's header byte."""
PRESET_CODES: tuple[str, ...] = ("", "classic", "standard")
"""Rules by code: 0 custom (its JSON follows), then the presets. Append only."""
PHASES: tuple[str, ...] = ("harry", "voldemort", "over")
WINNERS: tuple[str | None, ...] = (None, "harry", "voldemort")
ACTIONS: tuple[tuple[str, str | None], ...] = (
    ("search", None),
    ("attack", None),
    ("ally", "ron"),
    ("ally", "hermione"),
    ("ally", "dumbledore"),
)
KINDS: tuple[str, ...] = ("search", "attack", "reveal")
OUTCOMES: tuple[str, ...] = ("positive", "negative", "destroyed", "decoy", "empty", "horcrux")
SENSORS: tuple[str | None, ...] = (None, "harry", "hermione")
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
    for code, name in enumerate(PRESET_CODES):
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
        return _index(ACTIONS, ("ally", action.ally))
    return _index(ACTIONS, (action.type, None))


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
            _index(KINDS, obs.kind)
            | _index(OUTCOMES, obs.outcome) << 2
            | _index(SENSORS, obs.sensor) << 5
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
    out.append(_index(PHASES, state.phase))
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
    out.append(_index(WINNERS, state.winner))
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
    kind, ally = ACTIONS[head & 0x0F]
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
                kind=KINDS[bits & 0x03],
                outcome=OUTCOMES[bits >> 2 & 0x07],
                sensor=SENSORS[bits >> 5 & 0x03],
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
        rules = PRESETS[PRESET_CODES[code]]
    locations = rules.locations
    seed = r.svarint()
    turn = r.svarint()
    phase = PHASES[r.byte()]
    seq = r.svarint()
    horcruxes = _read_locations(r, locations)
    decoys = _read_locations(r, locations)
    destroyed, attacks_left, relocations_left, decoys_left = (r.svarint() for _ in range(4))
    ally_ready_turn = _read_allies(r)
    ally_uses_left = _read_allies(r)
    winner = WINNERS[r.byte()]
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


STATE_FORMATS: dict[int, WireFormat] = {
    f.code: f
    for f in (
        WireFormat(STATE_RAW, "binary", lambda blob: _read_state(blob[1:])),
        WireFormat(
            STATE_DEFLATE,
            "binary, deflated",
            lambda blob: _read_state(zlib.decompress(blob[1:], -15)),
        ),
        WireFormat(
            STATE_JSON,
            "zlib'd JSON (legacy, and the fallback)",
            lambda blob: GameState.model_validate_json(zlib.decompress(blob)),
        ),
    )
}
"""Every `state` format ever written, by its leading byte. Add a format here, never remove one."""


def decode_state(blob: bytes) -> GameState:
    """Any stored format (`STATE_FORMATS`): binary, binary deflated or the legacy JSON."""
    state: GameState = _format(STATE_FORMATS, blob, "state").decode(blob)
    return state


def _format(table: dict[int, WireFormat], blob: bytes, what: str) -> WireFormat:
    head = blob[0] if blob else None
    found = table.get(head) if head is not None else None
    if found is None:
        raise ValueError(f"unknown {what} format {head!r}")
    return found


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


def _read_point(blob: bytes) -> BeliefPoint:
    r = _Reader(blob)
    r.byte()  # the format byte
    turn = r.svarint()
    entropy = r.svarint() / _POINT_SCALE
    top = []
    for _ in range(r.byte()):
        index = r.byte()
        loc = r.text() if index == _NAMED_LOCATION else LOCATIONS[index]
        top.append((loc or "", r.svarint() / _POINT_SCALE))
    return BeliefPoint(turn=turn, entropy=entropy, top=tuple(top))


POINT_FORMATS: dict[int, WireFormat] = {
    POINT_FORMAT: WireFormat(POINT_FORMAT, "binary point", _read_point),
}
"""Every belief point format, by its leading byte."""


def decode_point(blob: bytes) -> BeliefPoint:
    """Any stored belief point format (`POINT_FORMATS`)."""
    point: BeliefPoint = _format(POINT_FORMATS, blob, "belief point").decode(blob)
    return point


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


# ---------------------------------------------------------------- decision notes
DECISION_FORMAT = 0x01
"""Leading byte of a decision note (`dec` on an AI seat's event): zlib'd compact JSON."""


def encode_decision(note: DecisionNote) -> bytes:
    """An AI seat's decision note: the format byte, then its JSON (defaults left out),
    zlib'd."""
    body = note.model_dump_json(exclude_defaults=True).encode()
    return bytes([DECISION_FORMAT]) + zlib.compress(body, _ZLEVEL)


def _read_decision(blob: bytes) -> DecisionNote:
    return DecisionNote.model_validate_json(zlib.decompress(blob[1:]))


DECISION_FORMATS: dict[int, WireFormat] = {
    DECISION_FORMAT: WireFormat(DECISION_FORMAT, "zlib json note", _read_decision),
}
"""Every decision note format, by its leading byte."""


def decode_decision(blob: bytes) -> DecisionNote:
    """Any stored decision note format (`DECISION_FORMATS`)."""
    note: DecisionNote = _format(DECISION_FORMATS, blob, "decision note").decode(blob)
    return note
