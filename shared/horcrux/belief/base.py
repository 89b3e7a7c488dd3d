"""Layer 2: the belief-map interface shared by every map, brain and the working memory."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from horcrux.models import HarryRecord


class BeliefPoint(BaseModel):
    """One turn of a belief history: the entropy and the three most likely locations."""

    model_config = ConfigDict(frozen=True)

    turn: int
    entropy: float
    top: tuple[tuple[str, float], ...]


class BeliefMap(Protocol):
    """Harry's belief about where the Horcruxes are, updated from his own turns only.

    `update(record)` folds one of Harry's turns (all its observations) into the map and
    then applies the predictive step for Voldemort's move that follows it.
    """

    name: str

    @property
    def horcruxes_left(self) -> int: ...

    def update(self, record: HarryRecord) -> None: ...

    def occupancy(self) -> dict[str, float]:
        """P(location holds a real Horcrux); sums to `horcruxes_left`, each in [0, 1]."""
        ...

    def entropy(self) -> float:
        """Entropy in bits of the map (definition documented by each implementation)."""
        ...

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        """The n most likely locations with their occupancy, most likely first."""
        ...

    def snapshot(self) -> bytes:
        """A compact serialisation (a few KB) that `restore` turns back into the same map."""
        ...

    @property
    def history(self) -> list[BeliefPoint]: ...
