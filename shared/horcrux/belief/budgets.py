"""Priors over Voldemort's budgets (relocation charges left, decoys planted) for a map
built mid-game: explicit rows, or each model's forecast for forgotten turns."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from horcrux.belief.catalogue import (
    AdversaryModel,
)
from horcrux.belief.tables import (
    FloatArray,
)
from horcrux.rules import RuleSet

Prior = tuple[float, ...] | tuple[tuple[float, ...], ...]


def prior_rows(prior: Prior, count: int, budget: int, name: str, what: str) -> FloatArray:
    """`prior` as normalised weights over 0..budget, one row per model (shared or each its own)."""
    rows = np.array(prior, dtype=np.float64)
    if rows.ndim == 1:
        rows = np.broadcast_to(rows, (count, len(rows)))
    if rows.ndim != 2 or rows.shape[0] != count or rows.shape[1] != budget + 1:
        raise ValueError(
            f"{name} needs {budget + 1} weights ({what}{budget}), or such a row for each "
            f"of the {count} models"
        )
    total = rows.sum(axis=1, keepdims=True)
    if (rows < 0.0).any() or (total <= 0.0).any():
        raise ValueError(f"{name} needs non-negative weights with a positive sum")
    out: FloatArray = rows / total
    return out


def plain_prior(prior: Any) -> Prior | None:
    """A prior as plain floats (JSON lists back to tuples), shared or one row per model."""
    if prior is None:
        return None
    if len(prior) and isinstance(prior[0], (list, tuple)):
        return tuple(tuple(float(x) for x in row) for row in prior)
    return tuple(float(x) for x in prior)


def _spent(turns: int, rate: float, budget: int) -> list[float]:
    """P(j of a budget spent) after `turns` chances at `rate` each: Binomial, capped."""
    rate = min(1.0, max(0.0, rate))
    probs = [math.comb(turns, j) * rate**j * (1.0 - rate) ** (turns - j) for j in range(budget)]
    probs.append(max(0.0, 1.0 - sum(probs)))
    return probs


def forgotten_budgets(
    models: tuple[AdversaryModel, ...],
    rules: RuleSet,
    horcruxes: int,
    turns: int,
    trust: float = 1.0,
) -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
    """Each model's forecast of Voldemort's budgets after `turns` turns Harry cannot recall.

    What a Harry who forgot the start of the game should believe about the charges left
    (weights over r = 0..R) and the decoys already planted (over 0..D), model by model,
    from nothing but the model's own rates and the number of turns he forgot:

    * relocations: a `hazard` model moves with probability h per turn; a `trigger` model
      moves when a search hits a real Horcrux, which for a searcher who recalls nothing
      happens at the uninformed rate trigger * (k / N) * d per turn; `static` never moves;
    * decoys: the planting rule needs a location with positive public evidence, which
      a positive search creates: the model's `plant` rate times the uninformed chance of
      a positive, k/N d + (1 - k/N) f, on every turn without a relocation.

    Against the reference Voldemort these forecasts match what the full planner's games
    show (0.16 relocations and about 0.24 decoys a turn early on; docs/MEMORY.md).

    Counts are Binomial over the forgotten turns, capped at the budget. With nothing
    forgotten this is the game's start: R charges left, no decoy planted.

    `trust` in [0, 1] weighs the forecast against ignorance: each row becomes trust x
    forecast + (1 - trust) x uniform over the counts (1: the forecast; 0: every count
    equally likely). With nothing forgotten the start is known, whatever the trust.
    """
    if not 0.0 <= trust <= 1.0:
        raise ValueError(f"trust in the forecast must be in [0, 1], got {trust}")
    n = len(rules.locations)
    share = horcruxes / n
    hit = share * rules.sensor.d  # a search finds a real Horcrux
    positive = hit + (1.0 - share) * rules.sensor.f  # a search comes back positive
    charges: list[tuple[float, ...]] = []
    decoys: list[tuple[float, ...]] = []
    for model in models:
        move = {
            "trigger": model.trigger * hit,
            "belief": model.trigger * hit,  # a Harry who recalls nothing rarely crosses it
            "hazard": model.hazard,
            "static": 0.0,
        }[model.motion]
        used = _spent(turns, move, rules.relocations)
        charges.append(_blend(tuple(reversed(used)), trust if turns else 1.0))  # j used: R - j left
        plant = model.plant * (1.0 if model.placement == "greedy" else positive) * (1.0 - move)
        decoys.append(_blend(tuple(_spent(turns, plant, rules.decoys)), trust if turns else 1.0))
    return tuple(charges), tuple(decoys)


def _blend(row: tuple[float, ...], trust: float) -> tuple[float, ...]:
    """trust x the (normalised) row + (1 - trust) x uniform over its counts."""
    if trust == 1.0:
        return row
    total = sum(row)
    return tuple(trust * x / total + (1.0 - trust) / len(row) for x in row)
