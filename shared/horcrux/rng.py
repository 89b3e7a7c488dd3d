"""Counter-based randomness: every draw is a pure function of the game's seed and a key.

A draw never depends on how many draws came before it elsewhere, so a game replays
identically from its seed and its actions, and a brain's choices cannot shift the dice.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any


def _digest(seed: int, key: tuple[object, ...]) -> int:
    material = repr((seed, *key)).encode()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big")


def unit(seed: int, *key: object) -> float:
    """A uniform draw in [0, 1) fixed by (seed, key)."""
    return _digest(seed, key) / 2**64


def stream(seed: int, *key: object) -> random.Random:
    """A `random.Random` fixed by (seed, key), for a brain's or the setup's choices.

    Seeded on its first use: seeding the generator costs more than the rest of a turn's
    bookkeeping, and many turns' streams are never drawn from (a Voldemort who passes).
    Every draw is the one `random.Random(seed_of_key)` would make."""
    return _Stream(_digest(seed, key))


class _Stream(random.Random):
    """A `random.Random` whose seeding waits for its first use, then becomes a plain
    `random.Random` seeded with the same integer. Every method draws through `random` or
    `getrandbits`, or reads or sets the state: each of those seeds it first (a method
    bound before the change, such as `gauss`'s `random`, still draws from the same
    generator)."""

    def __init__(self, x: int) -> None:  # not seeded yet (no super().__init__)
        self._seed_later = x
        self.gauss_next = None

    def random(self) -> float:
        _begin(self)
        return random.Random.random(self)

    def getrandbits(self, k: int, /) -> int:
        _begin(self)
        return random.Random.getrandbits(self, k)

    def seed(self, *args: Any, **kwargs: Any) -> None:
        _begin(self)
        random.Random.seed(self, *args, **kwargs)

    def getstate(self) -> tuple[Any, ...]:
        _begin(self)
        return random.Random.getstate(self)

    def setstate(self, state: tuple[Any, ...]) -> None:
        _begin(self)
        random.Random.setstate(self, state)

    def __reduce__(self) -> Any:
        _begin(self)
        return random.Random.__reduce__(self)


def _begin(r: random.Random) -> None:
    """Seed a `_Stream` on its first use and make it a plain `random.Random`."""
    x = r.__dict__.pop("_seed_later", None)
    if x is not None:
        r.__class__ = random.Random
        random.Random.seed(r, x)
