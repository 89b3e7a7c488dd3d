"""Counter-based randomness: every draw is a pure function of the game's seed and a key.

A draw never depends on how many draws came before it elsewhere, so a game replays
identically from its seed and its actions, and a brain's choices cannot shift the dice.
"""

from __future__ import annotations

import hashlib
import random


def _digest(seed: int, key: tuple[object, ...]) -> int:
    material = repr((seed, *key)).encode()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big")


def unit(seed: int, *key: object) -> float:
    """A uniform draw in [0, 1) fixed by (seed, key)."""
    return _digest(seed, key) / 2**64


def stream(seed: int, *key: object) -> random.Random:
    """A `random.Random` fixed by (seed, key), for a brain's or the setup's choices."""
    return random.Random(_digest(seed, key))
