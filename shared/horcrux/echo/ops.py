"""The operator's side of ECHO: inspect, search, export, correct, confirm or retire a
correction, get/delete one item, review the quarantine, forget a scope, and the audit
trail of every write (the HTTP API's `/memory` routes call these; docs/ECHO.md).

Two roles: the operator (`HORCRUX_OPERATOR_TOKEN_SHA256`, or the stack's secret) reads and
writes; the read-only operator (`HORCRUX_OPERATOR_READONLY_TOKEN_SHA256`, or the secret's
`readonly_sha256`) only reads. `HORCRUX_OPERATOR_AGENTS` limits which agents either reaches.
A seat token is never an operator token. No operator configured: every call is refused.

A scope must be one memory is kept for: the agent a brain that reads memory
(`readers.reads_memory`), the opponent a Voldemort brain's name (no parameter) or a
person's `player:<16 hex>`. Anything else is refused (422 `unknown_scope`), never stored.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from horcrux.echo.config import default_config
from horcrux.echo.corrections import (
    UnknownItem,
    add_correction,
    confirm_correction,
    retire_correction,
)
from horcrux.echo.decay import retention
from horcrux.echo.lifecycle import live_conflicts
from horcrux.echo.model import (
    ACTIONABLE_SUBJECTS,
    AnyItem,
    Belief,
    Correction,
    EchoMemory,
    Opponent,
    Skill,
    Style,
    Subject,
)
from horcrux.echo.persist import BadMemory, encode_memory, forget, load, reads_memory, startup
from horcrux.echo.recall import recall
from horcrux.errors import HorcruxError
from horcrux.store.port import Conflict, ScopeStore
from horcrux.store.results import agent_pk

if TYPE_CHECKING:
    from horcrux.settings import OperatorSettings

ENV_TOKEN = "HORCRUX_OPERATOR_TOKEN_SHA256"
ENV_READONLY = "HORCRUX_OPERATOR_READONLY_TOKEN_SHA256"
ENV_AGENTS = "HORCRUX_OPERATOR_AGENTS"
MAX_TEXT = 200
ATTEMPTS = 3
AUDIT_MAX = 500
"""Audit entries kept per scope (the oldest beyond: counted in `dropped`)."""
_PLAYER = re.compile(r"player:[0-9a-f]{16}")


class OperatorUnauthorized(HorcruxError):
    code = "unauthorized"


class OperatorForbidden(HorcruxError):
    code = "forbidden"


class UnknownScope(HorcruxError):
    """An agent that reads no memory, or an opponent that is no brain or player id."""

    code = "unknown_scope"


class MemoryUnreadable(HorcruxError):
    """The stored memory item does not decode (the next start-up or write rebuilds it)."""

    code = "memory_unreadable"


def authorize(
    token: str | None, agent: str, operator: OperatorSettings, *, write: bool = False
) -> str:
    """The caller's role (`write` or `read`): 401 without a token; 403 if it is no
    operator's, if the agent is out of its reach, or if a read-only token tries a write.

    `operator` is the function's settings (read once at cold start): the operator secret
    the stack owns, read through its cache, or digests for local play."""
    role = authenticate(token, operator, write=write)
    access = operator.access()
    if access is None or not access.reaches(agent):
        raise OperatorForbidden(f"the operator token does not reach agent {agent!r}")
    return role


def authenticate(token: str | None, operator: OperatorSettings, *, write: bool = False) -> str:
    """The caller's role, before any scope is known (the API checks it before it reads a
    memory route's body or parameters): 401 without a token; 403 if it is no operator's,
    or if a read-only token tries a write."""
    if not token:
        raise OperatorUnauthorized("memory routes need the operator's bearer token")
    access = operator.access()
    role = access.role(token) if access is not None else None
    if access is None or role is None:
        raise OperatorForbidden("this token is not the operator's")
    if write and role != "write":
        raise OperatorForbidden("the read-only operator token cannot change memory")
    return role


def actor(token: str | None) -> str:
    """Who did it, in the audit trail: 12 hex digits of the token's SHA-256."""
    return hashlib.sha256((token or "").encode("utf-8")).hexdigest()[:12]


def check_scope(agent: str, opponent: str) -> None:
    """Refuse a scope no memory is kept for (422 `unknown_scope`, naming the problem)."""
    from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS

    if not reads_memory(agent):
        readers = [n for n in HARRY_BRAINS.names() if reads_memory(n)]
        raise UnknownScope(
            f"agent {agent!r} keeps no cross-game memory (it is no brain, or a brain that "
            f"never reads it); agents with memory: {', '.join(readers)}"
        )
    if _PLAYER.fullmatch(opponent):
        return
    names = VOLDEMORT_BRAINS.names()
    if opponent in names:
        return
    base = opponent.split(":", 1)[0]
    hint = (
        f"; memory is kept per brain name, without its parameter: {base!r}" if base in names else ""
    )
    raise UnknownScope(
        f"opponent {opponent!r} is no Voldemort brain name ({', '.join(names)}) and no "
        f"player id (player:<16 hex digits>){hint}"
    )


# ---------------------------------------------------------------- views
def _item_view(item: Any, clock: float) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": item.id,
        "level": item.level,
        "subject": item.subject,
        "text": item.text,
        "retention": round(retention(item, clock), 4),
        "accesses": item.accesses,
    }
    if isinstance(item, Belief):
        view.update(
            rate=round(item.mean, 4),
            confidence=item.confidence,
            alpha=item.alpha,
            beta=item.beta,
            frozen=item.frozen,
            source=item.source,
            valid_from=item.valid_from,
            valid_to=item.valid_to,
            superseded_by=item.superseded_by,
        )
        if item.source == "correction":
            view.update(
                corrected_rate=item.corrected_rate,
                conflict=item.conflict,
                evidence={"successes": item.evidence_successes, "trials": item.evidence_trials},
            )
    elif isinstance(item, Skill):
        view.update(
            rule=item.rule, params=item.params, valid_from=item.valid_from, valid_to=item.valid_to
        )
    elif isinstance(item, Style):
        from horcrux.belief import ties
        from horcrux.belief.bayes import DEFAULT_MODE, MODES
        from horcrux.echo import style

        q = style.posterior(item.scores, style.units(MODES[DEFAULT_MODE]))
        view.update(
            games=item.games,
            scores=item.scores,
            posterior={u: round(q[u], 4) for u in ties.ranked_items(q, q)},
            thresholds={f"{t:g}": round(p, 4) for t, p in style.threshold_posterior(q).items()},
        )
    elif isinstance(item, Opponent):
        from horcrux.echo.opponent_words import summary

        found = summary(item)
        view.update(text=found.pop("sentence"), **found)
    elif isinstance(item, Correction):
        view.update(
            kind=item.kind,
            rate=item.rate,
            valid_from=item.valid_from,
            valid_to=item.valid_to,
            confirmed=item.confirmed,
        )
        if item.subject == "threshold":
            view.update(
                confidence=item.confidence,
                conflict=item.conflict,
                evidence={"games": item.evidence_games, "scores": item.evidence},
            )
    return view


def _scope_view(memory: EchoMemory) -> dict[str, Any]:
    conflicts = list(live_conflicts(memory.items))
    return {
        "agent": memory.agent,
        "opponent": memory.opponent,
        "version": memory.version,
        "games": memory.games,
        "last_game": memory.last_game,
        "clock": memory.clock,
        "cap": default_config().keep_max,
        "budgets": dict(default_config().budgets),
        "counters": dict(memory.counters),
        "conflicts": conflicts,
        "items": [_item_view(i, memory.clock) for i in memory.items],
        "quarantine": [
            {
                **_item_view(q.item, memory.clock),
                "game_id": q.game_id,
                "reason": q.reason,
                "quarantined_at": q.clock,
            }
            for q in memory.quarantine
        ],
    }


def _read(store: ScopeStore, agent: str, opponent: str) -> EchoMemory:
    try:
        memory, _ = load(store, agent, opponent)
    except BadMemory as exc:
        raise MemoryUnreadable(
            f"the memory of {agent} vs {opponent} does not decode ({exc}); the next "
            "game's start-up, or any write here, rebuilds it from the recent results"
        ) from None
    return memory or EchoMemory(agent=agent, opponent=opponent)


def inspect(store: ScopeStore, agent: str, opponent: str) -> dict[str, Any]:
    check_scope(agent, opponent)
    return _scope_view(_read(store, agent, opponent))


def search(store: ScopeStore, agent: str, opponent: str, query: str) -> dict[str, Any]:
    """Hybrid recall with the caller's own query: the top 10, with their scores."""
    check_scope(agent, opponent)
    memory = _read(store, agent, opponent)
    hits = recall(memory, query, include_history=True)
    return {
        "agent": agent,
        "opponent": opponent,
        "query": query,
        "results": [
            {
                "item": _item_view(r.item, memory.clock),
                "score": r.score,
                "bm25": round(r.bm25, 6),
                "vector": round(r.vector, 6),
                "recency": round(r.recency, 6),
                "merged": r.merged,
            }
            for r in hits
        ],
    }


def _find(memory: EchoMemory, item_id: str) -> AnyItem:
    for item in memory.items:
        if item.id == item_id:
            return item
    for q in memory.quarantine:
        if q.item.id == item_id:
            return q.item
    raise UnknownItem(f"no item {item_id!r} in the memory of {memory.agent} vs {memory.opponent}")


def get_item(store: ScopeStore, agent: str, opponent: str, item_id: str) -> dict[str, Any]:
    check_scope(agent, opponent)
    memory = _read(store, agent, opponent)
    item = _find(memory, item_id)
    quarantined = any(q.item.id == item_id for q in memory.quarantine)
    return {**_item_view(item, memory.clock), "quarantined": quarantined}


def history(store: ScopeStore, agent: str, opponent: str, item_id: str) -> dict[str, Any]:
    """An item's lineage (the beliefs it superseded and what superseded it, oldest first)
    and every operator write that named it."""
    check_scope(agent, opponent)
    memory = _read(store, agent, opponent)
    _find(memory, item_id)
    beliefs = {i.id: i for i in memory.items if isinstance(i, Belief)}
    chain = [item_id]
    while True:  # backwards: whoever names the first as its successor
        before = next((b.id for b in beliefs.values() if b.superseded_by == chain[0]), None)
        if before is None or before in chain:
            break
        chain.insert(0, before)
    while True:  # forwards
        last = beliefs.get(chain[-1])
        after = last.superseded_by if last is not None else None
        if after is None or after in chain or after not in beliefs:
            break
        chain.append(after)
    lineage = [_item_view(beliefs[i], memory.clock) for i in chain if i in beliefs]
    if not lineage:
        lineage = [_item_view(_find(memory, item_id), memory.clock)]
    audit = [e for e in audit_trail(store, agent, opponent)["entries"] if e.get("item") in chain]
    return {
        "agent": agent,
        "opponent": opponent,
        "item": item_id,
        "lineage": lineage,
        "audit": audit,
    }


def export(store: ScopeStore, agent: str, opponent: str) -> dict[str, Any]:
    """The whole scope: the memory as stored (JSON), its view, and its audit trail."""
    check_scope(agent, opponent)
    memory = _read(store, agent, opponent)
    return {
        "agent": agent,
        "opponent": opponent,
        "memory": memory.model_dump(mode="json"),
        "recent_results": [s.game_id for s in store.recent_results(agent, opponent).results],
        "audit": audit_trail(store, agent, opponent)["entries"],
    }


# ---------------------------------------------------------------- the audit trail
class AuditEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: float
    actor: str
    action: str
    item: str | None = None
    detail: dict[str, Any] = {}
    version: int = 0


def audit_key(agent: str, opponent: str) -> dict[str, Any]:
    """`AGENT#<agent>` / `OPP#<opponent>#AUDIT`: beside the memory, and it outlives a
    DELETE of the scope (which it records)."""
    return {"pk": {"S": agent_pk(agent)}, "sk": {"S": f"OPP#{opponent}#AUDIT"}}


def _audit_read(
    store: ScopeStore, agent: str, opponent: str
) -> tuple[list[dict[str, Any]], int, int]:
    item = store.scope_item(audit_key(agent, opponent))
    if item is None:
        return [], 0, 0
    version = int(item["v"]["N"])
    entries: list[dict[str, Any]] = json.loads(zlib.decompress(bytes(item["log"]["B"])))
    return entries, version, int(item.get("dropped", {}).get("N", "0"))


def audit_trail(store: ScopeStore, agent: str, opponent: str) -> dict[str, Any]:
    entries, _, dropped = _audit_read(store, agent, opponent)
    return {"agent": agent, "opponent": opponent, "entries": entries, "dropped": dropped}


def _audit(store: ScopeStore, agent: str, opponent: str, entry: AuditEntry) -> None:
    for _ in range(ATTEMPTS):
        entries, version, dropped = _audit_read(store, agent, opponent)
        entries.append(entry.model_dump(mode="json"))
        over = max(0, len(entries) - AUDIT_MAX)
        entries = entries[over:]
        item = {
            **audit_key(agent, opponent),
            "v": {"N": str(version + 1)},
            "dropped": {"N": str(dropped + over)},
            "log": {"B": zlib.compress(json.dumps(entries).encode(), 9)},
        }
        try:
            store.put_scope_item(item, version)
            return
        except Conflict:
            continue
    raise Conflict("the audit trail kept changing; retry", reason="busy")


# ---------------------------------------------------------------- writes
def _write(
    store: ScopeStore,
    agent: str,
    opponent: str,
    change: Callable[[EchoMemory], EchoMemory],
    *,
    action: str,
    who: str,
    at: float,
    item: str | None = None,
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Apply `change` to the scope's memory at version + 1 (conditional; a moved version
    read again, 3 tries), audit it, and return the scope. An unreadable or stale memory is
    rebuilt first (what a start-up would read)."""
    check_scope(agent, opponent)
    for _ in range(ATTEMPTS):
        try:
            memory, version = load(store, agent, opponent)
        except BadMemory:
            memory = None
        if memory is None:
            memory = startup(store, agent, opponent).memory
            memory, version = load(store, agent, opponent)
        memory = memory or EchoMemory(agent=agent, opponent=opponent)
        new = change(memory).model_copy(update={"version": version + 1})
        try:
            store.put_scope_item(encode_memory(new), version)
        except Conflict:
            continue
        _audit(
            store,
            agent,
            opponent,
            AuditEntry(
                at=at, actor=who, action=action, item=item, detail=detail or {}, version=new.version
            ),
        )
        return _scope_view(new)
    raise Conflict("the memory kept changing; retry", reason="busy")


def correct(
    store: ScopeStore,
    agent: str,
    opponent: str,
    *,
    wrong: str,
    right: str,
    text: str = "",
    subject: str = "note",
    rate: float | None = None,
    kind: str = "correction",
    who: str = "",
    at: float = 0.0,
) -> dict[str, Any]:
    """Add an operator correction (or preference) to a scope; returns the scope. Only
    what the planner acts on is accepted (`actionable`); anything else is a 422
    `not_actionable` that lists what is (after the scope's own check)."""
    check_scope(agent, opponent)
    actionable(subject, rate)
    subj: Subject = subject  # type: ignore[assignment]  # checked by `actionable`

    def change(memory: EchoMemory) -> EchoMemory:
        return add_correction(
            memory,
            wrong=wrong[:MAX_TEXT],
            right=right[:MAX_TEXT],
            text=text[:MAX_TEXT],
            subject=subj,
            rate=rate,
            kind=kind,
        )

    detail = {"wrong": wrong, "right": right, "text": text, "subject": subject, "rate": rate}
    return _write(store, agent, opponent, change, action=kind, who=who, at=at, detail=detail)


ACTIONABLE = (
    "a correction or preference must name what the planner acts on, with a rate in [0, 1]: "
    "relocates, immediate, plant_top, plant_blind (the learned opponent's rates: "
    "P(relocates in a game), P(a relocation comes at once after my positive), P(a decoy "
    "goes where the planting rule expects), P(a decoy is planted before any positive "
    "there)); threshold (Harry's occupancy at which the opponent relocates); "
    "jitter, near, hesitate, attack_near, timing (the planner's knobs)"
)


class NotActionable(HorcruxError):
    """A correction or preference that names nothing the planner can act on."""

    code = "not_actionable"


def actionable(subject: str, rate: float | None) -> None:
    """Raise NotActionable unless `subject` is one the planner acts on and has a rate."""
    if subject not in ACTIONABLE_SUBJECTS:
        raise NotActionable(f"subject {subject!r} reaches no decision; {ACTIONABLE}")
    if rate is None:
        raise NotActionable(f"subject {subject!r} needs a rate; {ACTIONABLE}")


def confirm(
    store: ScopeStore, agent: str, opponent: str, item_id: str, *, who: str = "", at: float = 0.0
) -> dict[str, Any]:
    return _write(
        store,
        agent,
        opponent,
        lambda m: confirm_correction(m, item_id),
        action="confirm",
        who=who,
        at=at,
        item=item_id,
    )


def retire(
    store: ScopeStore, agent: str, opponent: str, item_id: str, *, who: str = "", at: float = 0.0
) -> dict[str, Any]:
    return _write(
        store,
        agent,
        opponent,
        lambda m: retire_correction(m, item_id),
        action="retire",
        who=who,
        at=at,
        item=item_id,
    )


def delete_item(
    store: ScopeStore, agent: str, opponent: str, item_id: str, *, who: str = "", at: float = 0.0
) -> dict[str, Any]:
    """Delete one item (or one quarantined item) from a scope."""

    def change(memory: EchoMemory) -> EchoMemory:
        _find(memory, item_id)
        return memory.model_copy(
            update={
                "items": tuple(i for i in memory.items if i.id != item_id),
                "quarantine": tuple(q for q in memory.quarantine if q.item.id != item_id),
            }
        )

    return _write(
        store, agent, opponent, change, action="delete_item", who=who, at=at, item=item_id
    )


def review_quarantine(
    store: ScopeStore,
    agent: str,
    opponent: str,
    item_id: str,
    action: str,
    *,
    who: str = "",
    at: float = 0.0,
) -> dict[str, Any]:
    """`restore` a quarantined item into the memory, or `purge` it."""

    def change(memory: EchoMemory) -> EchoMemory:
        held = [q for q in memory.quarantine if q.item.id == item_id]
        if not held:
            raise UnknownItem(f"no quarantined item {item_id!r} in this scope")
        rest = tuple(q for q in memory.quarantine if q.item.id != item_id)
        if action == "purge":
            return memory.model_copy(update={"quarantine": rest})
        restored = held[0].item.model_copy(
            update={"last_access": memory.clock, "life": default_config().half_life}
        )
        return memory.model_copy(update={"quarantine": rest, "items": (*memory.items, restored)})

    return _write(
        store, agent, opponent, change, action=f"quarantine_{action}", who=who, at=at, item=item_id
    )


def delete(
    store: ScopeStore, agent: str, opponent: str, *, who: str = "", at: float = 0.0
) -> dict[str, Any]:
    check_scope(agent, opponent)
    gone = forget(store, agent, opponent)
    _audit(
        store,
        agent,
        opponent,
        AuditEntry(at=at, actor=who, action="forget_scope", detail={"deleted": gone}),
    )
    return {"agent": agent, "opponent": opponent, "deleted": gone}
