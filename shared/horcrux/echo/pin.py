"""The memory pin: what an AI Harry's first turn read from cross-game memory, as bytes.

The service keeps the pin in the game's snapshot (`horcrux.service.ai.ECHO_KEY`) so every
later turn, and a Voldemort running a copy of Harry's brain, is built with the same memory
without reading the memory item again (docs/ECHO.md). This module is the pin's only codec:
`encode_pin` writes it, `adopt_pin` decodes it and gives it to a brain.

A pin (`{"v": 2, "models": [...], "params": {...}, "line": ...}`) holds the whole model set
with its priors and the knobs (`MemoryAdopter.adopt_memory`). A pin of any other version
is unreadable (a ValueError): the service counts it, alarms on it, keeps it in the
snapshot and plays the game on without memory (`service.ai`, `pin-unreadable`). Its
optional `"opponent"` is who memory says the opponent is (`echo.opponent.plan_prior`):
each behaviour as its cell on the family's grids and its weight, `[t, o, d, c, w]`
(compact: the pin rides in the game's snapshot item, kept under 1 KB).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from horcrux.agents.contract import MemoryAdopter

if TYPE_CHECKING:  # the Bayes tables bring numpy: imported where a pin is decoded
    from horcrux.agents.particles import Prior
    from horcrux.belief.bayes import AdversaryModel
    from horcrux.echo.use import MemoryPlan

PIN_VERSION = 2


@dataclass(frozen=True)
class MemoryPin:
    """A decoded pin. `line`: the L1 context's memory line (None: none, or empty)."""

    models: tuple[AdversaryModel, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    line: str | None = None
    opponent: Prior | None = None


def encode_pin(plan: MemoryPlan | None, line: str | None) -> bytes | None:
    """The pin of what memory decided (`memory_plan`, `memory_line`); None if nothing."""
    if plan is None and line is None:
        return None
    body: dict[str, Any] = {
        "v": PIN_VERSION,
        "models": [asdict(m) for m in plan.models] if plan and plan.models else None,
        "params": plan.params if plan else {},
        "line": line,
    }
    if plan is not None and plan.opponent is not None:
        from horcrux.agents.family_fit import cell_of

        body["opponent"] = [
            [*cell_of(p), w]
            for p, w in zip(plan.opponent.policies, plan.opponent.weights, strict=True)
        ]
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def decode_pin(pin: bytes) -> MemoryPin:
    """The pin's content; a malformed pin is a ValueError or a TypeError."""
    from horcrux.belief.bayes import AdversaryModel

    body = json.loads(pin)
    if not isinstance(body, dict):
        raise TypeError(f"a memory pin is a JSON object, not {type(body).__name__}")
    version = body.get("v")
    if version != PIN_VERSION:
        raise ValueError(f"a memory pin of version {version!r}: this runtime reads {PIN_VERSION}")
    models = tuple(
        AdversaryModel(**{**m, "rule": tuple(m.get("rule", ()))}) for m in body.get("models") or ()
    )
    line = body.get("line")
    return MemoryPin(
        models=models,
        params=dict(body.get("params") or {}),
        line=str(line) if line else None,
        opponent=_opponent(body.get("opponent")),
    )


def _opponent(cells: Any) -> Prior | None:
    """The pinned opponent prior (None: none pinned); a malformed one is a ValueError or a
    TypeError."""
    if cells is None:
        return None
    from horcrux.agents.family_fit import params_of
    from horcrux.agents.particles import Prior

    if not isinstance(cells, list) or not cells:
        raise TypeError("a pin's opponent is a non-empty list of [t, o, d, c, weight]")
    policies, weights = [], []
    for cell in cells:
        t, o, d, c, w = cell
        policies.append(params_of(int(t), int(o), int(d), int(c)))
        weights.append(float(w))
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("a pin's opponent weights are >= 0 and not all 0")
    return Prior(f"memory:{len(cells)}", tuple(policies), tuple(weights))


def adopt_pin(brain: object, pin: bytes) -> MemoryPin:
    """Give a `MemoryAdopter` what the memory `pin` holds; returns the decoded pin. A
    malformed pin, one of another version, or one the brain refuses (an unknown knob, a
    bad model) is a ValueError or a TypeError."""
    got = decode_pin(pin)
    if got.models and isinstance(brain, MemoryAdopter):
        brain.adopt_memory(got.models, got.params)
    return got


__all__ = ["PIN_VERSION", "MemoryPin", "adopt_pin", "decode_pin", "encode_pin"]
