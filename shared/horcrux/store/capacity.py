"""Capacity maths, as DynamoDB counts it: an item's size and the units a read or a write of
it costs (docs/STORE.md, "Item sizes"). Pure functions over low-level attribute values."""

from __future__ import annotations

from typing import Any

Item = dict[str, Any]
"""One item as low-level attribute values: `{"pk": {"S": "GAME#x"}, "v": {"N": "3"}}`."""


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").split("e")[0].split("E")[0]
    significant = digits.strip("0") or "0"
    return (len(significant) + 1) // 2 + 1


def value_size(value: Item) -> int:
    """The size DynamoDB bills for one attribute value (without its name)."""
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(_number_size(s) for s in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(x) for k, x in v.items())
    if kind == "L":
        return 3 + sum(1 + value_size(x) for x in v)
    raise ValueError(f"unknown attribute value type {kind!r}")


def item_size(item: Item) -> int:
    """Item size as DynamoDB measures it: every attribute name plus its value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def read_units(size: int, *, consistent: bool = True) -> float:
    """Read capacity units of one GetItem: 4 KB per unit, half for eventually consistent."""
    units = max(1, -(-size // 4096))
    return float(units) if consistent else units / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    """Write capacity units of one item write: 1 KB per unit, doubled in a transaction."""
    units = max(1, -(-size // 1024))
    return float(units * (2 if transactional else 1))
