"""Layer 1, working memory: what Harry's LLM reads for one decision, and nothing more.

`build_context(view, belief)` is a pure function of Harry's view and any Layer 2 map (the
`BeliefMap` protocol): the turn, the counters, the allies, the three most likely
locations, the entropy and the last signal. It never reads the truth. The entropy shown
is the gate's measure (`horcrux.memory.gate.gate_measure`: bits of uncertainty above
certainty, 0 when Harry is sure), the same number that chose the tier, not the raw map
entropy, which can never fall below log2(k) with k Horcruxes left.

Three renderings feed the gate's tiers (the `zero` tier sends nothing):

- `render_compressed(ctx)`: the ~55-token prompt. Deterministic; over real
  games its median is at most `COMPRESSED_TARGET_MEDIAN` and its maximum at most
  `COMPRESSED_FACTS_BUDGET` estimated tokens without a memory line. With a memory line
  the whole prompt stays within `COMPRESSED_BUDGET` (facts + memory): the memory line
  is cut to what is left, the game facts never are.
- `render_full(view, belief)`: the compressed facts plus a wider belief map, the last
  `recent` observations with their turn numbers, ally uses and a short rules reminder
  (200-500 tokens once a game is under way).
- `render_narrative(view)`: the naive architecture ("context
  stuffing"): the rules, then every one of Harry's turns as it happened with the status
  after it ("Turn 3: Harry searched Hogwarts -> negative. After turn 3: 7 of 7 attacks
  left; ..."), re-sent in full each turn; about 2,000 tokens by turn 40.

Locations are written the same way in every rendering: by default as their short names
(`SHORT_NAMES`: `Ministry` for `ministry-of-magic`, 1-2 tokens where a slug takes up to
6), or as slugs with `names="slug"`. `resolve_location` maps a short name, display name
or slug in a model's reply back to its slug. The context itself stores slugs.
The memory line is data recalled from other games (Layer 3): it is flattened to one line,
stripped of control characters, length-limited, and labelled as a note, not an
instruction.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from horcrux.belief.base import BeliefMap
from horcrux.decisions import Tier
from horcrux.memory.gate import gate_measure
from horcrux.memory.tokens import estimate_tokens
from horcrux.models import Ally, Attack, HarryRecord, Observation
from horcrux.rules import ALLY_NAMES, LOCATIONS, AllyName, RuleSet, display_name
from horcrux.views import HarryView

COMPRESSED_TARGET_MEDIAN = 55
"""Median estimated tokens of the compressed prompt over real games (no memory line)."""
COMPRESSED_FACTS_BUDGET = 64
"""Most estimated tokens the game facts of the compressed prompt may take."""
MEMORY_LINE_BUDGET = 24
"""Estimated tokens reserved for the memory line on top of the facts budget: the line gets
whatever `COMPRESSED_BUDGET` leaves after the facts, so at least this much while the facts
keep to their own budget."""
COMPRESSED_BUDGET = COMPRESSED_FACTS_BUDGET + MEMORY_LINE_BUDGET
"""The compressed prompt's whole budget with a memory line: 88 estimated tokens."""
MEMORY_LINE_MAX_CHARS = 240
"""Longest memory line an `AgentContext` accepts (after flattening)."""
TOP_N = 3
FULL_TOP_N = 6
FULL_RECENT = 12

_MEMORY_LABEL = "Note from past games (data): "
_ELLIPSIS = "..."
_SPACES = re.compile(r"\s+")

Occupancy = Annotated[float, Field(ge=0.0, le=1.0)]
Naming = Literal["short", "slug", "display"]

SHORT_NAMES: dict[str, str] = {
    "hogwarts": "Hogwarts",
    "hogsmeade": "Hogsmeade",
    "forbidden-forest": "Forest",
    "diagon-alley": "Diagon",
    "knockturn-alley": "Knockturn",
    "gringotts": "Gringotts",
    "ministry-of-magic": "Ministry",
    "azkaban": "Azkaban",
    "godrics-hollow": "Godrics",
    "little-hangleton": "Hangleton",
    "malfoy-manor": "Malfoy",
    "grimmauld-place": "Grimmauld",
    "shrieking-shack": "Shack",
    "spinners-end": "Spinners",
    "the-burrow": "Burrow",
}
"""One distinctive word per board location: 1-2 tokens where a slug takes up to 6."""

_SLUG_PATTERN = re.compile(
    r"(?<![\w-])("
    + "|".join(re.escape(s) for s in sorted(SHORT_NAMES, key=len, reverse=True))
    + r")(?![\w-])"
)


def location_name(slug: str, names: Naming = "short") -> str:
    """How the prompts write a location: its short name (default) or its slug.

    A slug outside the standard board (a custom rule set) is written as its slug.
    """
    if names == "display":
        return display_name(slug)
    return SHORT_NAMES.get(slug, slug) if names == "short" else slug


def _names_in(text: str, names: Naming) -> str:
    if names == "slug":
        return text
    return _SLUG_PATTERN.sub(lambda m: SHORT_NAMES[m.group(1)], text)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def resolve_location(text: str, locations: tuple[str, ...] = LOCATIONS) -> str | None:
    """The slug a model's reply means: a slug, a short name or a display name, any case.

    `Ministry`, `ministry-of-magic`, `Ministry of Magic` and `Godric's Hollow` all
    resolve; anything else (or a location not in `locations`) is None.
    """
    wanted = _key(text)
    if not wanted:
        return None
    for slug in locations:
        forms = (slug, display_name(slug), SHORT_NAMES.get(slug, slug))
        if any(_key(form) == wanted for form in forms):
            return slug
    return None


def clean_memory_line(text: str | None) -> str | None:
    """Flatten a recalled line to plain single-line text; None when nothing is left.

    Control and format characters become spaces, every run of whitespace (newlines
    included) becomes one space, and the result is cut to `MEMORY_LINE_MAX_CHARS`.
    """
    if text is None:
        return None
    kept = "".join(ch if not unicodedata.category(ch).startswith("C") else " " for ch in text)
    flat = _SPACES.sub(" ", kept).strip()
    if len(flat) > MEMORY_LINE_MAX_CHARS:
        flat = flat[: MEMORY_LINE_MAX_CHARS - len(_ELLIPSIS)].rstrip() + _ELLIPSIS
    return flat or None


class AgentContext(BaseModel):
    """Layer 1: exactly what one of Harry's decisions needs (about 55 tokens)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int = Field(ge=1)
    turns_left: int = Field(ge=0, description="Harry's actions still to come, this one included")
    attacks_left: int = Field(ge=0)
    horcruxes_left: int = Field(ge=0)
    allies_ready: tuple[AllyName, ...] = ()
    ally_rests: dict[AllyName, int] = Field(
        default_factory=dict, description="allies resting, with the turns until they may act"
    )
    top: tuple[tuple[str, Occupancy], ...] = Field(
        default=(), description="most likely locations with P(holds a Horcrux), 2 decimals"
    )
    entropy: float = Field(ge=0.0, description="the map's entropy in bits, 1 decimal")
    last_signal: str | None = Field(
        default=None, description="what Harry's last turn told him, e.g. 'negative @ azkaban'"
    )
    memory_line: str | None = Field(
        default=None, description="one recalled line from past games; data, never instructions"
    )

    @field_validator("memory_line", mode="before")
    @classmethod
    def _clean_memory(cls, value: object) -> object:
        return clean_memory_line(value) if isinstance(value, str) else value

    @field_validator("entropy")
    @classmethod
    def _round_entropy(cls, value: float) -> float:
        return round(value, 1)

    @field_validator("top")
    @classmethod
    def _round_top(cls, value: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        return tuple((loc, round(p, 2)) for loc, p in value)


# ---------------------------------------------------------------- building
def describe_observation(obs: Observation, names: Naming = "slug") -> str:
    """One observation in a few tokens: `negative @ hogwarts`, `attack decoy @ azkaban`."""
    where = location_name(obs.location, names)
    if obs.kind == "search":
        by = " (hermione)" if obs.sensor == "hermione" else ""
        return f"{obs.outcome} @ {where}{by}"
    return f"{obs.kind} {obs.outcome} @ {where}"


def last_signal(history: tuple[HarryRecord, ...]) -> str | None:
    """What the last of Harry's turns told him (both of Ron's searches), or None."""
    if not history:
        return None
    return ", ".join(describe_observation(o, "slug") for o in history[-1].observations) or None


def build_context(
    view: HarryView,
    belief: BeliefMap,
    *,
    memory_line: str | None = None,
    top_n: int = TOP_N,
) -> AgentContext:
    """The working memory of one decision: a pure function of the view and the map."""
    ready = tuple(name for name, status in view.allies.items() if status.available)
    rests = {name: status.rest for name, status in view.allies.items() if status.rest > 0}
    return AgentContext(
        turn=view.turn,
        turns_left=max(0, view.turns_left),
        attacks_left=view.attacks_left,
        horcruxes_left=view.horcruxes_left,
        allies_ready=_ally_order(ready),
        ally_rests={name: rests[name] for name in _ally_order(tuple(rests))},
        top=tuple((loc, min(1.0, max(0.0, p))) for loc, p in belief.top(top_n)),
        entropy=gate_measure(belief.occupancy(), belief.horcruxes_left),
        last_signal=last_signal(view.history),
        memory_line=memory_line,
    )


def _ally_order(names: tuple[AllyName, ...]) -> tuple[AllyName, ...]:
    return tuple(n for n in ALLY_NAMES if n in names)


# ---------------------------------------------------------------- compressed
def _percent(p: float) -> str:
    return f"{round(p * 100)}%"


def compressed_facts(ctx: AgentContext, *, names: Naming = "short") -> str:
    """The game facts of the compressed prompt (no memory line), one line per topic.

    Turn 25/50, 3 attacks, 3 Horcruxes left.
    Likely: Hogwarts 34%, Azkaban 22%, Ministry 18%. Entropy 1.4 bits.
    Allies ready: ron. Resting: dumbledore 2.
    Last: negative @ Godrics.
    """
    last_turn = ctx.turn + ctx.turns_left - 1
    lines = [
        f"Turn {ctx.turn}/{last_turn}, {ctx.attacks_left} attacks, "
        f"{ctx.horcruxes_left} Horcruxes left."
    ]
    entropy = f"Entropy {ctx.entropy:.1f} bits."
    if ctx.top:
        likely = ", ".join(f"{location_name(loc, names)} {_percent(p)}" for loc, p in ctx.top)
        lines.append(f"Likely: {likely}. {entropy}")
    else:
        lines.append(entropy)
    allies: list[str] = []
    if ctx.allies_ready:
        allies.append("Allies ready: " + ", ".join(ctx.allies_ready) + ".")
    if ctx.ally_rests:
        allies.append("Resting: " + ", ".join(f"{n} {t}" for n, t in ctx.ally_rests.items()) + ".")
    if allies:
        lines.append(" ".join(allies))
    last = _names_in(ctx.last_signal, names) if ctx.last_signal else "none"
    lines.append(f"Last: {last}.")
    return "\n".join(lines)


def _fit_memory(memory: str, budget: int) -> str | None:
    """The memory note cut (by words) to at most `budget` estimated tokens, or None."""
    full = _MEMORY_LABEL + memory
    if estimate_tokens(full) <= budget:
        return full
    words = memory.split(" ")
    lo, hi = 0, len(words)  # the longest prefix of words that fits, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(_MEMORY_LABEL + " ".join(words[:mid]) + _ELLIPSIS) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    return _MEMORY_LABEL + " ".join(words[:lo]) + _ELLIPSIS


def render_compressed(
    ctx: AgentContext, *, budget: int = COMPRESSED_BUDGET, names: Naming = "short"
) -> str:
    """The compressed Layer 1 prompt; deterministic, within `budget` estimated tokens.

    The game facts always come whole. A memory line gets whatever the budget leaves
    after them (one newline included), cut at a word with '...', or is dropped if not even
    its label fits. Facts longer than `budget` are returned as they are.
    """
    facts = compressed_facts(ctx, names=names)
    if ctx.memory_line is None:
        return facts
    room = budget - estimate_tokens(facts + "\n")
    note = _fit_memory(ctx.memory_line, room) if room > 0 else None
    return facts if note is None else f"{facts}\n{note}"


# ---------------------------------------------------------------- full
def rules_reminder(rules: RuleSet) -> str:
    """A short statement of the rules Harry's decision depends on."""
    s = rules.sensor
    parts = [
        f"Rules: {rules.horcruxes} Horcruxes among {len(rules.locations)} locations; "
        f"{rules.max_turns} turns; {rules.attacks} attacks a game.",
        f"search(loc): positive with p={s.d:.2f} if a Horcrux or decoy is there, "
        f"p={s.f:.2f} otherwise.",
        "attack(loc): destroyed (real), decoy (wasted, decoy removed) or empty (wasted).",
    ]
    ally_bits: list[str] = []
    for name, ally in rules.allies.items():
        if name == "ron":
            ally_bits.append(f"ron(a, b) searches two locations, rests {ally.rest}")
        elif name == "hermione":
            sensor = rules.sensor_of("hermione")
            ally_bits.append(
                f"hermione(loc) searches with p={sensor.d:.2f}/{sensor.f:.2f}, rests {ally.rest}"
            )
        else:
            uses = f", {ally.max_uses} uses a game" if ally.max_uses else ""
            ally_bits.append(
                f"dumbledore(loc) reveals horcrux/decoy/empty, rests {ally.rest}{uses}"
            )
    if ally_bits:
        parts.append("Allies act instead of Harry: " + "; ".join(ally_bits) + ".")
    parts.append(
        f"Voldemort may secretly relocate a Horcrux ({rules.relocations} times) or plant "
        f"a decoy ({rules.decoys} times): old signals go stale."
    )
    return "\n".join(parts)


def recent_signals(view: HarryView, n: int = FULL_RECENT, names: Naming = "short") -> list[str]:
    """Harry's last `n` observations, oldest first, each with its turn number."""
    if n <= 0:
        return []
    flat = [(r.turn, o) for r in view.history for o in r.observations]
    return [f"T{turn}: {describe_observation(o, names)}" for turn, o in flat[-n:]]


def render_full(
    view: HarryView,
    belief: BeliefMap,
    *,
    recent: int = FULL_RECENT,
    top_n: int = FULL_TOP_N,
    memory_line: str | None = None,
    names: Naming = "short",
) -> str:
    """The full Layer 1 prompt: the facts, a wider map, recent signals, the board, the rules.

    The memory line, if any, comes last and whole (it is at most
    `MEMORY_LINE_MAX_CHARS` characters).
    """
    ctx = build_context(view, belief, memory_line=memory_line, top_n=top_n)
    sections = [compressed_facts(ctx, names=names)]
    limited = {n: s.uses_left for n, s in view.allies.items() if s.uses_left is not None}
    if limited:
        sections.append(
            "Ally uses left: " + ", ".join(f"{n} {u}" for n, u in limited.items()) + "."
        )
    signals = recent_signals(view, recent, names)
    if signals:
        sections.append(
            f"Recent signals (last {len(signals)}, oldest first; old ones may be stale):\n"
            + "\n".join(signals)
        )
    board = ", ".join(location_name(loc, names) for loc in view.rules.locations)
    sections.append(f"Locations: {board}.")
    sections.append(rules_reminder(view.rules))
    if ctx.memory_line:
        sections.append(_MEMORY_LABEL + ctx.memory_line)
    return "\n".join(sections)


# ---------------------------------------------------------------- narrative
_VERB = {"search": "searched", "attack": "attacked", "reveal": "revealed"}


def narrative_lines(history: tuple[HarryRecord, ...], names: Naming = "short") -> list[str]:
    """One line per observation of every turn: "Turn 3: Ron searched Azkaban -> positive"."""
    lines: list[str] = []
    for record in history:
        action = record.action
        actor = action.ally.capitalize() if isinstance(action, Ally) else "Harry"
        for obs in record.observations:
            where = location_name(obs.location, names)
            lines.append(f"Turn {record.turn}: {actor} {_VERB[obs.kind]} {where} -> {obs.outcome}")
    return lines


def _statuses(rules: RuleSet, history: tuple[HarryRecord, ...]) -> list[str]:
    """Where the game stood after each of Harry's turns, recomputed from the log in one pass."""
    attacks = rules.attacks
    destroyed = 0
    ready: dict[str, int] = {}
    uses: dict[str, int] = {n: a.max_uses for n, a in rules.allies.items() if a.max_uses}
    out: list[str] = []
    for record in history:
        if isinstance(record.action, Attack):
            attacks -= 1
        destroyed += sum(o.outcome == "destroyed" for o in record.observations)
        if isinstance(record.action, Ally):
            name = record.action.ally
            ready[name] = record.turn + rules.allies[name].rest + 1
            if name in uses:
                uses[name] -= 1
        bits = [
            f"{attacks} of {rules.attacks} attacks left",
            f"{destroyed} of {rules.horcruxes} Horcruxes destroyed",
        ]
        for ally in rules.allies:
            rest = max(0, ready.get(ally, 0) - (record.turn + 1))
            state = f"resting {rest} more turns" if rest else "ready"
            if ally in uses:
                state += f", {uses[ally]} uses left"
            bits.append(f"{ally.capitalize()} {state}")
        out.append(f"After turn {record.turn}: " + "; ".join(bits) + ".")
    return out


def render_narrative(view: HarryView, *, names: Naming = "display") -> str:
    """The naive architecture ("context stuffing"): the rules, then the raw turn log.

    Every turn is written out as it happened with the status Harry had after it, and
    everything is re-sent every turn, as an agent that keeps its whole session history
    in the prompt does. This is what the L1 compressor replaces.
    """
    lines = ["You are Harry. " + rules_reminder(view.rules), "Game log:"]
    statuses = _statuses(view.rules, view.history)
    for record, status in zip(view.history, statuses, strict=True):
        action = record.action
        actor = action.ally.capitalize() if isinstance(action, Ally) else "Harry"
        told = ", ".join(
            f"{_VERB[o.kind]} {location_name(o.location, names)} -> {o.outcome}"
            for o in record.observations
        )
        lines.append(f"Turn {record.turn}: {actor} {told}. {status}")
    lines.append(
        f"Now: turn {view.turn} of {view.rules.max_turns}, {view.attacks_left} attacks and "
        f"{view.horcruxes_left} Horcruxes left. Choose your move."
    )
    return "\n".join(lines)


# ---------------------------------------------------------------- dispatch
def render_tier(
    tier: Tier,
    view: HarryView,
    belief: BeliefMap,
    *,
    memory_line: str | None = None,
    names: Naming = "short",
) -> str:
    """The prompt of a gate tier: '' for `zero` (no LLM call), else its rendering."""
    if tier == "zero":
        return ""
    if tier == "compressed":
        ctx = build_context(view, belief, memory_line=memory_line)
        return render_compressed(ctx, names=names)
    if tier == "full":
        return render_full(view, belief, memory_line=memory_line, names=names)
    return render_narrative(view)
