"""ECHO's decay: retention and reinforcement of items, and the discount of the style's
evidence (pure; no clock: the caller's clock value)."""

from __future__ import annotations

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.model import AnyItem, protected

LIFE_MAX_FACTOR = 1024.0


def retention(item: AnyItem, clock: float, config: EchoConfig | None = None) -> float:
    """0.5 ** (time since the last access / the item's half-life); 1 if protected."""
    cfg = config or default_config()
    if not cfg.decay_enabled or protected(item):
        return 1.0
    age = max(0.0, clock - item.last_access)
    return float(0.5 ** (age / item.life))


STYLE_LIFE_SHARE = 0.132
"""The style's evidence half-life as a share of the items' (`half_life`): 6.6 games of
the default 50 (a discount of 0.9 a game), 22 hours of 168 on the hours clock."""


def evidence_discount(elapsed: float, config: EchoConfig | None = None) -> float:
    """How much of the style's evidence (`echo.style`) survives `elapsed` clock units:
    0.5 ** (elapsed / (half_life * STYLE_LIFE_SHARE)); 1 with decay off (never forgets)."""
    cfg = config or default_config()
    if not cfg.decay_enabled:
        return 1.0
    return float(0.5 ** (max(0.0, elapsed) / (cfg.half_life * STYLE_LIFE_SHARE)))


def reinforce(item: AnyItem, clock: float, config: EchoConfig | None = None) -> AnyItem:
    """An access: the half-life times the multiplier (x2), the clock restarted."""
    cfg = config or default_config()
    life = min(item.life * cfg.reinforcement_multiplier, cfg.half_life * LIFE_MAX_FACTOR)
    return item.model_copy(
        update={"life": life, "last_access": clock, "accesses": item.accesses + 1}
    )


__all__ = ["LIFE_MAX_FACTOR", "STYLE_LIFE_SHARE", "evidence_discount", "reinforce", "retention"]
