"""Kept for imports written before the move: the records live in `horcrux.decisions`."""

from horcrux.decisions import DecisionRecord, FallbackReason, Source, Tier

__all__ = ["DecisionRecord", "FallbackReason", "Source", "Tier"]
