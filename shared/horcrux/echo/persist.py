"""ECHO's item in the games table and the two moments it is touched (docs/ECHO.md).

`AGENT#<agent>` / `OPP#<opponent>#MEMORY`, beside the scope's recent results:
`schema`, `v` (version; conditional writes), `n` (items), `games`, `last` (the last game
consolidated), `mem` (B: zlib of the memory's JSON).

* End of game (`remember`, called by compaction right after `put_result`): read, check,
  consolidate the summary, write at version + 1 conditioned on the version read.
  Idempotent: a game already consolidated writes nothing.
* Start of game (`startup`): read it, check its expected keys, schema and that its
  `last` is the recent results' last game; on a mismatch rebuild it from the recent
  results (the events' records), write it, and say why (the caller counts it).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.lifecycle import EXPECTED_KEYS, Consolidation, check, consolidate, rebuild
from horcrux.echo.model import MEMORY_SCHEMA, EchoMemory, protected
from horcrux.echo.readers import reads_memory
from horcrux.store.port import AnyEvent, Conflict, ScopeStore
from horcrux.store.results import GameSummary, Item, memory_key, recent_key

log = logging.getLogger(__name__)
ATTEMPTS = 3
_ZLEVEL = 9


def encode_memory(memory: EchoMemory) -> Item:
    return {
        **memory_key(memory.agent, memory.opponent),
        "schema": {"N": str(memory.schema_version)},
        "v": {"N": str(memory.version)},
        "n": {"N": str(len(memory.items))},
        "games": {"N": str(memory.games)},
        "last": {"S": memory.last_game},
        "mem": {"B": zlib.compress(memory.model_dump_json().encode(), _ZLEVEL)},
    }


class BadMemory(ValueError):
    """A stored memory item without the expected keys, or that does not decode."""


def decode_memory(item: Item) -> EchoMemory:
    try:
        data: dict[str, Any] = json.loads(zlib.decompress(bytes(item["mem"]["B"])))
        missing = [k for k in EXPECTED_KEYS if k not in data]
        if missing:
            raise BadMemory(f"memory item lacks {missing}")
        memory = EchoMemory.model_validate(data)
    except (KeyError, zlib.error, ValueError, ValidationError) as exc:
        raise BadMemory(str(exc)) from exc
    if str(memory.version) != item.get("v", {}).get("N"):
        raise BadMemory("the item's version differs from the memory's")
    return memory


def load(store: ScopeStore, agent: str, opponent: str) -> tuple[EchoMemory | None, int]:
    """(memory or None if absent, stored version). Raises BadMemory if it does not decode."""
    item = store.scope_item(memory_key(agent, opponent))
    if item is None:
        return None, 0
    version = int(item.get("v", {}).get("N", "0"))
    return decode_memory(item), version


def _stored_version(store: ScopeStore, agent: str, opponent: str) -> int:
    item = store.scope_item(memory_key(agent, opponent))
    return int(item["v"]["N"]) if item and "v" in item else 0


def remember(
    store: ScopeStore,
    summary: GameSummary,
    *,
    events: Sequence[AnyEvent] | None = None,
    config: EchoConfig | None = None,
    hours: float | None = None,
) -> Consolidation | None:
    """Consolidate a finished game into its scope's memory (None: a person's Harry, a
    brain that does not read memory (`reads_memory`), or already consolidated). Retries a
    moved version; Conflict(`busy`) after 3 tries."""
    scope = summary.scope
    if scope is None or not reads_memory(scope[0], summary.rules):
        return None  # a person's Harry, or a brain that never reads memory: nothing kept
    cfg = config or default_config()
    for _ in range(ATTEMPTS):
        try:
            memory, version = load(store, *scope)
        except BadMemory:
            log.warning("memory of %s vs %s is unreadable: rebuilt", *scope, exc_info=True)
            recent = store.recent_results(*scope)
            version = _stored_version(store, *scope)
            earlier = [s for s in recent.results if s.game_id != summary.game_id]
            memory = rebuild(
                *scope,
                earlier,
                total_games=recent.version - (len(earlier) < len(recent.results)),
                version=version,
                config=cfg,
            ).memory
        if memory is None:
            memory = EchoMemory(agent=scope[0], opponent=scope[1])
        if summary.game_id in memory.seen:
            return None
        # the decay clock: the scope's game ordinal, or (`clock = "hours"`) the game's
        # time in hours, which the caller reads from the store (compaction: its creation)
        clock = hours if cfg.clock == "hours" else None
        result = consolidate(memory, summary, clock=clock, config=cfg, events=events)
        new = result.memory.model_copy(update={"version": version + 1})
        try:
            store.put_scope_item(encode_memory(new), version)
        except Conflict:
            continue
        return replace(result, memory=new)
    raise Conflict(f"the memory of {scope[0]} vs {scope[1]} kept changing; retry", reason="busy")


@dataclass(frozen=True)
class Startup:
    memory: EchoMemory | None
    rebuilt: str | None
    """Why it was rebuilt (`missing`, `stale`, `schema`, `scope`, `unreadable`), or None."""
    unrebuilt: int = 0
    """Games the rebuild could not recover (no longer in the recent results)."""


def startup(
    store: ScopeStore, agent: str, opponent: str, *, config: EchoConfig | None = None
) -> Startup:
    """What an AI Harry's first turn reads: the memory its scope's last game wrote,
    checked against the recent results; rebuilt from them (and written) on a mismatch."""
    cfg = config or default_config()
    recent = store.recent_results(agent, opponent)
    try:
        memory, version = load(store, agent, opponent)
        reason = check(memory, recent)
    except BadMemory:
        memory, version, reason = None, _stored_version(store, agent, opponent), "unreadable"
    if reason is None:
        return Startup(memory, None)
    if memory is not None and reason != "stale":  # another scope or schema: its protected
        kept = tuple(it for it in memory.items if protected(it))  # items only
        memory = EchoMemory(agent=agent, opponent=opponent, items=kept)
    done = rebuild(
        agent, opponent, recent.results, base=memory, total_games=recent.version, config=cfg
    )
    fresh = done.memory.model_copy(update={"version": version + 1})
    if done.unrebuilt:
        log.warning(
            "memory of %s vs %s: %d games could not be rebuilt (no longer in the results)",
            agent,
            opponent,
            done.unrebuilt,
        )
    try:
        store.put_scope_item(encode_memory(fresh), version)
    except Conflict:
        log.info("memory of %s vs %s rewritten meanwhile; using the rebuild", agent, opponent)
    return Startup(fresh, reason, done.unrebuilt)


def forget(store: ScopeStore, agent: str, opponent: str) -> int:
    """Delete a scope: its memory and its recent results (how many items existed)."""
    return store.delete_scope_items(memory_key(agent, opponent), recent_key(agent, opponent))


__all__ = [
    "MEMORY_SCHEMA",
    "BadMemory",
    "Startup",
    "decode_memory",
    "encode_memory",
    "forget",
    "load",
    "reads_memory",
    "remember",
    "startup",
]
