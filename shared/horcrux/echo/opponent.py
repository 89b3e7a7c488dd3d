"""Who the opponent is, across games: a posterior over the generated family's policies,
and "none of these" (pure).

Each finished game gives, per family policy, the log-likelihood of Voldemort's actual
moves (`horcrux.agents.family_fit.GameFit`: three tables over the policy's dimensions,
exact on grids that hold every value the family draws), and, for "none of these", their
log-likelihood under the default planner's own adversary mixture (the gate's "no memory"
hypothesis, `echo.predictive`). Across games each table is a discounted sum,

    score <- DISCOUNT * score + max(game's log-likelihood, its table's best - CLIP)

(DISCOUNT the decay's evidence discount: 0.9 a game by default; CLIP 10 nats a table: one
game cannot rule a policy out for good), so that a changed opponent is followed within a
few games, and the posterior is

    P(policy) ∝ P0(policy) exp(T[t, o] + D[d, o] + C[c, o]),
    P(none) = NONE_PRIOR e^N / (NONE_PRIOR e^N + (1 - NONE_PRIOR) Z),

P0 the family's own distribution, N the discounted score of "none of these" and Z the
family's marginal likelihood sum_policy P0 exp(...). A person playing Voldemort is in no
family: his moves cost every policy alike (each move a policy calls impossible costs its
EPS floor), the default's mixture predicts them better, and "none of these" wins.

`plan_prior` is what memory plays, through its own gate (`plays`): after each game the
posterior from before it is scored on how well it predicted the game, against "none of
these" (the log of the posterior's mixture likelihood of the game minus the default's,
at least -EDGE_CLIP a game), and discounted like the rest (`edge`). Memory plays while
that edge is above `EDGE_MARGIN` (10 nats) and P(none) is below `PLAY_BELOW`: the `TOP`
likeliest distinct behaviours (policies that differ only in a dimension their moves
never read are one behaviour) as the particle Harry's `Prior`, weighted by the
posterior; else None, and the game is played by the default. An opponent who changes
every game (no one policy explains him) keeps the edge below the margin: memory then
plays exactly the default. An operator's correction steers at once (`corrected`).
Every choice over computed floats goes through `horcrux.belief.ties` or compares exact
values (the tables are Python-float sums in the game's order, the same on every
machine).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import cache

import numpy as np
from numpy.typing import NDArray

from horcrux.agents.family import FamilyParams
from horcrux.agents.family_fit import (
    DECOY_CELLS,
    DESTINATION_CELLS,
    OBSERVER_CELLS,
    TRIGGER_CELLS,
    GameFit,
    cell_of,
    decoy_prior,
    destination_prior,
    fit_game,
    member_shares,
    observer_prior,
    params_of,
    trigger_prior,
)
from horcrux.agents.particles import Prior
from horcrux.belief import ties
from horcrux.echo.config import EchoConfig
from horcrux.echo.decay import evidence_discount
from horcrux.echo.model import AnyItem, Correction, Opponent, item_id
from horcrux.models import GameStarted
from horcrux.store.port import AnyEvent

NONE_PRIOR = 0.5
"""The prior probability that the opponent is none of the family's policies."""
DISCOUNT = 0.9
"""Each past game's weight a game later (the style's decay)."""
PLAY_BELOW = 0.5
"""Memory plays the family posterior while P(none) is below this."""
TOP = 16
"""How many distinct behaviours the played prior holds."""
CORRECTION_NATS = 5.0
"""An operator's correction about the opponent: this many nats for the policies it
describes (the style's `CORRECTION_NATS`: about two games of a clear fit)."""
MIN_GAMES = 3
"""Games after a correction before his moves may contradict it (as a threshold
correction's, `style.THRESHOLD_MIN_GAMES`)."""
MIN_WEIGHT = 1e-4
"""A behaviour below this weight is left out of the played prior."""
NEAR = 40.0
"""Only the cells within this many nats of the best are ranked (the rest weigh < e^-40)."""

Grid = NDArray[np.float64]


@cache
def log_prior() -> Grid:
    """log P0 over the family's cells (trigger, observer, destination, decoys): the
    generated members' product of marginals, plus reference and passive on their
    equivalent cells."""
    shares = member_shares()
    t = np.array([trigger_prior(c) for c in TRIGGER_CELLS])
    o = np.array([observer_prior(c) for c in OBSERVER_CELLS])
    dest = np.array([destination_prior(name) for name in DESTINATION_CELLS])
    c = np.array([decoy_prior(cell) for cell in DECOY_CELLS])
    p = shares["generated"] * (
        t[:, None, None, None]
        * o[None, :, None, None]
        * dest[None, None, :, None]
        * c[None, None, None, :]
    )
    positive0 = TRIGGER_CELLS.index(TRIGGER_CELLS[0])
    never = len(TRIGGER_CELLS) - 1
    uniform = DESTINATION_CELLS.index("uniform")
    evidence_early = next(
        i
        for i, cell in enumerate(DECOY_CELLS)
        if (cell.decoys, cell.timing) == ("evidence-top", "early")
    )
    p[positive0, :, uniform, evidence_early] += shares["reference"] * o
    p[never, :, :, len(DECOY_CELLS) - 1] += shares["passive"] * o[:, None] * dest[None, :]
    out: Grid = np.log(p)
    return out


EDGE_MARGIN = 10.0
"""Memory plays who it says the opponent is once its edge is above this many nats (the
memory gate's margin, `echo.gate.MARGIN`): about one game of a clear out-prediction."""
EDGE_CLIP = 10.0
"""One game lowers the edge by at most this many nats (robust, like `CLIP`)."""
CLIP = 10.0
"""One game moves each table's entry at most this many nats below that table's best of the
game: a policy one game all but rules out is strongly, but boundedly, disfavoured, so an
odd game (or an opponent who changed) is outweighed within a few games (the style's
`FACTOR_MIN`, robust evidence)."""
ROUND = 6
"""Stored scores are rounded to this many decimals (a compact item, the same read back)."""

Table = tuple[tuple[float, ...], ...]


def _zeros(rows: int) -> Table:
    return tuple((0.0,) * len(OBSERVER_CELLS) for _ in range(rows))


def _fold(old: Table, new: Table, discount: float) -> Table:
    """`discount * old + new`, each of the game's entries clipped below at its table's best
    minus CLIP (robust evidence)."""
    floor = max(max(row) for row in new) - CLIP
    return tuple(
        tuple(round(discount * a + max(b, floor), ROUND) for a, b in zip(ra, rb, strict=True))
        for ra, rb in zip(old, new, strict=True)
    )


def updated(
    current: Opponent | None,
    fit: GameFit,
    none_loglik: float,
    clock: float,
    discount: float = DISCOUNT,
) -> Opponent:
    """The scope's `Opponent` after one more game (`current` None: the first)."""
    base = current or Opponent(
        id=item_id("opponent"),
        subject="opponent",
        text="",
        created=clock,
        last_access=clock,
        life=1e9,
        trigger=_zeros(len(TRIGGER_CELLS)),
        destination=_zeros(len(DESTINATION_CELLS)),
        decoys=_zeros(len(DECOY_CELLS)),
    )
    # what memory would have played before the game (its behaviours and their weights,
    # or the family's prior before any game) predicting it, against the default's mixture
    game = _grid(fit.trigger, fit.destination, fit.decoys)
    if base.games == 0:
        weights = np.exp(log_prior())
        best = float(game.max())
        predicted = best + math.log(float((weights * np.exp(game - best)).sum()))
    else:
        played = behaviours(base)
        lls = [float(game[cell_of(p)]) for p, _ in played]
        total = sum(w for _, w in played)
        best = max(lls)
        predicted = best + math.log(
            sum(w / total * math.exp(ll - best) for (_, w), ll in zip(played, lls, strict=True))
        )
    edge = max(predicted - none_loglik, -EDGE_CLIP)
    return base.model_copy(
        update={
            "edge": round(discount * base.edge + edge, ROUND),
            "trigger": _fold(base.trigger, fit.trigger, discount),
            "destination": _fold(base.destination, fit.destination, discount),
            "decoys": _fold(base.decoys, fit.decoys, discount),
            "none": round(discount * base.none + none_loglik, ROUND),
            "games": base.games + 1,
            "last_access": clock,
        }
    )


def _grid(trigger: Table, destination: Table, decoys: Table) -> Grid:
    """T[t, o] + D[d, o] + C[c, o] over the cells (trigger, observer, destination, decoys)."""
    t = np.array(trigger)
    d = np.array(destination)
    c = np.array(decoys)
    out: Grid = t[:, :, None, None] + d.T[None, :, :, None] + c.T[None, :, None, :]
    return out


def after_game(
    current: Opponent | None,
    events: Sequence[AnyEvent],
    default: float,
    clock: float,
    discount: float,
    corrections: Sequence[Correction],
    conflict_below: float,
) -> Opponent | None:
    """The scope's `Opponent` after a finished game (`events`; None: no game in them):
    each family policy's likelihood of Voldemort's actual moves (`fit_game`), the default
    mixture's (`default`) for "none of these", and which of the operator's `corrections`
    his moves now contradict (they stop steering play)."""
    first = events[0] if events else None
    if not isinstance(first, GameStarted):
        return None
    fresh = updated(current, fit_game(first.rules, events), default, clock, discount)
    found = contradictions(fresh, corrections, clock, conflict_below)
    return fresh.model_copy(update={"contradicted": found})


def fold_into(
    items: list[AnyItem], events: Sequence[AnyEvent], default: float, clock: float, cfg: EchoConfig
) -> None:
    """Fold a finished game into the scope's `Opponent` among `items`, in place
    (`after_game`), discounted by the decay's clock (`evidence_discount`)."""
    index = next((i for i, it in enumerate(items) if isinstance(it, Opponent)), None)
    current = items[index] if index is not None else None
    assert current is None or isinstance(current, Opponent)
    discount = evidence_discount(clock - current.last_access, cfg) if current else 1.0
    live = [c for c in items if isinstance(c, Correction) and c.valid_to is None]
    fresh = after_game(current, events, default, clock, discount, live, cfg.conflict_below)
    if fresh is None:
        return
    if index is None:
        items.append(fresh)
    else:
        items[index] = fresh


def log_joint(item: Opponent) -> Grid:
    """log P0(policy) + its score, over the cells."""
    out: Grid = log_prior() + _grid(item.trigger, item.destination, item.decoys)
    return out


def p_none(item: Opponent) -> float:
    """The posterior probability of "none of these"."""
    joint = log_joint(item)
    top = float(joint.max())
    log_z = top + math.log(float(np.exp(joint - top).sum()))
    a = math.log(NONE_PRIOR) + item.none
    b = math.log(1.0 - NONE_PRIOR) + log_z
    hi = max(a, b)
    return math.exp(a - hi) / (math.exp(a - hi) + math.exp(b - hi))


def behaviours(item: Opponent, n: int = TOP) -> list[tuple[FamilyParams, float]]:
    """The `n` likeliest distinct behaviours and their posterior weights within the
    family (best first; a behaviour's weight sums its cells among the first ones read)."""
    joint = log_joint(item)
    top = float(joint.max())
    w = np.exp(joint - top)
    w /= float(w.sum())
    logs = joint.ravel()
    near = np.flatnonzero(ties.at_least_array(logs, top - NEAR)).tolist()
    order = [near[i] for i in ties.ranked([float(logs[j]) for j in near])]
    seen: dict[FamilyParams, float] = {}
    flat = w.ravel()
    for index in order[: 50 * n]:
        cell = np.unravel_index(index, joint.shape)
        key = canonical(params_of(*(int(x) for x in cell)))
        if key not in seen and len(seen) >= n:
            continue
        seen[key] = seen.get(key, 0.0) + float(flat[index])
    return list(seen.items())


def plan_prior(
    item: Opponent | None, n: int = TOP, corrections: Sequence[Correction] = ()
) -> Prior | None:
    """The prior memory plays (module doc), or None: the default plays. `corrections`:
    the operator's, each a hypothesis of `CORRECTION_NATS` on the policies it describes
    (`corrected`), so that a correction steers the very next game."""
    steering = [c for c in corrections if steers(c, item)]
    if steering:
        item = corrected(item, steering)
    if item is None or (not steering and not plays(item)):
        return None
    if not ties.below(p_none(item), PLAY_BELOW):
        return None
    found = behaviours(item, n)
    kept = [(p, round(w, 6)) for p, w in found if w >= MIN_WEIGHT] or found[:1]
    return Prior(
        f"memory:{item.games}",
        tuple(p for p, _ in kept),
        tuple(w for _, w in kept),
    )


def described(correction: Correction) -> tuple[NDArray[np.bool_], NDArray[np.bool_]] | None:
    """The policies an operator's correction describes, as masks over the trigger cells
    and the decoy cells (None: a correction that says nothing of who the opponent is):
    `relocates` (rate >= 0.5: some trigger; below: never), `immediate` (at once / later,
    of the `positive` trigger), `threshold` (within 0.05 of the rate), `plant_top` (decoys
    where Harry's evidence or map points / not), `plant_blind` (the blind rule / not)."""
    rate = correction.rate
    if rate is None or correction.valid_to is not None:
        return None
    every_t = np.ones(len(TRIGGER_CELLS), dtype=bool)
    every_c = np.ones(len(DECOY_CELLS), dtype=bool)
    yes = rate >= 0.5
    if correction.subject == "relocates":
        t = np.array([(c.trigger != "never") == yes for c in TRIGGER_CELLS])
        return t, every_c
    if correction.subject == "immediate":
        t = np.array([c.trigger == "positive" and (c.delay == 0) == yes for c in TRIGGER_CELLS])
        return t, every_c
    if correction.subject == "threshold":
        t = np.array(
            [
                c.trigger == "threshold" and ties.at_most(abs(c.threshold - rate), 0.05)
                for c in TRIGGER_CELLS
            ]
        )
        return t, every_c
    if correction.subject == "plant_top":
        c = np.array([(d.decoys in ("evidence-top", "observer-top")) == yes for d in DECOY_CELLS])
        return every_t, c
    if correction.subject == "plant_blind":
        c = np.array([(d.decoys == "blind-early") == yes for d in DECOY_CELLS])
        return every_t, c
    return None


def steers(correction: Correction, item: Opponent | None) -> bool:
    """Whether a correction steers play: it describes policies and his moves have not
    contradicted it (`contradictions`)."""
    return described(correction) is not None and (
        item is None or correction.id not in item.contradicted
    )


def corrected(item: Opponent | None, corrections: Sequence[Correction]) -> Opponent:
    """`item` with each correction's `CORRECTION_NATS` on the policies it describes, as if
    that many nats of games had shown them (the "none of these" score untouched)."""
    base = item or Opponent(
        id=item_id("opponent"),
        subject="opponent",
        text="",
        created=0.0,
        last_access=0.0,
        life=1e9,
        trigger=_zeros(len(TRIGGER_CELLS)),
        destination=_zeros(len(DESTINATION_CELLS)),
        decoys=_zeros(len(DECOY_CELLS)),
    )
    t = np.array(base.trigger)
    c = np.array(base.decoys)
    for correction in corrections:
        masks = described(correction)
        if masks is None:
            continue
        t = t + CORRECTION_NATS * masks[0][:, None]
        c = c + CORRECTION_NATS * masks[1][:, None]
    return base.model_copy(
        update={
            "trigger": tuple(tuple(row) for row in t.tolist()),
            "decoys": tuple(tuple(row) for row in c.tolist()),
        }
    )


def support(item: Opponent, correction: Correction) -> float:
    """The games' posterior probability, within the family, of the policies a correction
    describes (1.0 for one that describes none)."""
    masks = described(correction)
    if masks is None:
        return 1.0
    joint = log_joint(item)
    w = np.exp(joint - float(joint.max()))
    return float(w[masks[0]][..., masks[1]].sum()) / float(w.sum())


def contradictions(
    item: Opponent, corrections: Sequence[Correction], clock: float, below: float
) -> tuple[str, ...]:
    """The corrections his moves contradict: at least `MIN_GAMES` clock units since one
    was made, the games give the policies it describes less than `below` (the config's
    `conflict_below`)."""
    return tuple(
        c.id
        for c in corrections
        if described(c) is not None
        and clock - c.valid_from >= MIN_GAMES
        and ties.below(support(item, c), below)
    )


def plays(item: Opponent) -> bool:
    """Whether memory plays who it says the opponent is: after a game, while its
    posterior has out-predicted the default (`edge` above `EDGE_MARGIN`) and "none of
    these" is below
    `PLAY_BELOW`."""
    return (
        item.games > 0
        and ties.above(item.edge, EDGE_MARGIN)
        and ties.below(p_none(item), PLAY_BELOW)
    )


def canonical(params: FamilyParams) -> FamilyParams:
    """The policy as its grid cell (`params_of(cell_of(...))`: a named member as its family
    equivalent, every field its trigger, observer and decoys do not use at the first
    value), with the observer at the first cell too when neither the trigger, the
    destination nor the decoys read its map: policies that play alike are one."""
    out = params_of(*cell_of(params))
    reads = (
        out.trigger in ("threshold", "predicted", "hazard")
        or out.destination == "least-likely"
        or out.decoys == "observer-top"
    )
    return out if reads else params_of(*cell_of(replace(out, observer="tally", window=4)))


__all__ = [
    "CORRECTION_NATS",
    "DISCOUNT",
    "EDGE_CLIP",
    "EDGE_MARGIN",
    "MIN_GAMES",
    "NONE_PRIOR",
    "PLAY_BELOW",
    "TOP",
    "after_game",
    "behaviours",
    "canonical",
    "contradictions",
    "corrected",
    "described",
    "fold_into",
    "log_joint",
    "log_prior",
    "p_none",
    "plan_prior",
    "plays",
    "steers",
    "support",
    "updated",
]
