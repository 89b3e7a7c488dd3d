"""The players' words (`web/words.json`, beside the page that reads it): the levels of the AI
opponents with their measured strength, one sentence per AI brain, each seat's first-game
guide and help, and what a wasted attack can mean to Harry, to Voldemort and to a
spectator. The browser page and the terminal client (`horcrux play`) say the same thing in
the same words; `fill` fills a text's `{name}` placeholders as the page's `fill` does."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from horcrux_tools.web.static import SITE_DIR

WORDS_FILE = SITE_DIR / "words.json"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@functools.cache
def words() -> dict[str, Any]:
    """words.json, read once."""
    loaded: dict[str, Any] = json.loads(WORDS_FILE.read_text(encoding="utf-8"))
    return loaded


def fill(text: str, values: Mapping[str, object]) -> str:
    """`text` with each `{name}` that `values` has replaced (others left as they are)."""
    return _PLACEHOLDER.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text
    )


def level_of(seat: str, brain: str) -> dict[str, Any] | None:
    """The level (label, sentence, figure) of an AI `seat` played by `brain`, if it is one."""
    base = brain.split(":", 1)[0]
    return next((lv for lv in words()["levels"][seat] if lv["brain"] == base), None)


def level_sentence(level: Mapping[str, Any]) -> str:
    return fill(level["sentence"], {"wins": round(level["harry_wins"] * 100)})


def brain_sentence(seat: str, brain: str) -> str:
    """One sentence on an AI brain, in players' words ("" for a brain it does not know)."""
    said: str = words()["brains"][seat].get(brain.split(":", 1)[0], "")
    return said


def left_sentence(voice: str, other: str = "the other player") -> str:
    """What a game nobody has moved in for the idle time (the API's `abandoned`) says to
    `voice` (`player`: whose turn it is, `waiting`: the other seat, `spectator`); `other`
    is who is to move, for `waiting`."""
    left: dict[str, Any] = words()["left"]
    return fill(left[voice], {"minutes": left["minutes"], "other": other})


def pct(x: float) -> str:
    return f"{round(x * 100)}%"


def why_wasted(
    history: Sequence[Mapping[str, Any]],
    record: Mapping[str, Any],
    voice: str,
    place: Any = str,
    false_rate: float = 0.15,
) -> str | None:
    """After an attack that destroyed nothing: one line on what it can mean, from Harry's
    own history before that turn (his positives there), said to `voice` (harry, voldemort
    or spectator); None for any other record. As the page's `whyWasted`."""
    attack = next((o for o in record["observations"] if o["kind"] == "attack"), None)
    if attack is None or attack["outcome"] == "destroyed":
        return None
    at = attack["location"]
    positives = [
        r["turn"]
        for r in history
        if r["turn"] < record["turn"]
        for o in r["observations"]
        if o["kind"] == "search" and o["location"] == at and o["outcome"] == "positive"
    ]
    said = words()["wasted"]
    lines = said.get(voice) or said["harry"]
    n = len(positives)
    values = {
        "place": place(at),
        "turn": positives[-1] if n else "",
        "f": pct(false_rate),
        "positives": fill(said["positives"] if n == 1 else said["positives_many"], {"n": n})
        if n
        else "",
    }
    if attack["outcome"] == "decoy":
        return fill(lines["decoy"], values)
    return fill(lines["moved"] if n else lines["unpointed"], values)


def unsure(entropy: float, locations: int) -> str:
    """How unsure a belief is, in words: its entropy as a share of the most there can be
    (as the page's `unsure`)."""
    import math

    share = max(0.0, min(1.0, entropy / math.log2(locations)))
    word = (
        "nearly sure"
        if share < 0.25
        else "fairly sure"
        if share < 0.5
        else "unsure"
        if share < 0.8
        else "with almost no idea"
    )
    return f"{word} ({round(share * 100)}% of the most uncertainty there can be)"


__all__ = [
    "WORDS_FILE",
    "brain_sentence",
    "fill",
    "level_of",
    "level_sentence",
    "pct",
    "unsure",
    "why_wasted",
    "words",
]
