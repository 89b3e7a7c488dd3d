"""The operator's corrections and preferences, pure: add one (a frozen belief supersedes
the active one when it asserts a rate), confirm a contradicted one, retire one."""

from __future__ import annotations

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.lifecycle import PRIOR_FLOOR, describe
from horcrux.echo.model import (
    ADVERSARY_SUBJECTS,
    AnyItem,
    Belief,
    Correction,
    EchoMemory,
    Skill,
    Subject,
    item_id,
)
from horcrux.errors import HorcruxError


def add_correction(
    memory: EchoMemory,
    *,
    wrong: str,
    right: str,
    text: str = "",
    subject: Subject = "note",
    rate: float | None = None,
    kind: str = "correction",
    clock: float | None = None,
    config: EchoConfig | None = None,
) -> EchoMemory:
    """Record an operator's correction or preference (protected). With an adversary
    `subject` and a `rate`, a frozen belief from the correction supersedes the active one
    (the old keeps its record, `valid_to` and `superseded_by`)."""
    cfg = config or default_config()
    now = memory.clock if clock is None else clock
    live = [it for it in memory.items if isinstance(it, Correction) and it.valid_to is None]
    if len(live) >= cfg.budget("correction"):
        raise MemoryFull(f"the scope holds {len(live)} corrections, its budget: retire one first")
    body = f"{wrong} -> {right}" + (f": {text}" if text else "")
    correction = Correction(
        id=item_id("correction", memory.version, wrong, right, text),
        subject=subject,
        text=body[:300],
        created=now,
        last_access=now,
        life=cfg.half_life,
        kind="preference" if kind == "preference" else "correction",
        wrong=wrong[:200],
        right=right[:200],
        rate=rate,
        valid_from=now,
    )
    items: list[AnyItem] = [*memory.items, correction]
    if rate is not None and subject in ADVERSARY_SUBJECTS:
        new = Belief(
            id=item_id("belief", subject, now, correction.id),
            subject=subject,
            text=describe(subject, rate) + " (operator)",
            created=now,
            last_access=now,
            life=cfg.half_life,
            alpha=max(PRIOR_FLOOR, cfg.correction_weight * rate),
            beta=max(PRIOR_FLOOR, cfg.correction_weight * (1 - rate)),
            valid_from=now,
            frozen=True,
            source="correction",
            corrected_rate=rate,
        )
        for i, it in enumerate(items):
            if isinstance(it, Belief) and it.active and it.subject == subject:
                items[i] = it.model_copy(update={"valid_to": now, "superseded_by": new.id})
            if isinstance(it, Skill) and it.active and it.subject == subject:
                items[i] = it.model_copy(update={"valid_to": now})
        items.append(new)
    return memory.model_copy(update={"items": tuple(items), "version": memory.version + 1})


class MemoryFull(HorcruxError):
    """A kind's budget is full (a scope's corrections): nothing is evicted for it."""

    code = "memory_full"


class UnknownItem(HorcruxError):
    code = "unknown_item"


def _correction_belief(memory: EchoMemory, correction_id: str) -> int | None:
    """The index of the belief a correction asserted (None: it asserted no rate)."""
    for i, it in enumerate(memory.items):
        if (
            isinstance(it, Belief)
            and it.source == "correction"
            and it.id == item_id("belief", it.subject, it.valid_from, correction_id)
        ):
            return i
    return None


def _find_correction(memory: EchoMemory, item: str) -> tuple[int, Correction]:
    """The live correction `item` names: its own id, or its belief's."""
    for i, it in enumerate(memory.items):
        if isinstance(it, Correction) and it.valid_to is None and it.id == item:
            return i, it
    for it in memory.items:
        if isinstance(it, Belief) and it.source == "correction" and it.id == item:
            for j, c in enumerate(memory.items):
                if (
                    isinstance(c, Correction)
                    and c.valid_to is None
                    and (item_id("belief", it.subject, it.valid_from, c.id) == it.id)
                ):
                    return j, c
    raise UnknownItem(f"no live correction {item!r} in this scope")


def confirm_correction(
    memory: EchoMemory, item: str, *, config: EchoConfig | None = None
) -> EchoMemory:
    """The operator stands by a contradicted correction: its belief's posterior is reset to
    the corrected rate, its evidence tally restarted, the conflict cleared."""
    cfg = config or default_config()
    i, correction = _find_correction(memory, item)
    items = list(memory.items)
    update: dict[str, object] = {"confirmed": correction.confirmed + 1}
    if correction.subject == "threshold":  # its tally restarts: the operator's word again
        update.update(
            evidence={},
            evidence_games=0,
            confidence=1.0,
            conflict=False,
            text=correction.text.split("; contradicted")[0],
        )
    items[i] = correction.model_copy(update=update)
    j = _correction_belief(memory, correction.id)
    if j is not None:
        belief = items[j]
        assert isinstance(belief, Belief)
        rate = belief.corrected_rate if belief.corrected_rate is not None else belief.mean
        items[j] = belief.model_copy(
            update={
                "alpha": max(PRIOR_FLOOR, cfg.correction_weight * rate),
                "beta": max(PRIOR_FLOOR, cfg.correction_weight * (1 - rate)),
                "evidence_successes": 0,
                "evidence_trials": 0,
                "conflict": False,
                "text": describe(belief.subject, rate) + " (operator)",
            }
        )
    return memory.model_copy(update={"items": tuple(items), "version": memory.version + 1})


def retire_correction(memory: EchoMemory, item: str) -> EchoMemory:
    """The operator withdraws a correction: it and its belief end (kept as history, with
    `valid_to`); the evidence forms a belief of its own again."""
    i, correction = _find_correction(memory, item)
    now = memory.clock
    items = list(memory.items)
    items[i] = correction.model_copy(update={"valid_to": now})
    j = _correction_belief(memory, correction.id)
    if j is not None:
        belief = items[j]
        assert isinstance(belief, Belief)
        if belief.active:
            items[j] = belief.model_copy(update={"valid_to": now})
    return memory.model_copy(update={"items": tuple(items), "version": memory.version + 1})


__all__ = [
    "MemoryFull",
    "UnknownItem",
    "add_correction",
    "confirm_correction",
    "retire_correction",
]
