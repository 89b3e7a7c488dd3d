"""The ECHO thresholds: `echo.toml` shipped in the package, or the file `HORCRUX_ECHO_CONFIG`
names (read with `tomllib`, the same in the Lambda and locally).

Every key is checked: an unknown section or key, or a value of the wrong type, is an
`EchoConfigError` naming it (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

CONFIG_PATH = Path(__file__).with_name("echo.toml")
ENV_CONFIG = "HORCRUX_ECHO_CONFIG"
LEVELS = ("experience", "belief", "skill", "correction")


class EchoConfigError(ValueError):
    """The configuration file is unreadable, or names a key or value ECHO does not know."""


@dataclass(frozen=True)
class EchoConfig:
    belief_threshold: int = 5
    """Experiences of one subject that form its belief."""
    supersede_after: int = 15
    """Contradicting experiences in a row that supersede a belief."""
    freeze_confidence: float = 0.97
    freeze_trials: int = 30
    correction_weight: float = 20.0
    """A correction's prior, in pseudo-observations: evidence can outweigh it."""
    conflict_below: float = 0.05
    """A correction whose evidence support falls below this is flagged as a conflict."""
    decay_enabled: bool = True
    clock: Literal["games", "hours"] = "games"
    half_life_hours: float = 168.0
    half_life_games: float = 50.0
    reinforcement_multiplier: float = 2.0
    forget_below: float = 0.05
    weights: tuple[float, float, float] = (0.45, 0.35, 0.20)
    vector_dims: int = 512
    dedup_threshold: float = 0.85
    max_results: int = 10
    cap: int = 120
    budgets: tuple[tuple[str, int], ...] = (
        ("experience", 60),
        ("belief", 25),
        ("skill", 10),
        ("correction", 25),
    )
    """Per level: at most this many items; a level's unprotected items beyond it are
    evicted (counted), and no level takes room from another."""
    max_drop_share: float = 0.16
    memory_line_chars: int = 160

    def __post_init__(self) -> None:
        levels = [level for level, _ in self.budgets]
        if sorted(levels) != sorted(LEVELS):
            raise EchoConfigError(f"limits.budget needs exactly the levels {', '.join(LEVELS)}")
        if any(n < 1 for _, n in self.budgets):
            raise EchoConfigError("limits.budget: every budget must be at least 1")
        total = sum(n for _, n in self.budgets)
        if total > self.cap:
            raise EchoConfigError(f"limits.budget adds up to {total}, over limits.cap {self.cap}")
        if self.clock not in ("games", "hours"):
            raise EchoConfigError(f"decay.clock must be games or hours, not {self.clock!r}")

    @property
    def half_life(self) -> float:
        """The half-life in the clock's unit (games or hours)."""
        return self.half_life_games if self.clock == "games" else self.half_life_hours

    @property
    def keep_max(self) -> int:
        """The most items a scope holds, its budgets added up (never over `cap`)."""
        return sum(n for _, n in self.budgets)

    def budget(self, level: str) -> int:
        return dict(self.budgets)[level]


_SECTIONS: dict[str, tuple[str, ...]] = {
    "capture": ("experiences", "corrections", "preferences"),
    "consolidation": (
        "schedule",
        "belief_threshold",
        "supersede_after",
        "freeze_confidence",
        "freeze_trials",
        "correction_weight",
        "conflict_below",
    ),
    "decay": (
        "enabled",
        "clock",
        "half_life_hours",
        "half_life_games",
        "reinforcement_multiplier",
        "forget_below",
    ),
    "retrieval": ("methods", "weights", "vector_dims", "dedup_threshold", "max_results"),
    "limits": ("cap", "budget", "max_drop_share", "memory_line_chars"),
}
_DOCUMENTARY = {"experiences", "corrections", "preferences", "schedule", "methods"}
"""Keys that describe the pipeline for a reader; accepted, not used."""


def _typed(name: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise EchoConfigError(f"{name} must be true or false, not {value!r}")
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int):
            raise EchoConfigError(f"{name} must be an integer, not {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EchoConfigError(f"{name} must be a number, not {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise EchoConfigError(f"{name} must be a string, not {value!r}")
        return value
    return value


def config_from_mapping(data: Mapping[str, Any]) -> EchoConfig:
    """An `EchoConfig` from the file's tables (`[memory.<section>]`); unknown keys refused."""
    unknown_top = set(data) - {"memory"}
    if unknown_top:
        raise EchoConfigError(f"unknown top-level keys: {', '.join(sorted(unknown_top))}")
    memory = data.get("memory", {})
    if not isinstance(memory, Mapping):
        raise EchoConfigError("[memory] must be a table")
    unknown = set(memory) - set(_SECTIONS)
    if unknown:
        raise EchoConfigError(
            f"unknown sections memory.{', memory.'.join(sorted(unknown))}; "
            f"known: {', '.join(_SECTIONS)}"
        )
    defaults = EchoConfig()
    known = {f.name for f in fields(EchoConfig)}
    values: dict[str, Any] = {}
    for section, body in memory.items():
        if not isinstance(body, Mapping):
            raise EchoConfigError(f"memory.{section} must be a table")
        for key, value in body.items():
            name = f"memory.{section}.{key}"
            if key not in _SECTIONS[section]:
                raise EchoConfigError(
                    f"unknown key {name}; known in memory.{section}: "
                    f"{', '.join(_SECTIONS[section])}"
                )
            if key in _DOCUMENTARY:
                continue
            if key == "budget":
                if not isinstance(value, Mapping):
                    raise EchoConfigError(f"{name} must be a table of level = count")
                bad = set(value) - set(LEVELS)
                if bad:
                    raise EchoConfigError(
                        f"unknown levels in {name}: {', '.join(sorted(bad))}; "
                        f"known: {', '.join(LEVELS)}"
                    )
                merged = dict(defaults.budgets)
                merged.update({k: _typed(f"{name}.{k}", v, 1) for k, v in value.items()})
                values["budgets"] = tuple((level, merged[level]) for level in LEVELS)
                continue
            if key == "weights":
                if not (isinstance(value, list) and len(value) == 3):
                    raise EchoConfigError(f"{name} must be 3 numbers (bm25, vector, recency)")
                values["weights"] = tuple(_typed(name, float(w), 0.0) for w in value)
                continue
            field = "decay_enabled" if (section, key) == ("decay", "enabled") else key
            if field not in known:  # pragma: no cover - _SECTIONS and the fields agree
                raise EchoConfigError(f"unknown key {name}")
            values[field] = _typed(name, value, getattr(defaults, field))
    return EchoConfig(**values)


def load_config(path: str | Path | None = None) -> EchoConfig:
    """The configuration at `path` (TOML), or the shipped echo.toml."""
    target = Path(path or CONFIG_PATH)
    try:
        data = tomllib.loads(target.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EchoConfigError(f"cannot read the ECHO config {target}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise EchoConfigError(f"the ECHO config {target} is not TOML: {exc}") from exc
    try:
        return config_from_mapping(data)
    except EchoConfigError as exc:
        raise EchoConfigError(f"{target}: {exc}") from exc


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The file `HORCRUX_ECHO_CONFIG` names (`settings.echo_config_file`), else the
    shipped echo.toml."""
    from horcrux.settings import echo_config_file

    named = echo_config_file(environ)
    return Path(named) if named else CONFIG_PATH


@lru_cache(maxsize=4)
def _cached(path: str) -> EchoConfig:
    return load_config(path)


def default_config() -> EchoConfig:
    """The process's configuration: `HORCRUX_ECHO_CONFIG`'s file if set (read once per
    path), else the shipped echo.toml. A bad file raises `EchoConfigError` naming it."""
    return _cached(str(config_path()))
