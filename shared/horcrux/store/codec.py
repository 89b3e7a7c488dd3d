"""The store's codec, by its old name: a re-export only, for the modules outside the store
that import it (service, the compaction handler). The code lives in three modules:

- `horcrux.store.wire`: the binary formats (`state`, `bpt`, `bhist`) and their version tables;
- `horcrux.store.mapping`: the item mapping (keys, snapshot, event, lobby entry, TTL);
- `horcrux.store.capacity`: item sizes and capacity units, as DynamoDB counts them.

New code imports those modules directly.
"""

from horcrux.store.capacity import Item, item_size, read_units, value_size, write_units
from horcrux.store.mapping import (
    LOBBY_OPEN,
    SNAPSHOT_SK,
    as_stored,
    decode_event,
    decode_event_point,
    decode_event_points,
    decode_lobby_entry,
    decode_snapshot,
    encode_event,
    encode_snapshot,
    encode_turn_event,
    event_point,
    game_id_of,
    game_pk,
    is_expired,
    lobby_sort_key,
    next_ai,
    ttl_of,
)
from horcrux.store.wire import (
    POINT_FORMAT,
    STATE_DEFLATE,
    STATE_RAW,
    decode_history,
    decode_point,
    decode_state,
    encode_history,
    encode_point,
    encode_state,
    encode_state_json,
)

__all__ = [
    "LOBBY_OPEN",
    "POINT_FORMAT",
    "SNAPSHOT_SK",
    "STATE_DEFLATE",
    "STATE_RAW",
    "Item",
    "as_stored",
    "decode_event",
    "decode_event_point",
    "decode_event_points",
    "decode_history",
    "decode_lobby_entry",
    "decode_point",
    "decode_snapshot",
    "decode_state",
    "encode_event",
    "encode_history",
    "encode_point",
    "encode_snapshot",
    "encode_state",
    "encode_state_json",
    "encode_turn_event",
    "event_point",
    "game_id_of",
    "game_pk",
    "is_expired",
    "item_size",
    "lobby_sort_key",
    "next_ai",
    "read_units",
    "ttl_of",
    "value_size",
    "write_units",
]
