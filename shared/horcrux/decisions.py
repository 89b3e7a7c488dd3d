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
