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


class DecisionRecord(BaseModel):
    """One decision of a brain: which memory tier fed it and what it cost."""

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
