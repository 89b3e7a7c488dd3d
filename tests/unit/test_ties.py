"""`horcrux.belief.ties`: the one tie order and the ranked sorts every decision on a computed
float goes through (near-equals tied, then the documented order, never the last bits)."""

from __future__ import annotations

import random

import pytest

from horcrux.belief import ties

A = 0.1 + 0.2  # 0.30000000000000004: mathematically 0.3, a few units in the last place above
B = 0.3


def test_ranked_orders_best_first_and_near_equals_in_board_order() -> None:
    # A is above B in its last bits; a plain sort would put index 2 first
    assert ties.ranked([0.1, B, A, 0.9]) == [3, 1, 2, 0]
    assert ties.ranked([0.1, A, B, 0.9]) == [3, 1, 2, 0]


def test_ranked_lowest_first_ties_near_equals_in_board_order() -> None:
    assert ties.ranked([0.9, A, B, 0.1], lowest=True) == [3, 1, 2, 0]
    assert ties.ranked([0.9, B, A, 0.1], lowest=True) == [3, 1, 2, 0]


def test_ranked_breaks_near_ties_by_the_given_ranks() -> None:
    assert ties.ranked([B, A, 0.0], [5.0, 2.0, 0.0]) == [1, 0, 2]
    assert ties.ranked([A, B, 0.0], [5.0, 2.0, 0.0]) == [1, 0, 2]


def test_ranked_keeps_values_apart_by_more_than_the_tolerance_in_value_order() -> None:
    assert ties.ranked([0.3, 0.3 + 1e-6, 0.3 - 1e-6]) == [1, 0, 2]
    assert ties.ranked([0.3, 0.3 + 1e-6, 0.3 - 1e-6], lowest=True) == [2, 0, 1]


@pytest.mark.parametrize("seed", range(20))
def test_the_first_ranked_is_argmax_first(seed: int) -> None:
    g = random.Random(seed)
    values = [g.choice([A, B, 0.2, 0.7, 0.7 + 1e-12]) for _ in range(9)]
    ranks = [float(r) for r in g.sample(range(9), 9)]
    assert ties.ranked(values, ranks)[0] == ties.argmax_first(values, ranks)
    assert ties.ranked(values)[0] == ties.argmax_first(values)
    assert sorted(ties.ranked(values, ranks)) == list(range(9))


def test_ranked_items_and_first_best_follow_the_listed_order_on_near_ties() -> None:
    value = {"x": B, "y": A, "z": 0.5}
    assert ties.ranked_items(["x", "y", "z"], value) == ["z", "x", "y"]
    assert ties.ranked_items(["y", "x", "z"], value) == ["z", "y", "x"]
    assert ties.ranked_items(["y", "x", "z"], value, lowest=True) == ["y", "x", "z"]
    assert ties.first_best(["x", "y"], {"x": B, "y": A}) == "x"
    assert ties.first_best([0.35, 0.5], {0.35: -0.075, 0.5: -0.075000000000000001}) == 0.35


def test_the_tie_order_is_a_per_turn_permutation_written_once() -> None:
    order = ties.tie_order(15, 7)
    assert sorted(order.tolist()) == list(range(15))
    assert not order.flags.writeable
    assert ties.tie_ranks(15, 7) == order.tolist()
    expected = list(range(15))
    random.Random(ties.TIE_SEED ^ 7).shuffle(expected)
    assert order.tolist() == expected
    assert len({tuple(ties.tie_order(15, t)) for t in range(1, 30)}) > 20
