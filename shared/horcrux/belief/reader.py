"""The hook through which a replay reads the filter's predictive steps (`MapReader`): the
filter's own reader computes every map; `horcrux.echo.predictive` gives a replayed
filter one that records them, and filters started from the true state one that serves
the recording."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from horcrux.belief.tables import FloatArray, Maps

Key = tuple[Any, ...]
"""Where a predictive step reads a map: `("pre",)` (before any section), `("belief", i)`
(model i's move), `("fill", i, go)` (a levelled destination of model i for the sets `go`,
as bytes), `("plant",)` (the decoys)."""


class MapReader:
    """The filter's hook for a replay of its predictive steps (`horcrux.echo.predictive`
    records the maps a replayed game's step reads, then serves them to filters started
    from the true state). Each section of a step is entered with its `Key`; within it,
    every map the step builds goes through `mixture` and every levelled mass through
    `mass`. This reader is the filter's own: inactive, it computes every map, records
    nothing, and the filter skips the hook altogether."""

    active = False
    """Whether the filter calls the hook (False: the filter's own computation alone)."""

    def begin(self, maps: Callable[[], Maps | None] | None) -> Callable[[], Maps | None] | None:
        """A predictive step begins; returns the `maps` callback the step is to use."""
        return maps

    def enter(self, key: Key) -> object:
        """A section of the step begins; returns what `leave` restores."""
        return None

    def leave(self, saved: object) -> None:
        """The section entered last ends (`saved`: what its `enter` returned)."""

    def mixture(self, compute: Callable[[], FloatArray]) -> FloatArray:
        """Harry's whole map where the step reads it (`compute()` builds it)."""
        return compute()

    def mass(self, key: Key, mass: float) -> float:
        """The mass a levelled destination of section `key` shares out."""
        return mass


COMPUTED = MapReader()
"""Every filter's reader unless a replay gives it its own."""


__all__ = ["COMPUTED", "Key", "MapReader"]
