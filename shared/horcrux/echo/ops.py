"""The operator's side of ECHO: inspect, correct, forget a scope (the HTTP API's
`/memory` routes call these).

Every call needs the operator token: its SHA-256 (hex) is `HORCRUX_OPERATOR_TOKEN_SHA256`;
`HORCRUX_OPERATOR_AGENTS` (comma-separated agent specs, default `*`) limits which agents'
scopes it reaches. A seat token is never an operator token (a different secret), so a seat
reaches only its game. No operator token configured: every call is refused (403).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from horcrux.echo.config import default_config
from horcrux.echo.core import add_correction, retention
from horcrux.echo.model import ADVERSARY_SUBJECTS, Belief, EchoMemory, Skill, Subject
from horcrux.echo.persist import encode_memory, forget, load, startup
from horcrux.errors import HorcruxError
from horcrux.store.port import Conflict, ScopeStore

if TYPE_CHECKING:
    from horcrux.settings import OperatorSettings

ENV_TOKEN = "HORCRUX_OPERATOR_TOKEN_SHA256"
ENV_AGENTS = "HORCRUX_OPERATOR_AGENTS"
MAX_TEXT = 200
ATTEMPTS = 3


class OperatorUnauthorized(HorcruxError):
    code = "unauthorized"


class OperatorForbidden(HorcruxError):
    code = "forbidden"


def authorize(token: str | None, agent: str, operator: OperatorSettings) -> None:
    """401 without a token; 403 if it is not the operator's or the agent is out of scope.

    `operator` is the function's settings (read once at cold start): the operator secret
    the stack owns, read through its cache, or a digest for local play."""
    if not token:
        raise OperatorUnauthorized("memory routes need the operator's bearer token")
    access = operator.access()
    if access is None or not access.accepts(token):
        raise OperatorForbidden("this token is not the operator's")
    if not access.reaches(agent):
        raise OperatorForbidden(f"the operator token does not reach agent {agent!r}")


def _item_view(item: Any, clock: float) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": item.id,
        "level": item.level,
        "subject": item.subject,
        "text": item.text,
        "retention": round(retention(item, clock), 4),
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
    elif isinstance(item, Skill):
        view.update(rule=item.rule, valid_from=item.valid_from, valid_to=item.valid_to)
    elif hasattr(item, "valid_from"):
        view.update(valid_from=item.valid_from, valid_to=None)
    return view


def inspect(store: ScopeStore, agent: str, opponent: str) -> dict[str, Any]:
    memory, _ = load(store, agent, opponent)
    memory = memory or EchoMemory(agent=agent, opponent=opponent)
    return {
        "agent": agent,
        "opponent": opponent,
        "version": memory.version,
        "games": memory.games,
        "last_game": memory.last_game,
        "clock": memory.clock,
        "cap": default_config().keep_max,
        "items": [_item_view(i, memory.clock) for i in memory.items],
    }


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
) -> dict[str, Any]:
    """Add an operator correction (or preference) to a scope; returns the scope."""
    if subject not in (*ADVERSARY_SUBJECTS, "note"):
        subject = "note"
    subj: Subject = subject  # type: ignore[assignment]
    for _ in range(ATTEMPTS):
        memory, version = load(store, agent, opponent)
        if memory is None:  # start from what a start-up would read
            memory = startup(store, agent, opponent).memory
            memory, version = load(store, agent, opponent)
        memory = memory or EchoMemory(agent=agent, opponent=opponent)
        new = add_correction(
            memory,
            wrong=wrong[:MAX_TEXT],
            right=right[:MAX_TEXT],
            text=text[:MAX_TEXT],
            subject=subj,
            rate=rate,
            kind=kind,
        ).model_copy(update={"version": version + 1})
        try:
            store.put_scope_item(encode_memory(new), version)
        except Conflict:
            continue
        return inspect(store, agent, opponent)
    raise Conflict("the memory kept changing; retry", reason="busy")


def delete(store: ScopeStore, agent: str, opponent: str) -> dict[str, Any]:
    return {"agent": agent, "opponent": opponent, "deleted": forget(store, agent, opponent)}
