"""The players' words (web/words.json, issue 43): the AI opponents' levels are
ordered by the published figures (docs/evaluation.json), every brain a player can pick is
explained in a sentence, no player-visible text carries API paths, mode syntax or bits,
and each seat's texts speak to that seat's player (Voldemort's never to Harry)."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pytest

from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux_tools.local.play import guide_text, help_text
from horcrux_tools.web.words import fill, level_sentence, unsure, why_wasted, words

ROOT = pathlib.Path(__file__).resolve().parents[2]
EVALUATION = json.loads((ROOT / "docs" / "evaluation.json").read_text())["results"]
LABELS = ["Easy", "Cunning", "Devious"]
DEFAULT_HARRY = "planner"  # the figures' AI Harry against each Voldemort level
DEFAULT_VOLDEMORT = "reference"  # the figures' Voldemort for each Harry level
JARGON = re.compile(r"GET |POST |/brains|/games|:MODE|\bbits\b|`|\(:|\w+:\w+|entropy", re.I)


def published(seat: str, brain: str) -> float:
    """Harry's win rate in docs/evaluation.json for a level of `seat` played by `brain`."""
    if seat == "voldemort":
        rate: float = EVALUATION[brain][DEFAULT_HARRY]["win_rate"]
    else:
        rate = EVALUATION[DEFAULT_VOLDEMORT][brain]["win_rate"]
    return rate


def strength(seat: str, harry_wins: float) -> float:
    """How hard an opponent is: an AI Voldemort the less Harry wins, an AI Harry the more."""
    return -harry_wins if seat == "voldemort" else harry_wins


@pytest.mark.parametrize("seat", ["harry", "voldemort"])
def test_the_levels_are_ordered_by_the_published_win_rates(seat: str) -> None:
    levels = words()["levels"][seat]
    assert [lv["label"] for lv in levels] == LABELS
    rates = {lv["brain"]: published(seat, lv["brain"]) for lv in levels}
    # the figure each level states is the published one
    for lv in levels:
        assert lv["harry_wins"] == pytest.approx(rates[lv["brain"]], abs=0.005), lv
        assert f"{round(rates[lv['brain']] * 100)} game" in level_sentence(lv), lv
    # weakest first: the labels' order is the order of the published strength
    by_strength = sorted(levels, key=lambda lv: strength(seat, rates[lv["brain"]]))
    assert [lv["label"] for lv in by_strength] == LABELS, rates
    assert len({rates[lv["brain"]] for lv in levels}) == len(levels)  # no tie to hide behind


def test_a_swapped_pair_of_levels_is_caught() -> None:
    """The check above can fail: with two levels' brains swapped the order disagrees."""
    levels = [dict(lv) for lv in words()["levels"]["voldemort"]]
    levels[0]["brain"], levels[2]["brain"] = levels[2]["brain"], levels[0]["brain"]
    rates = {lv["brain"]: published("voldemort", lv["brain"]) for lv in levels}
    by_strength = sorted(levels, key=lambda lv: strength("voldemort", rates[lv["brain"]]))
    assert [lv["label"] for lv in by_strength] != LABELS


@pytest.mark.parametrize(
    ("seat", "registry"), [("harry", HARRY_BRAINS), ("voldemort", VOLDEMORT_BRAINS)]
)
def test_every_brain_a_player_can_pick_is_explained_in_a_sentence(seat: str, registry: Any) -> None:
    said = words()["brains"][seat]
    assert set(registry.names(seat_only=True)) <= set(said)
    for name, sentence in said.items():
        assert sentence.endswith(".") and len(sentence.split()) >= 6, (name, sentence)


def _texts(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [t for key, value in node.items() if key != "about" for t in _texts(value)]
    if isinstance(node, list):
        return [t for value in node for t in _texts(value)]
    return []


def test_no_player_text_carries_api_paths_mode_syntax_or_bits() -> None:
    texts = _texts(words())
    assert len(texts) > 50
    # the command column of the terminal's help is syntax on purpose (`search L`)
    commands = {cmd for seat in words()["help"].values() for cmd, _ in seat}
    for text in texts:
        if text in commands:
            continue
        assert not JARGON.search(text.replace("{", "").replace("}", "")), text
    assert unsure(3.9, 15).startswith("with almost no idea") and "bits" not in unsure(1.0, 15)


HARRY_ADDRESSED = re.compile(
    r"\byour (search|searches|positive|evidence|attack|attacks)\b|\bstrike\b|\byou attack", re.I
)


@pytest.mark.parametrize("part", ["guide", "wasted", "help"])
def test_voldemorts_texts_speak_to_voldemort_and_harrys_to_harry(part: str) -> None:
    voldemort = _texts(words()[part]["voldemort"])
    harry = _texts(words()[part]["harry"])
    assert voldemort and harry
    for text in voldemort:
        assert not HARRY_ADDRESSED.search(text), text
    for text in harry:
        assert not re.search(r"\byour (Horcrux|decoy|charges)", text), text


HISTORY = [
    {"turn": 3, "observations": [{"kind": "search", "location": "azkaban", "outcome": "positive"}]},
    {"turn": 5, "observations": [{"kind": "attack", "location": "azkaban", "outcome": "empty"}]},
    {"turn": 6, "observations": [{"kind": "attack", "location": "hogwarts", "outcome": "empty"}]},
]


def test_a_wasted_attack_is_explained_to_each_seat_in_its_own_words() -> None:
    harry = why_wasted(HISTORY, HISTORY[1], "harry", str.title)
    voldemort = why_wasted(HISTORY, HISTORY[1], "voldemort", str.title)
    spectator = why_wasted(HISTORY, HISTORY[1], "spectator", str.title)
    assert harry == fill(
        words()["wasted"]["harry"]["moved"], {"place": "Azkaban", "turn": 3, "f": "15%"}
    )
    assert "your positive at turn 3" in harry
    assert voldemort is not None and voldemort.startswith("Harry found nothing at Azkaban")
    assert "his positive there at turn 3" in voldemort and "your positive" not in voldemort
    assert spectator is not None and "Harry's positive at turn 3" in spectator
    unpointed = why_wasted(HISTORY, HISTORY[2], "voldemort", str.title)
    assert unpointed is not None and "none of his searches" in unpointed
    assert why_wasted(HISTORY, HISTORY[0], "harry") is None  # a search wastes nothing


def test_the_terminals_help_and_guide_are_the_seats_own() -> None:
    rules = {"sensor": {"d": 0.8, "f": 0.15}, "attacks": 7, "decoys": 3, "relocations": 3}
    voldemort = help_text("voldemort", rules)
    harry = help_text("harry", rules)
    assert "your signals" not in voldemort and "Harry's searches' results" in voldemort
    assert "relocate A B" in voldemort and "search L" not in voldemort
    assert "positive 80% if something is there, 15% if not" in harry
    assert guide_text("voldemort", rules).count("\n") == 3
    assert "Harry searches one location a turn" in guide_text("voldemort", rules)
    assert "(3 times a game)" in guide_text("harry", rules)
