"""How every AI decision is accounted for: its gate tier, tokens, latency and source."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Tier = Literal["zero", "compressed", "full", "narrative"]
Source = Literal["planner", "llm", "fallback", "heuristic", "explore"]
FallbackReason = Literal[
    "illegal",  # the model chose a move the engine refuses
    "unparsable",  # no make_move call, or a malformed one
    "timeout",  # the deadline passed (overload)
    "rate_limited",  # 429
    "server_error",  # 5xx
    "connection",  # the API could not be reached
    "client_error",  # another 4xx: our request was refused
    "no_key",  # no key, or the key was refused (401/403)
]


class DecisionTrace(BaseModel):
    """What one LLM decision saw and said, for a person to read turn by turn.

    `system` and `prompt` are exactly what was sent (with `prefill` as the last assistant
    message, if the backend uses one); `offered` the candidate moves of a candidates tool
    (empty when the tool offered every legal move); `reply` what the model wrote; `llm_move`
    the move parsed from it (None if none was playable); `played` the move played (the
    fallback's when the model's was not playable); `planner_move` what the planner would have
    played in the same state. Moves are written as labels (`attack Hogwarts`).
    """

    model_config = ConfigDict(frozen=True)

    system: str
    prompt: str
    prefill: str | None = None
    tool: Literal["legal", "candidates"] = "legal"
    offered: tuple[str, ...] = ()
    reply: str = ""
    detail: str = ""
    llm_move: str | None = None
    played: str = ""
    planner_move: str | None = None
    tokens_cached: int = 0


class DecisionRecord(BaseModel):
    """One decision of a brain: which memory tier fed it and what it cost.

    For an LLM call `tokens_in` is the whole prompt by the model's own count (system, tools,
    context), `context_tokens` the estimate of the context alone; `trace` (LLM decisions
    only, when tracing is on) keeps the prompt and the reply.
    """

    model_config = ConfigDict(frozen=True)

    turn: int
    tier: Tier
    source: Source
    tokens_in: int = 0
    tokens_out: int = 0
    context_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    fallback_reason: FallbackReason | None = None
    trace: DecisionTrace | None = None


def format_trace(record: DecisionRecord) -> str:
    """One LLM decision as a person reads it: tier, what the model saw, what it said."""
    trace = record.trace
    if trace is None:
        return f"      -- turn {record.turn}, tier {record.tier}: {record.source} (no trace)"
    if record.source == "llm":
        verdict = "the model's move"
    else:
        verdict = f"fallback ({record.fallback_reason}): {trace.detail or 'no playable move'}"
    lines = [
        f"      -- turn {record.turn}, tier {record.tier}: {verdict}; "
        f"{record.tokens_in} prompt tokens (model's count, {trace.tokens_cached} cached), "
        f"{record.tokens_out} out, {record.latency_ms / 1000:.2f} s",
        *(f"      | {line}" for line in trace.prompt.splitlines()),
    ]
    if trace.offered:
        lines.append(f"      offered: {'; '.join(trace.offered)}")
    lines.append(f"      model said: {trace.reply or '(nothing)'}")
    lines.append(f"      played {trace.played}; the planner: {trace.planner_move or '-'}")
    return "\n".join(lines)


NOTE_TEXT_MAX = 4000
"""The longest `context` or `reply` a `DecisionNote` keeps (characters); a longer one is cut
to it and named in `cut`, never dropped silently."""


class DecisionNote(BaseModel):
    """One AI seat's decision as the log keeps it and the replay shows it (after the end).

    `tier` is the gate's (`zero`: no model call); `source` who chose the move (`planner`,
    `llm`, `fallback`, `heuristic`, `explore`, or `rule` for a brain that keeps no decision
    records: the rule-based Voldemorts); `move` the move played, as a label (`attack
    Hogwarts`). For a model call: `context` is exactly the prompt the model saw (the brain's
    system prompt is fixed and not repeated per turn), `offered` the candidate moves, `reply`
    what the model wrote, `llm_move` the move parsed from it, `planner_move` what the
    planner would have played; `cut` names the fields cut to `NOTE_TEXT_MAX`.
    """

    model_config = ConfigDict(frozen=True)

    seat: Literal["harry", "voldemort"]
    turn: int
    brain: str
    tier: Tier = "zero"
    source: Literal["planner", "llm", "fallback", "heuristic", "explore", "rule"] = "rule"
    move: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    fallback_reason: FallbackReason | None = None
    context: str | None = None
    offered: tuple[str, ...] = ()
    reply: str | None = None
    llm_move: str | None = None
    planner_move: str | None = None
    cut: tuple[str, ...] = ()


def decision_note(
    seat: Literal["harry", "voldemort"],
    brain: str,
    turn: int,
    move: str,
    record: DecisionRecord | None,
) -> DecisionNote:
    """The note of one AI move: from the brain's record of this turn (None: a brain that
    keeps none), texts cut to `NOTE_TEXT_MAX`."""
    if record is None:
        return DecisionNote(seat=seat, turn=turn, brain=brain, move=move)
    trace = record.trace
    cut: list[str] = []

    def bounded(name: str, text: str | None) -> str | None:
        if text is None or len(text) <= NOTE_TEXT_MAX:
            return text
        cut.append(name)
        return text[:NOTE_TEXT_MAX]

    return DecisionNote(
        seat=seat,
        turn=turn,
        brain=brain,
        tier=record.tier,
        source=record.source,
        move=move,
        tokens_in=record.tokens_in,
        tokens_out=record.tokens_out,
        latency_ms=round(record.latency_ms, 3),
        fallback_reason=record.fallback_reason,
        context=bounded("context", trace.prompt) if trace else None,
        offered=trace.offered if trace else (),
        reply=bounded("reply", trace.reply) if trace else None,
        llm_move=trace.llm_move if trace else None,
        planner_move=trace.planner_move if trace else None,
        cut=tuple(cut),
    )
