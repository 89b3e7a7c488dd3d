"""The ECHO thresholds, from `echo.yaml` shipped in the package (or a file you name).

PyYAML is used when it is installed; otherwise a small parser reads the subset the file
uses (nested mappings by indentation, scalars, `[a, b]` lists, `#` comments).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

CONFIG_PATH = Path(__file__).with_name("echo.yaml")


@dataclass(frozen=True)
class EchoConfig:
    pattern_threshold: int = 3
    belief_threshold: int = 5
    skill_threshold: int = 10
    supersede_patterns: int = 5
    freeze_confidence: float = 0.97
    freeze_trials: int = 30
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
    target: int = 100
    max_drop_share: float = 0.16
    memory_line_chars: int = 160

    @property
    def half_life(self) -> float:
        """The half-life in the clock's unit (games or hours)."""
        return self.half_life_games if self.clock == "games" else self.half_life_hours

    @property
    def keep_max(self) -> int:
        """The cap as enforced: min(cap, target)."""
        return min(self.cap, self.target)


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(part) for part in text[1:-1].split(",") if part.strip()]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", ""):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


def parse_simple_yaml(text: str) -> dict[str, Any]:
    """Nested mappings by indentation, scalars and flow lists: what echo.yaml uses."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, sep, value = line.strip().partition(":")
        if not sep:
            raise ValueError(f"unsupported YAML line: {raw!r}")
        while indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        if value.strip():
            parent[key.strip()] = _scalar(value)
        else:
            child: dict[str, Any] = {}
            parent[key.strip()] = child
            stack.append((indent, child))
    return root


def _load_yaml(text: str) -> dict[str, Any]:
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        return parse_simple_yaml(text)
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


def config_from_mapping(data: dict[str, Any]) -> EchoConfig:
    memory = data.get("memory", data)
    flat: dict[str, Any] = {}
    for section in ("consolidation", "decay", "retrieval", "limits"):
        flat.update(memory.get(section) or {})
    if "enabled" in flat:
        flat["decay_enabled"] = flat.pop("enabled")
    if "weights" in flat:
        flat["weights"] = tuple(float(w) for w in flat["weights"])
    known = {f.name for f in fields(EchoConfig)}
    return EchoConfig(**{k: v for k, v in flat.items() if k in known})


def load_config(path: str | Path | None = None) -> EchoConfig:
    """The configuration at `path` (a caller's setting, e.g. `HORCRUX_ECHO_CONFIG` read by
    its settings), or the shipped echo.yaml."""
    target = Path(path or CONFIG_PATH)
    return config_from_mapping(_load_yaml(target.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def default_config() -> EchoConfig:
    return load_config(CONFIG_PATH)
