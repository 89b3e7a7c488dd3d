"""The belief snapshot's codes: observation kinds and outcomes as bytes, the format's
version, and the adversary models a snapshot names."""

from __future__ import annotations

from typing import Any

from horcrux.belief.catalogue import (
    AdversaryModel,
)

KIND_CODE = {"search": 0, "attack": 1, "reveal": 2}
OUTCOME_CODE = {
    "positive": 0,
    "negative": 1,
    "destroyed": 2,
    "decoy": 3,
    "empty": 4,
    "horcrux": 5,
}
OUTCOMES = {v: k for k, v in OUTCOME_CODE.items()}
KINDS = {v: k for k, v in KIND_CODE.items()}
SNAPSHOT_VERSION = 1


def model_of(saved: dict[str, Any]) -> AdversaryModel:
    """The `AdversaryModel` a snapshot saved (`asdict`), its tuples restored."""
    return AdversaryModel(**{**saved, "rule": tuple(saved.get("rule", ()))})
