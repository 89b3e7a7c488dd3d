"""The end-of-game record (`GameSummary`) and the per-scope recent results, with their items.

The compaction Lambda writes one `GameSummary` per finished game, in one transaction, to
two places of the games table (docs/COMPACTION.md):

- `GAME#<id>` / `RESULT`: the game's record and its whole belief history (the replay,
  statistics, people);
- `AGENT#<harry spec>` / `OPP#<opponent>#RESULTS`: the last `RESULTS_MAX` records of that
  scope, oldest first, with a version: what an AI Harry's start-up reads (its cross-game
  memory).

The per-scope item is written only for an AI Harry (a person's Harry has no start-up that
would read it). Neither item has a TTL: the log and the snapshot expire with the game, the
compacted record is what stays.

Encodings are deterministic: the same summary gives byte-identical items (pydantic's JSON
in field order, zlib at a fixed level), so a stream retry can be compared byte for byte.
This module depends on `horcrux.models` only (the port imports it).
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from horcrux.models import Seat

Item = dict[str, Any]

RESULT_SK = "RESULT"
RESULTS_MAX = 20
"""The per-scope item keeps the last this-many summaries (about 0.2 KB each compressed)."""
SUMMARY_SCHEMA = 1
_ZLEVEL = 9


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RelocationRecord(_Frozen):
    """One of Voldemort's relocations, seen against Harry's evidence."""

    turn: int
    from_location: str
    to_location: str
    turns_since_positive: int | None = Field(
        description="turns since Harry's last positive at `from_location` (None: never)"
    )


class DecoyRecord(_Frozen):
    """One decoy Voldemort planted, and whether Harry then believed in that location."""

    turn: int
    location: str
    at_harry_top: bool | None = Field(
        description="planted at the top location of Harry's latest belief point "
        "(None: no belief history for that turn)"
    )
    attacked_turn: int | None = Field(description="the turn Harry attacked it (None: never)")
    at_rule_top: bool | None = Field(
        default=None,
        description="planted where the filter's planting rule expects (the free location "
        "with the highest public evidence, evidence > 0): ECHO's `plant_top` (None: a "
        "record written before this field)",
    )
    at_blind_top: bool | None = Field(
        default=None,
        description="planted at the free location with the highest public evidence while "
        "that evidence was not above 0 (before any positive there): ECHO's `plant_blind` "
        "(None: a record written before this field)",
    )


class BeliefSummary(_Frozen):
    """The belief history in a few numbers (the full history is kept on the RESULT item)."""

    points: int
    first_turn: int
    last_turn: int
    entropy_first: float
    entropy_last: float
    entropy_min: float
    top_hit_rate: float = Field(
        description="share of points whose top location held a real Horcrux at that turn"
    )
    final_top: tuple[str, ...]


class GameSummary(_Frozen):
    """What one finished game taught: built from the events and the truth, never a clock."""

    schema_version: int = SUMMARY_SCHEMA
    game_id: str
    rules: str
    harry: str = Field(description="Harry's identity: the AI brain spec or `player:<hash>`")
    voldemort: str = Field(description="Voldemort's identity, the same way")
    harry_kind: Literal["human", "ai"]
    voldemort_kind: Literal["human", "ai"]
    winner: Seat
    end_reason: str
    turns: int
    last_seq: int
    destroyed: int
    attacks_used: int
    attacks_wasted_decoy: int
    attacks_wasted_empty: int
    relocations: tuple[RelocationRecord, ...]
    decoys: tuple[DecoyRecord, ...]
    belief: BeliefSummary | None

    @property
    def scope(self) -> tuple[str, str] | None:
        """(agent, opponent) of the recent-results item, or None when Harry is a person."""
        if self.harry_kind != "ai":
            return None
        return self.harry, opponent_of(self.voldemort_kind, self.voldemort)


class RecentResults(_Frozen):
    """The last summaries of one scope, oldest first. `version` 0: nothing stored yet."""

    agent: str
    opponent: str
    version: int = 0
    results: tuple[GameSummary, ...] = ()

    def has(self, game_id: str) -> bool:
        return any(r.game_id == game_id for r in self.results)

    def appended(self, summary: GameSummary, keep: int = RESULTS_MAX) -> RecentResults:
        """The next version with `summary` last, the oldest dropped beyond `keep`."""
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        return self.model_copy(
            update={
                "version": self.version + 1,
                "results": (*self.results, summary)[-keep:],
            }
        )


_SUMMARIES: TypeAdapter[list[GameSummary]] = TypeAdapter(list[GameSummary])


# ---------------------------------------------------------------- identities and keys
def seat_identity(kind: str, brain: str | None, token_hash: str | None) -> str:
    """An AI seat is its brain spec; a person is `player:<token hash>` (the store's id)."""
    if kind == "ai":
        return brain or "?"
    return f"player:{token_hash or 'anonymous'}"


def opponent_of(kind: str, identity: str) -> str:
    """The opponent scope: a Voldemort brain's name (spec without its parameter), or the
    person's `player:<hash>`."""
    return identity.split(":", 1)[0] if kind == "ai" else identity


def agent_pk(agent: str) -> str:
    return f"AGENT#{agent}"


def results_sk(opponent: str) -> str:
    return f"OPP#{opponent}#RESULTS"


def memory_sk(opponent: str) -> str:
    return f"OPP#{opponent}#MEMORY"


def memory_key(agent: str, opponent: str) -> Item:
    """The scope's ECHO memory item (horcrux.echo): beside its recent results."""
    return {"pk": {"S": agent_pk(agent)}, "sk": {"S": memory_sk(opponent)}}


def result_key(game_id: str) -> Item:
    return {"pk": {"S": f"GAME#{game_id}"}, "sk": {"S": RESULT_SK}}


def recent_key(agent: str, opponent: str) -> Item:
    return {"pk": {"S": agent_pk(agent)}, "sk": {"S": results_sk(opponent)}}


# ---------------------------------------------------------------- items
def encode_summary(summary: GameSummary) -> str:
    return summary.model_dump_json()


def encode_result(summary: GameSummary, belief_history_blob: bytes | None = None) -> Item:
    """The `GAME#<id>` / `RESULT` item: a few scalars to inspect, the summary's JSON, and
    the belief history blob (the snapshot's `bhist`, as is)."""
    item: Item = {
        **result_key(summary.game_id),
        "schema": {"N": str(summary.schema_version)},
        "winner": {"S": summary.winner},
        "turns": {"N": str(summary.turns)},
        "harry": {"S": summary.harry},
        "voldemort": {"S": summary.voldemort},
        "summary": {"S": encode_summary(summary)},
    }
    if belief_history_blob:
        item["bhist"] = {"B": bytes(belief_history_blob)}
    return item


def decode_result(item: Item) -> GameSummary:
    return GameSummary.model_validate_json(item["summary"]["S"])


def encode_recent(recent: RecentResults) -> Item:
    blob = _SUMMARIES.dump_json(list(recent.results))
    return {
        **recent_key(recent.agent, recent.opponent),
        "v": {"N": str(recent.version)},
        "n": {"N": str(len(recent.results))},
        "last": {"S": recent.results[-1].game_id if recent.results else ""},
        "results": {"B": zlib.compress(blob, _ZLEVEL)},
    }


def decode_recent(agent: str, opponent: str, item: Item | None) -> RecentResults:
    if not item:
        return RecentResults(agent=agent, opponent=opponent)
    results = _SUMMARIES.validate_json(zlib.decompress(bytes(item["results"]["B"])))
    return RecentResults(
        agent=agent, opponent=opponent, version=int(item["v"]["N"]), results=tuple(results)
    )
