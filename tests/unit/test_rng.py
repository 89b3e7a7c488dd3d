"""`horcrux.rng`: every stream is the `random.Random` of its (seed, key), seeded lazily."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable
from typing import Any

import pytest

from horcrux import rng


def _plain(seed: int, *key: object) -> random.Random:
    """The generator a stream stands for: `random.Random` seeded with the key's digest."""
    return random.Random(rng._digest(seed, key))


def _shuffled(r: random.Random, xs: list[int]) -> list[int]:
    r.shuffle(xs)
    return xs


DRAWS: dict[str, Callable[[random.Random], Any]] = {
    "random": lambda r: [r.random() for _ in range(5)],
    "choice": lambda r: [r.choice("abcdefghijklmno") for _ in range(5)],
    "randrange": lambda r: [r.randrange(10**9) for _ in range(5)],
    "sample": lambda r: r.sample(range(15), 3),
    "shuffle": lambda r: _shuffled(r, list(range(20))),
    "getrandbits": lambda r: r.getrandbits(64),
    "gauss": lambda r: [r.gauss(0.0, 1.0) for _ in range(3)],  # binds `random` once
    "choices": lambda r: r.choices(range(9), k=6),  # likewise
    "getstate": lambda r: r.getstate(),
    "pickle": lambda r: pickle.loads(pickle.dumps(r)).random(),
    "deepcopy": lambda r: copy.deepcopy(r).random(),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
@pytest.mark.parametrize("seed", [0, 1, 7, 12345, 2**40 + 3])
def test_stream_draws_as_random_seeded_with_its_digest(name: str, seed: int) -> None:
    draw = DRAWS[name]
    for key in (("harry", 3), ("voldemort", 17), ("setup",)):
        stream = rng.stream(seed, *key)
        assert draw(stream) == draw(_plain(seed, *key))
        # and it goes on as that generator afterwards, a plain `random.Random`
        assert type(stream) is random.Random
        assert stream.random() == _plain_after(seed, key, draw)


def _plain_after(seed: int, key: tuple[object, ...], draw: Callable[[random.Random], Any]) -> float:
    plain = _plain(seed, *key)
    draw(plain)
    return plain.random()


def test_a_stream_reseeded_or_restored_follows_the_new_state() -> None:
    stream = rng.stream(3, "harry", 1)
    stream.seed(99)
    assert stream.random() == random.Random(99).random()
    other = rng.stream(4, "voldemort", 2)
    other.setstate(random.Random(5).getstate())
    assert other.random() == random.Random(5).random()


def test_a_stream_is_not_seeded_until_it_is_drawn_from(monkeypatch: pytest.MonkeyPatch) -> None:
    seeded: list[object] = []
    seed = random.Random.seed

    def counting(self: random.Random, *args: Any, **kwargs: Any) -> None:
        seeded.append(args)
        seed(self, *args, **kwargs)

    monkeypatch.setattr(random.Random, "seed", counting)
    streams = [rng.stream(11, "voldemort", turn) for turn in range(1, 51)]
    assert seeded == []  # fifty turns' streams that nobody drew from: no seeding at all
    first = streams[7].random()
    assert len(seeded) == 1
    assert first == _plain(11, "voldemort", 8).random()
