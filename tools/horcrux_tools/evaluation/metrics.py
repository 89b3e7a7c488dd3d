"""Pure measures of the evaluation: failure modes, calibration, latency, paired differences.

Everything here is a function of a game's events (which, with the start, determine the
truth at every moment) or of plain numbers: no I/O, no randomness. The operational
definitions of the four failure modes are in docs/EVALUATION.md and on each
detector below.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from horcrux.models import GameStarted, HarryMoved, PlantDecoy, Relocate, VoldemortMoved

GameEvent = GameStarted | HarryMoved | VoldemortMoved
FAILURE_MODES = ("stale", "retrieval", "overload", "decay")
DECAY_TURNS = 20
LOG_LOSS_EPS = 1e-4
"""Probabilities are clipped to [eps, 1 - eps] for the log loss (a map that says 0 where a
Horcrux is would otherwise score infinity)."""


# ---------------------------------------------------------------- failure modes
def _positive(outcome: str) -> bool:
    return outcome in ("positive", "horcrux")


def stale_memory(events: Sequence[GameEvent]) -> int:
    """Attacks at a location whose Horcrux was relocated away after his last positive there.

    An attack at L on turn t is stale when Harry had a positive at L (a search or a
    Dumbledore `horcrux`) on some turn, and Voldemort relocated a Horcrux *from* L on a
    turn at or after Harry's last such positive and before t (Voldemort moves after
    Harry within a turn, so a move on the positive's own turn counts).
    """
    last_positive: dict[str, int] = {}
    moved_from: dict[str, list[int]] = {}
    count = 0
    for event in events:
        if isinstance(event, HarryMoved):
            for obs in event.observations:
                if obs.kind == "attack":
                    seen = last_positive.get(obs.location)
                    if seen is not None and any(
                        seen <= tr < event.turn for tr in moved_from.get(obs.location, [])
                    ):
                        count += 1
                elif _positive(obs.outcome):
                    last_positive[obs.location] = event.turn
        elif isinstance(event, VoldemortMoved) and isinstance(event.action, Relocate):
            moved_from.setdefault(event.action.from_location, []).append(event.turn)
    return count


def retrieval_failure(events: Sequence[GameEvent]) -> int:
    """Searches or attacks at a location his full history had already cleared, unrefilled.

    L is cleared by an attack there (whatever the result, L holds nothing afterwards) or a
    Dumbledore `empty`. A later look at L (a search, an ally's search, a reveal or an
    attack) counts as a retrieval failure when, since the clearing, nothing could have
    refilled L (Voldemort neither relocated a Horcrux to L nor planted a decoy there) and
    Harry had no new positive at L: the answer was in his history.
    """
    cleared: set[str] = set()
    count = 0
    for event in events:
        if isinstance(event, HarryMoved):
            for obs in event.observations:
                if obs.location in cleared:
                    count += 1
                if obs.kind == "attack" or (obs.kind == "reveal" and obs.outcome == "empty"):
                    cleared.add(obs.location)
                elif _positive(obs.outcome):
                    cleared.discard(obs.location)
        elif isinstance(event, VoldemortMoved):
            action = event.action
            if isinstance(action, Relocate):
                cleared.discard(action.to_location)
            elif isinstance(action, PlantDecoy):
                cleared.discard(action.location)
    return count


def decay(events: Sequence[GameEvent], *, min_age: int = DECAY_TURNS) -> int:
    """1 if Harry lost while a Horcrux sat unmoved where he had an old positive, else 0.

    Harry lost; at the end a Horcrux is at L, has been at L since it arrived there (the
    start, or a relocation into L), Harry had a positive at L after it arrived and at
    least `min_age` turns before the last turn, and he never attacked L after that
    positive (an attack would have destroyed it: it had not moved).
    """
    started = events[0]
    assert isinstance(started, GameStarted)
    arrived: dict[str, int] = dict.fromkeys(started.horcruxes, 0)  # location -> turn
    positives: dict[str, list[int]] = {}
    attacked: dict[str, list[int]] = {}
    winner = None
    last_turn = 0
    for event in events[1:]:
        last_turn = max(last_turn, event.turn)
        if isinstance(event, HarryMoved):
            for obs in event.observations:
                if obs.kind == "attack":
                    attacked.setdefault(obs.location, []).append(event.turn)
                    if obs.outcome == "destroyed":
                        arrived.pop(obs.location, None)
                elif _positive(obs.outcome):
                    positives.setdefault(obs.location, []).append(event.turn)
        elif isinstance(event, VoldemortMoved) and isinstance(event.action, Relocate):
            arrived.pop(event.action.from_location, None)
            arrived[event.action.to_location] = event.turn
        if not isinstance(event, GameStarted):
            winner = event.winner or winner
    if winner == "harry":
        return 0
    for loc, since in arrived.items():
        for tp in positives.get(loc, []):
            if since < tp <= last_turn - min_age and not any(
                ta > tp for ta in attacked.get(loc, [])
            ):
                return 1
    return 0


@dataclass(frozen=True)
class LatencyModel:
    """Modelled LLM latency: `a + b * prompt_tokens` seconds.

    The design's latency model: a 6,000-token context takes about 25 s to generate from,
    and the Lambda died at 30 s. `a` is a fixed per-call overhead (network, time to first token, the
    ~40-token tool call); `b` is fitted so that 6,000 tokens take `anchor_s` = 25 s.
    """

    a: float = 0.5
    anchor_tokens: int = 6000
    anchor_s: float = 25.0
    deadline_s: float = 30.0

    @property
    def b(self) -> float:
        return (self.anchor_s - self.a) / self.anchor_tokens

    def seconds(self, tokens: float) -> float:
        return self.a + self.b * tokens


TOKEN_BUDGETS: dict[str, int] = {"zero": 0, "compressed": 88, "full": 600, "narrative": 6000}
"""Per tier, the most prompt tokens a decision may carry (compressed: L1's budget with a
memory line; full: the rich context's 200-500 plus margin; narrative: 6,000)."""


def overload(
    decisions: Iterable[tuple[str, int]],
    *,
    system_tokens: int = 0,
    model: LatencyModel | None = None,
    budgets: Mapping[str, int] = TOKEN_BUDGETS,
) -> int:
    """Decisions past the deadline (modelled latency) or over their tier's token budget.

    `decisions` are (tier, context tokens); zero-tier decisions call no model and never
    overload. The prompt is the system prompt plus the context.
    """
    model = model or LatencyModel()
    count = 0
    for tier, tokens in decisions:
        if tier == "zero":
            continue
        late = model.seconds(system_tokens + tokens) > model.deadline_s
        if late or tokens > budgets.get(tier, math.inf):
            count += 1
    return count


def failure_modes(
    events: Sequence[GameEvent],
    decisions: Iterable[tuple[str, int]] = (),
    *,
    system_tokens: int = 0,
    model: LatencyModel | None = None,
) -> dict[str, int]:
    """The four failure modes counted on one game."""
    return {
        "stale": stale_memory(events),
        "retrieval": retrieval_failure(events),
        "overload": overload(decisions, system_tokens=system_tokens, model=model),
        "decay": decay(events),
    }


# ---------------------------------------------------------------- calibration
def calibration_terms(
    occupancy: Mapping[str, float], truth: Iterable[str], k_left: int
) -> tuple[float, float, float, float]:
    """One turn's (Brier, log loss, uninformed Brier, uninformed log loss).

    Each is the mean over locations of the binary score of P(location holds a real
    Horcrux) against the truth; log loss in nats, probabilities clipped to
    [LOG_LOSS_EPS, 1 - LOG_LOSS_EPS]. The uninformed guess is k_left / N everywhere.
    """
    held = set(truth)
    n = len(occupancy)
    guess = k_left / n if n else 0.0
    brier = loss = ubrier = uloss = 0.0
    for loc, p in occupancy.items():
        y = 1.0 if loc in held else 0.0
        brier += (p - y) ** 2
        ubrier += (guess - y) ** 2
        loss += _log_loss(p, y)
        uloss += _log_loss(guess, y)
    return brier / n, loss / n, ubrier / n, uloss / n


def _log_loss(p: float, y: float) -> float:
    q = min(1.0 - LOG_LOSS_EPS, max(LOG_LOSS_EPS, p))
    return -(y * math.log(q) + (1.0 - y) * math.log(1.0 - q))


def map_entropy(occupancy: Mapping[str, float]) -> float:
    """Shannon entropy in bits of the occupancy normalised to 1 (log2 N when uniform)."""
    values = [v for v in occupancy.values() if v > 0.0]
    total = sum(values)
    if total <= 0.0:
        return 0.0
    return max(0.0, -sum(v / total * math.log2(v / total) for v in values))


# ---------------------------------------------------------------- statistics
def paired_difference(
    a: Sequence[bool], b: Sequence[bool], z: float = 1.959964
) -> tuple[float, float, float]:
    """Mean of a_i - b_i over paired games, with its normal-approximation 95% interval."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        return 0.0, 0.0, 0.0
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs) if n > 1 else 0.0
    half = z * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


__all__ = [
    "DECAY_TURNS",
    "FAILURE_MODES",
    "TOKEN_BUDGETS",
    "LatencyModel",
    "calibration_terms",
    "decay",
    "failure_modes",
    "map_entropy",
    "overload",
    "paired_difference",
    "percentile",
    "retrieval_failure",
    "stale_memory",
]
