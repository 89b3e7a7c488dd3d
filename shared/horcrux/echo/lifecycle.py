"""ECHO's lifecycle, pure: consolidation (like sleep), decay, supersession, the cap and
the leaky bucket, and the start-up check and rebuild (extraction: `echo.extract`; the
operator's corrections: `echo.corrections`).

Nothing here reads a clock or a random source: the clock is the scope's (a game ordinal
by default; hours when the config says so and the caller passes them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.decay import evidence_discount, reinforce, retention
from horcrux.echo.extract import extract
from horcrux.echo.model import (
    ADVERSARY_SUBJECTS,
    MEMORY_SCHEMA,
    AnyItem,
    Belief,
    Correction,
    EchoMemory,
    Experience,
    Pattern,
    Quarantined,
    Skill,
    Style,
    Subject,
    item_id,
    protected,
)
from horcrux.models import GameStarted
from horcrux.store.port import AnyEvent
from horcrux.store.results import GameSummary, RecentResults

SEEN_MAX = 20
HISTORY_MAX = 12
"""Superseded beliefs and skills kept per scope (the oldest archived beyond: counted)."""
QUARANTINE_MAX = 100
"""Quarantined items kept per scope for review (the oldest beyond: evicted, counted)."""
PRIOR_FLOOR = 0.05
"""A correction's Beta prior is (w * rate, w * (1 - rate)), each at least this."""
CONTRADICTION = 0.5
"""An experience (or an older record's pattern) whose rate is further than this from a
belief's mean contradicts it."""


# ---------------------------------------------------------------- consolidation
@dataclass(frozen=True)
class Consolidation:
    """One consolidation's result: the memory to write and what it did.

    `leaked` is True when it would have dropped more than `max_drop_share` of the items:
    `memory` then keeps the previous version's items (the caller emits the metric)."""

    memory: EchoMemory
    dropped: int
    dropped_share: float
    leaked: bool
    superseded: tuple[str, ...] = ()
    new_beliefs: tuple[str, ...] = ()
    archived: int = 0
    evicted: Mapping[str, int] = field(default_factory=dict)
    """Items the cap evicted, per level (the caller emits `MemoryEvicted`)."""
    conflicts: tuple[str, ...] = ()
    """Operator corrections the evidence contradicts (the caller emits an alarm metric)."""


Evidence = Experience | Pattern
"""What folds into a belief: an experience (one observation), or a pattern of an older
record (k of n observations; no layer makes patterns now)."""


def _counts(unit: Evidence) -> tuple[int, int]:
    """(successes, trials) of one unit of evidence."""
    if isinstance(unit, Experience):
        return int(unit.success), 1
    return unit.successes, unit.trials


def describe(subject: str, rate: float) -> str:
    pct = f"{rate:.0%}"
    texts = {
        "relocates": f"relocates horcruxes in {pct} of games",
        "immediate": f"{pct} of relocations come at once after my positive there",
        "plant_top": f"{pct} of decoys are planted at my top location",
        "plant_blind": f"{pct} of decoys are planted before any positive of mine there",
        "decoy_hit": f"{pct} of decoys cost me an attack",
        "win": f"I win {pct} of games",
    }
    return texts.get(subject, f"{subject}: {pct}")


def _new_belief(
    subject: Subject, s: int, t: int, n_patterns: int, clock: float, cfg: EchoConfig, salt: str
) -> Belief:
    a, b = 1.0 + s, 1.0 + (t - s)
    return Belief(
        id=item_id("belief", subject, clock, salt),
        subject=subject,
        text=describe(subject, a / (a + b)),
        created=clock,
        last_access=clock,
        life=cfg.half_life,
        alpha=a,
        beta=b,
        patterns=n_patterns,
        valid_from=clock,
    )


def _refresh(belief: Belief, cfg: EchoConfig) -> Belief:
    frozen = belief.frozen or (
        belief.confidence >= cfg.freeze_confidence and belief.trials >= cfg.freeze_trials
    )
    return belief.model_copy(
        update={"text": describe(belief.subject, belief.mean), "frozen": frozen}
    )


def _fold(
    items: list[AnyItem], units: list[Evidence], clock: float, cfg: EchoConfig, salt: str
) -> tuple[list[AnyItem], list[Evidence], list[str], list[str]]:
    """Fold each experience (oldest first) straight into its subject's belief: confirm,
    challenge (and supersede), or, without a belief, wait to form one."""
    superseded: list[str] = []
    created: list[str] = []
    waiting: list[Evidence] = []
    for subject in sorted({p.subject for p in units}):
        group = [p for p in units if p.subject == subject]
        for unit in group:
            successes, trials = _counts(unit)
            idx = next(
                (
                    i
                    for i, it in enumerate(items)
                    if isinstance(it, Belief) and it.active and it.subject == subject
                ),
                None,
            )
            if idx is None:
                waiting.append(unit)
                continue
            belief = items[idx]
            assert isinstance(belief, Belief)
            if belief.source == "correction":
                items[idx] = _evidence_on_correction(belief, successes, trials, cfg)
                continue
            if abs(successes / trials - belief.mean) <= CONTRADICTION:
                belief = belief.model_copy(
                    update={
                        "alpha": belief.alpha + successes,
                        "beta": belief.beta + trials - successes,
                        "patterns": belief.patterns + 1,
                        "challenge_successes": 0,
                        "challenge_trials": 0,
                        "challenge_patterns": 0,
                    }
                )
                touched = reinforce(belief, clock, cfg)  # confirming evidence: an access
                assert isinstance(touched, Belief)
                items[idx] = _refresh(touched, cfg)
                continue
            # a contradicting experience folds in too (the posterior stays unbiased) and
            # counts towards a run: `supersede_after` in a row supersede the belief
            belief = belief.model_copy(
                update={
                    "alpha": belief.alpha + successes,
                    "beta": belief.beta + trials - successes,
                    "patterns": belief.patterns + 1,
                    "challenge_successes": belief.challenge_successes + successes,
                    "challenge_trials": belief.challenge_trials + trials,
                    "challenge_patterns": belief.challenge_patterns + 1,
                }
            )
            if belief.challenge_patterns >= cfg.supersede_after and belief.source == "evidence":
                new = _new_belief(
                    unit.subject,
                    belief.challenge_successes,
                    belief.challenge_trials,
                    belief.challenge_patterns,
                    clock,
                    cfg,
                    salt,
                )
                items[idx] = belief.model_copy(update={"valid_to": clock, "superseded_by": new.id})
                for j, it in enumerate(items):  # its skill ends with it
                    if isinstance(it, Skill) and it.active and it.belief_id == belief.id:
                        items[j] = it.model_copy(update={"valid_to": clock})
                items.append(_refresh(new, cfg))
                superseded.append(belief.id)
                created.append(new.id)
            else:
                items[idx] = _refresh(belief, cfg)
    # experiences of subjects without a belief wait until `belief_threshold` of them
    pending = waiting
    rest: list[Evidence] = []
    for subject in sorted({p.subject for p in pending}):
        group = [p for p in pending if p.subject == subject]
        has_belief = any(
            isinstance(it, Belief) and it.active and it.subject == subject for it in items
        )
        if not has_belief and len(group) >= cfg.belief_threshold:
            s = sum(_counts(p)[0] for p in group)
            t = sum(_counts(p)[1] for p in group)
            new = _refresh(_new_belief(group[0].subject, s, t, len(group), clock, cfg, salt), cfg)
            items.append(new)
            created.append(new.id)
        else:
            rest.extend(group)
    return items, rest, superseded, created


def _evidence_on_correction(belief: Belief, successes: int, trials: int, cfg: EchoConfig) -> Belief:
    """A correction is a prior, not a law: the evidence folds into its posterior (so the
    planner's rate moves with it), is tallied against the corrected rate, and flags a
    conflict once it no longer supports it (`confidence` < `conflict_below`)."""
    s = belief.evidence_successes + successes
    t = belief.evidence_trials + trials
    updated = belief.model_copy(
        update={
            "alpha": belief.alpha + successes,
            "beta": belief.beta + trials - successes,
            "patterns": belief.patterns + 1,
            "evidence_successes": s,
            "evidence_trials": t,
        }
    )
    conflict = updated.confidence < cfg.conflict_below
    rate = updated.corrected_rate if updated.corrected_rate is not None else updated.mean
    text = describe(belief.subject, rate) + " (operator)"
    if conflict:
        text += f"; contradicted: evidence {s}/{t}"
    return updated.model_copy(update={"conflict": conflict, "text": text[:300]})


def _style(
    memory: EchoMemory,
    items: list[AnyItem],
    events: Sequence[AnyEvent] | None,
    factors: Mapping[str, float] | None,
    clock: float,
    cfg: EchoConfig,
) -> tuple[Mapping[str, float] | None, float | None]:
    """Fold the game's evidence into the scope's `Style`, in place: the style's factors
    and the memory gate's log-likelihood ratio of Voldemort's moves (`echo.gate`,
    recomputed from the events: the plan `memory` gave before the game against the
    default prior), or the caller's `factors` alone; and end a skill left from before
    (history: no layer reads skills). Returns the factors (None: the game has none, a
    rebuild's case) and the log-likelihood of Voldemort's moves under the default mixture
    (None without the events)."""
    from horcrux.echo import gate, style
    from horcrux.echo.use import full_plan, memory_plan

    for i, it in enumerate(items):
        if isinstance(it, Skill) and it.active:
            items[i] = it.model_copy(update={"valid_to": clock})
    llr: float | None = None
    default: float | None = None
    if events and isinstance(events[0], GameStarted):
        plan, played = full_plan(memory), memory_plan(memory)
        found = gate.game_evidence(
            events[0].rules,
            events,
            plan.models if plan is not None else None,
            played.models if played is not None and played.models else None,
        )
        llr = found.llr
        default = found.default
        factors = found.factors if factors is None else factors
    if factors is None:
        return None, default
    index = next((i for i, it in enumerate(items) if isinstance(it, Style)), None)
    current = items[index] if index is not None else None
    assert current is None or isinstance(current, Style)
    discount = evidence_discount(clock - current.last_access, cfg) if current else 1.0
    new_style = style.updated(current, factors, clock, cfg.half_life, discount)
    if llr is not None:
        score = gate.updated_score(current.gate if current else 0.0, llr, discount)
        new_style = new_style.model_copy(update={"gate": score, "gate_last": llr})
    if index is None:
        items.append(new_style)
    else:
        items[index] = new_style
    return factors, default


def _threshold_evidence(
    items: list[AnyItem], factors: Mapping[str, float] | None, cfg: EchoConfig
) -> None:
    """A threshold correction is a prior, not a law: every game's factors of the
    belief-reacting models are tallied on it (in place), its `confidence` is the tally's
    posterior at the corrected threshold, and below `conflict_below` it is a conflict."""
    from horcrux.echo import style
    from horcrux.echo.use import nearest_threshold

    if not factors:
        return
    for i, it in enumerate(items):
        if not (
            isinstance(it, Correction)
            and it.subject == "threshold"
            and it.rate is not None
            and it.valid_to is None
        ):
            continue
        evidence = dict(it.evidence)
        for u, r in factors.items():
            if u.startswith("belief@"):
                evidence[u] = round(evidence.get(u, 0.0) + style.TEMPER * r, 6)
        games = it.evidence_games + 1
        target = nearest_threshold(it.rate)
        confidence = (
            style.threshold_support(evidence, target) if games >= style.THRESHOLD_MIN_GAMES else 1.0
        )
        conflict = confidence < cfg.conflict_below
        text = it.text.split("; contradicted")[0]
        if conflict:
            q = style.evidence_thresholds(evidence)
            from horcrux.belief import ties

            best = ties.first_best(q, q) if q else target
            text += f"; contradicted: evidence favours {best:g} after {games} games"
        items[i] = it.model_copy(
            update={
                "evidence": evidence,
                "evidence_games": games,
                "confidence": confidence,
                "conflict": conflict,
                "text": text[:300],
            }
        )


def live_conflicts(items: Sequence[AnyItem]) -> tuple[str, ...]:
    """The ids of the live corrections the evidence contradicts: a rate correction's
    belief, or a threshold correction itself."""
    return tuple(
        it.id
        for it in items
        if (isinstance(it, Belief) and it.active and it.conflict and it.source == "correction")
        or (isinstance(it, Correction) and it.valid_to is None and it.conflict)
    )


@dataclass
class _Capped:
    alive: list[AnyItem]
    forgotten: list[AnyItem]
    """Unprotected items faded below `forget_below` (decay: forgetting by design)."""
    evicted: list[AnyItem]
    """Unprotected items beyond their level's budget (the cap)."""
    archived: list[AnyItem]
    """Superseded history beyond `HISTORY_MAX`."""


def _cap(items: list[AnyItem], clock: float, cfg: EchoConfig) -> _Capped:
    """Decay, bounded history, then the cap: a budget per level (`budgets`), each level's
    unprotected items beyond its budget evicted, the least retained first. Protected items
    are never evicted, and a level over its budget takes no room from another, so 100
    corrections cannot evict the experiences a new game brings."""
    forgotten = [
        it for it in items if not protected(it) and retention(it, clock, cfg) < cfg.forget_below
    ]
    gone = {it.id for it in forgotten}
    alive = [it for it in items if it.id not in gone]
    history: list[AnyItem] = [
        it
        for it in alive
        if (isinstance(it, Belief | Skill) and not it.active)
        or (isinstance(it, Correction) and it.valid_to is not None)
    ]
    archived: list[AnyItem] = []
    if len(history) > HISTORY_MAX:
        archived = sorted(history, key=lambda it: it.created)[: len(history) - HISTORY_MAX]
        old = {it.id for it in archived}
        alive = [it for it in alive if it.id not in old]
    evicted: list[AnyItem] = []
    for level, budget in cfg.budgets:
        of_level = [it for it in alive if it.level == level]
        if len(of_level) <= budget:
            continue
        from horcrux.belief import ties

        # the least retained first, near-equals oldest first (`ties`)
        free = [it for it in of_level if not protected(it)]
        weakest = ties.ranked(
            [retention(it, clock, cfg) for it in free], [it.created for it in free], lowest=True
        )
        unprotected = [free[j] for j in weakest]
        evicted += unprotected[: min(len(of_level) - budget, len(unprotected))]
    out = {it.id for it in evicted}
    return _Capped([it for it in alive if it.id not in out], forgotten, evicted, archived)


def _count(counters: Mapping[str, int], **more: int) -> dict[str, int]:
    out = dict(counters)
    for key, n in more.items():
        if n:
            out[key.replace("__", ":")] = out.get(key.replace("__", ":"), 0) + n
    return out


def consolidate(
    memory: EchoMemory,
    summary: GameSummary,
    *,
    clock: float | None = None,
    config: EchoConfig | None = None,
    events: Sequence[AnyEvent] | None = None,
    factors: Mapping[str, float] | None = None,
) -> Consolidation:
    """Fold one finished game into its scope's memory (the end-of-game 'sleep').

    `factors`: the game's style factors per model unit; without them they are computed
    from `events` (`echo.gate.game_evidence`: the likelihood of Voldemort's moves per
    unit, relative to the default prior), which also move the memory gate's score;
    without events the style and the gate are left as they are (a rebuild from the
    recent results).

    Idempotent per game: a game already in `memory.seen` changes nothing. The clock is
    the game's ordinal in the scope (`clock: games`) or the `clock` the caller passes
    (hours, with `clock: hours`)."""
    cfg = config or default_config()
    if summary.game_id in memory.seen:
        return Consolidation(memory, 0, 0.0, False)
    now = float(memory.games + 1) if clock is None else clock
    salt = summary.game_id
    won = summary.winner == "harry"
    # what this game's start-up recalled into its memory line (on the memory the game
    # read) was accessed: reinforced, like a belief it applied
    from horcrux.echo.use import memory_line

    line = memory_line(memory, cfg) or ""
    recalled = {it.id for it in memory.items if it.text and it.text in line}
    items: list[AnyItem] = [
        reinforce(it, now, cfg) if it.id in recalled else it for it in memory.items
    ]
    # the adversary beliefs this game's start-up used: applied (and reinforced)
    for i, it in enumerate(items):
        if isinstance(it, Belief) and it.active and it.subject in ADVERSARY_SUBJECTS:
            items[i] = reinforce(
                it.model_copy(
                    update={"applied": it.applied + 1, "applied_ok": it.applied_ok + won}
                ),
                now,
                cfg,
            )
    # the evidence: an older record's waiting patterns, the waiting experiences, then this
    # game's, each folded straight into its subject's belief
    units: list[Evidence] = [it for it in items if isinstance(it, Pattern)]
    units += [it for it in items if isinstance(it, Experience)]
    units += extract(summary, now, cfg, events)
    others: list[AnyItem] = [it for it in items if not isinstance(it, Experience | Pattern)]
    folded, waiting, superseded, created = _fold(others, units, now, cfg, salt)
    played, default = _style(memory, folded, events, factors, now, cfg)
    if default is not None and events:
        from horcrux.echo.opponent import fold_into

        fold_into(folded, events, default, now, cfg)
    _threshold_evidence(folded, played, cfg)
    merged: list[AnyItem] = [*folded, *waiting]
    capped = _cap(merged, now, cfg)
    dropped = len(capped.forgotten) + len(capped.evicted)
    # the guard watches what the memory held before this game (not this game's own items)
    previous = {it.id for it in memory.items}
    lost_old = sum(it.id in previous for it in (*capped.forgotten, *capped.evicted))
    share = lost_old / max(1, len(memory.items))
    # the leak guard, at any size: a consolidation that would drop too much at once
    # quarantines what it would drop (kept for review) and still learns the game
    leaked = lost_old > 0 and share > cfg.max_drop_share
    quarantine = list(memory.quarantine)
    counters = dict(memory.counters)
    evicted = Counter(it.level for it in capped.evicted)
    lost: Counter[str] = Counter()
    if leaked:
        quarantine += [
            Quarantined(item=it, game_id=summary.game_id, reason=why, clock=now)
            for why, group in (("faded", capped.forgotten), ("evicted", capped.evicted))
            for it in group
        ]
        counters = _count(counters, quarantined=dropped)
    else:
        counters = _count(counters, forgotten=len(capped.forgotten))
        counters = _count(counters, **{f"evicted__{k}": n for k, n in evicted.items()})
        lost.update(evicted)
    if len(quarantine) > QUARANTINE_MAX:  # the oldest beyond the bound: evicted, counted
        over = len(quarantine) - QUARANTINE_MAX
        quarantine = quarantine[over:]
        lost["quarantine"] += over
        counters = _count(counters, evicted__quarantine=over)
    counters = _count(counters, archived=len(capped.archived))
    seen = (*memory.seen, summary.game_id)[-SEEN_MAX:]
    conflicts = live_conflicts(capped.alive)
    return Consolidation(
        memory.model_copy(
            update={
                "version": memory.version + 1,
                "games": memory.games + 1,
                "last_game": summary.game_id,
                "clock": now,
                "seen": seen,
                "items": tuple(capped.alive),
                "quarantine": tuple(quarantine),
                "counters": counters,
            }
        ),
        dropped,
        share,
        leaked,
        tuple(superseded),
        tuple(created),
        len(capped.archived),
        evicted=dict(lost),
        conflicts=conflicts,
    )


# ---------------------------------------------------------------- start-up check, rebuild
EXPECTED_KEYS = ("schema_version", "agent", "opponent", "version", "last_game", "items")


def check(memory: EchoMemory | None, recent: RecentResults) -> str | None:
    """Why this memory is not what the last game's end wrote (None: it is).

    Expected: present when the scope has results, the current schema, the same scope,
    and `last_game` equal to the recent results' last game."""
    last = recent.results[-1].game_id if recent.results else ""
    if memory is None:
        return "missing" if last else None
    if memory.schema_version != MEMORY_SCHEMA:
        return "schema"
    if (memory.agent, memory.opponent) != (recent.agent, recent.opponent):
        return "scope"
    if memory.last_game != last:
        return "stale"
    return None


@dataclass(frozen=True)
class Rebuilt:
    """A rebuild: the memory, and what it could not rebuild (`unrebuilt` games: in the
    scope's count but no longer in its recent results; counted on the memory too)."""

    memory: EchoMemory
    replayed: int
    unrebuilt: int


def rebuild(
    agent: str,
    opponent: str,
    summaries: Iterable[GameSummary],
    *,
    base: EchoMemory | None = None,
    total_games: int | None = None,
    version: int = 0,
    config: EchoConfig | None = None,
) -> Rebuilt:
    """A scope's memory rebuilt from the events' records (the recent results), losslessly
    where it can be: from a readable `base` (a stale memory: every item, frozen beliefs
    still frozen) the games it lacks are consolidated on top; without one, from nothing.
    Games the recent results no longer hold (`total_games`, the scope's count, minus what
    the base and the results account for) cannot be rebuilt: counted, never silent."""
    ordered = list(summaries)
    memory = base or EchoMemory(agent=agent, opponent=opponent)
    ids = [s.game_id for s in ordered]
    if base is not None and base.last_game in ids:
        todo = ordered[ids.index(base.last_game) + 1 :]
    else:
        todo = [s for s in ordered if s.game_id not in memory.seen]
    for summary in todo:
        memory = consolidate(memory, summary, config=config).memory
    known = memory.games
    unrebuilt = max(0, (total_games or 0) - known)
    if unrebuilt:
        memory = memory.model_copy(
            update={
                "games": known + unrebuilt,
                "counters": _count(memory.counters, unrebuilt_games=unrebuilt),
            }
        )
    memory = memory.model_copy(update={"version": max(version, memory.version)})
    return Rebuilt(memory, len(todo), unrebuilt)
