"""`BayesBelief`: the exact Bayes belief map over the stacked filters (`horcrux.belief.filter`),
with adversary-model averaging; the whole filter is described in `horcrux.belief.bayes`."""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict

import numpy as np

from horcrux.belief import policy, ties
from horcrux.belief.base import BeliefPoint
from horcrux.belief.budgets import Prior, forgotten_budgets, plain_prior
from horcrux.belief.catalogue import DEFAULT_MODE, MODES, RULE_THRESHOLDS, AdversaryModel
from horcrux.belief.codec import (
    KIND_CODE,
    KINDS,
    OUTCOME_CODE,
    OUTCOMES,
    SNAPSHOT_VERSION,
    model_of,
)
from horcrux.belief.filter import Filters
from horcrux.belief.information import binary_entropy, h2
from horcrux.belief.reacting import race_attack
from horcrux.belief.reader import MapReader
from horcrux.belief.tables import CLIP, MAX, SUM, TINY, BoolArray, FloatArray, Maps
from horcrux.models import HarryRecord, Observation
from horcrux.rules import RuleSet, Sensor


def _belief_point(turn: int, k: int, m: FloatArray, locations: tuple[str, ...]) -> BeliefPoint:
    """A turn's history point from its k and marginals: `entropy()` and `top(3)` on them."""
    entropy = 0.0
    if k > 0:
        p = m / k
        p = p[p > 0.0]
        entropy = float(-(p * np.log2(p)).sum())
    order = ties.ranked(m.tolist())[:3]  # near-equals in board order
    top = tuple((locations[i], round(float(m[i]), 6)) for i in order)
    return BeliefPoint(turn=turn, entropy=round(entropy, 6), top=top)


class BayesBelief:
    """Exact Bayes filter over Horcrux sets x relocation charges, averaged over models.

    Works for any `RuleSet`. `mode` is one of `MODES` (`trigger`, `hazard`, `static`,
    `mixture`), or pass `models` explicitly (e.g. with priors from cross-game memory).
    `horcruxes` / `charges` override the starting k and R (the memory-window ablation
    rebuilds a map mid-game); `charge_prior` replaces "surely R charges" by weights over
    r = 0..R, and `decoy_prior` "surely no decoy planted yet" by weights over 0..D decoys
    used: what a Harry who forgot the start of the game should believe about Voldemort's
    budgets. `forgotten=t` sets both from each model's forecast for t forgotten turns
    (`forgotten_budgets`), weighed against ignorance by `trust`.
    """

    def __init__(
        self,
        rules: RuleSet,
        mode: str = DEFAULT_MODE,
        *,
        models: tuple[AdversaryModel, ...] | None = None,
        horcruxes: int | None = None,
        charges: int | None = None,
        charge_prior: Prior | None = None,
        decoy_prior: Prior | None = None,
        forgotten: int = 0,
        trust: float = 1.0,
    ) -> None:
        if models is None:
            if mode not in MODES:
                raise ValueError(f"unknown belief mode {mode!r}; known: {', '.join(MODES)}")
            models = MODES[mode]
        if not models:
            raise ValueError("a belief needs at least one adversary model")
        self.rules = rules
        self.mode = mode
        self.models = models
        self.name = f"bayes:{mode}"
        self._n = len(rules.locations)
        self._index = {loc: i for i, loc in enumerate(rules.locations)}
        self._start_k = rules.horcruxes if horcruxes is None else horcruxes
        self._start_r = rules.relocations if charges is None else charges
        if forgotten < 0:
            raise ValueError("forgotten must be >= 0 turns")
        if forgotten and (charge_prior is not None or decoy_prior is not None):
            raise ValueError("give either forgotten turns or explicit budget priors, not both")
        if not 0.0 <= trust <= 1.0:
            raise ValueError(f"trust in the forecast must be in [0, 1], got {trust}")
        self._forgotten = forgotten
        self._trust = float(trust) if forgotten else 1.0
        if forgotten:
            charge_prior, decoy_prior = forgotten_budgets(
                models, rules, self._start_k, forgotten, self._trust
            )
        self._charge_prior = plain_prior(charge_prior)
        self._decoy_prior = plain_prior(decoy_prior)
        self._filters = Filters(
            models,
            self._n,
            self._start_k,
            self._start_r,
            rules.decoys,
            self._charge_prior,
            self._decoy_prior,
        )
        self._log_prior = np.log(np.array([m.prior for m in models], dtype=np.float64))
        self._evidence: FloatArray = np.zeros(self._n)  # public evidence, as Voldemort sees it
        self._log: list[tuple[int, int, int, int, int]] = []  # (turn, kind, loc, outcome, sensor)
        self._ends: list[int] = []  # index into _log where each update ended
        self._turns: list[int] = []  # the turn of each update
        self._history: list[BeliefPoint] = []
        # turns folded in whose history point is not built yet: (turn, marginals); the
        # point is a function of them alone, so building it when asked gives the same one
        self._pending: list[tuple[int, int, FloatArray]] = []
        self._attacks_used = 0
        self._plain: BoolArray = np.array([m.motion != "belief" and m.level0 for m in models])
        self._any_plain = bool(self._plain.any())
        self._rule_hesitate = [(i, m.hesitate) for i, m in enumerate(models) if m.reads == "rule"]
        self._rule = next((m for m in models if m.reads == "rule"), None)
        self._exact_plant = any(m.exact for m in models)
        self._exposed = [
            i for i, m in enumerate(models) if m.motion == "belief" and m.reads in ("own", "rule")
        ]
        self._turn = 0
        self._next_turn = 1  # the turn a predictive step prepares (Harry's next decision)
        self._attack_plan: tuple[int, FloatArray | None] | None = None  # (turn, race plan)
        self._cache: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._weights: tuple[tuple[int, int], FloatArray] | None = None
        self._weights_list: list[float] | None = None
        # functions of the posterior, kept with the list of weights they were read from
        self._exposure: tuple[list[float], float] | None = None
        self._hesitation: tuple[list[float], float] | None = None

    # ------------------------------------------------------------ protocol
    @property
    def horcruxes_left(self) -> int:
        return self._filters.k

    @property
    def history(self) -> list[BeliefPoint]:
        for turn, k, m in self._pending:
            self._history.append(_belief_point(turn, k, m, self.rules.locations))
        self._pending.clear()
        return self._history

    @property
    def turn(self) -> int:
        """The turn of the last record folded in (0 before any)."""
        return self._turn

    @property
    def public_evidence(self) -> FloatArray:
        """Per location, the log-likelihood ratio of Harry's searches there (reset by an
        attack): Voldemort's view of them, what the predictive step's decoys read (never
        to be written)."""
        return self._evidence

    def read_maps_with(self, reader: MapReader) -> None:
        """Give the filter's predictive steps a replay's hook (`MapReader`)."""
        self._filters.reader = reader

    def update(self, record: HarryRecord) -> None:
        """Fold one of Harry's turns in, then apply the predictive step for Voldemort's move."""
        self.update_observations(record.turn, record.observations)

    def update_observations(
        self, turn: int, observations: tuple[Observation, ...], *, track: bool = True
    ) -> None:
        """Like `update`, from a turn's observations (a memory window may cut a turn).

        `track=False` skips the belief-history point (entropy and top 3) of this turn: a
        rebuild that replays many turns only needs the last one's.
        """
        positives: list[int] = []
        for obs in observations:
            self._observe(turn, obs)
            if obs.kind == "search" and obs.outcome == "positive":
                positives.append(self._index[obs.location])
        self._cache = None
        self._next_turn = turn + 1
        self._filters.predict(positives, self._evidence, self._maps)
        self._ends.append(len(self._log))
        self._turns.append(turn)
        self._turn = turn
        self._cache = None
        if not track:
            return
        self._pending.append((turn, self._filters.k, self.marginals().copy()))

    def occupancy(self) -> dict[str, float]:
        m = self.marginals()
        return {loc: float(m[i]) for i, loc in enumerate(self.rules.locations)}

    def entropy(self) -> float:
        """Entropy in bits of the normalised marginal map m / k (>= log2 k); 0 when k = 0."""
        k = self.horcruxes_left
        if k == 0:
            return 0.0
        p = self.marginals() / k
        p = p[p > 0.0]
        return float(-(p * np.log2(p)).sum())

    def decision_entropy(self) -> float:
        """entropy() - log2(k): 0 when Harry is sure of every remaining Horcrux."""
        k = self.horcruxes_left
        if k == 0:
            return 0.0
        return max(0.0, self.entropy() - math.log2(k))

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        m = self.marginals()
        order = ties.ranked(m.tolist())[:n]  # near-equals in board order
        return [(self.rules.locations[i], round(float(m[i]), 6)) for i in order]

    def preview(self, location: str, positive: bool, sensor: Sensor | None = None) -> FloatArray:
        """The marginals Harry would hold after one more search at `location` with this
        outcome and Voldemort's move after it (nothing is changed: a planner's lookahead)."""
        saved = self._filters
        trial = saved.lookahead()
        cache = self._cache
        plan, next_turn = self._attack_plan, self._next_turn
        self._next_turn = self._turn + 1
        j = self._index[location]
        try:
            self._filters = trial
            self._cache = None
            trial.search(j, positive, sensor or self.rules.sensor)
            evidence = self._evidence.copy()
            evidence[j] += math.log(
                (sensor or self.rules.sensor).d / (sensor or self.rules.sensor).f
                if positive
                else (1.0 - (sensor or self.rules.sensor).d)
                / (1.0 - (sensor or self.rules.sensor).f)
            )
            self._cache = None
            trial.predict([j] if positive else [], evidence, self._maps)
            self._cache = None
            out = self.marginals().copy()
        finally:
            self._filters = saved
            self._cache = cache
            self._attack_plan, self._next_turn = plan, next_turn
        return out

    def _maps(self) -> Maps | None:
        """Harry's maps the belief-reacting models read, once the other models have made
        their predictive step: `naive` (the mixture of the models that do not read his
        map: what a Bayes Harry who ignores such adversaries holds after Voldemort's turn,
        exactly) and `own` (the whole mixture, its belief-reacting models before their
        own move: the fixed point is cut there)."""
        if not self._filters.reads_harry:
            return None
        self._cache = None
        weights = self._weights_view()
        marginal = self._filters.marginal()
        own = self._filters.mixture(weights)  # `marginals()`
        naive: FloatArray = own
        if self._any_plain:
            pi = np.where(self._plain, weights, 0.0)
            pi /= max(float(SUM(pi, None)), TINY)
            naive = CLIP(pi @ marginal, 0.0, 1.0)
        maps = {"own": own, "naive": naive}
        rule = self._rule
        if self._exact_plant:
            maps["weights"] = weights
        if rule is not None:
            race = self._race_attack(rule, own) if rule.race > 0.0 else None
            if race is not None:
                maps["attack"] = maps["race"] = race
            else:
                maps["attack"] = self._rule_attack(rule, own)
            self._attack_plan = (self._next_turn, race)
        return maps

    def race_exposure(self) -> float:
        """rho: the posterior weight of the models that read Harry's own map (`exposure`),
        each times its P(a relocation charge is left): the chance that an attack drawn
        by a copy of Harry's rule is also a move."""
        weights = self._weights_view()
        w = self._filters.w
        return float(sum(weights[i] * float(w[1:, i].sum()) for i in self._exposed))

    def race_plan(self) -> FloatArray | None:
        """P(Harry attacks j) this turn when he plays the race (the distribution the `rule`
        model moved on, from his map before that move), else None."""
        plan = self._attack_plan
        if plan is None or plan[0] != self._turn + 1 or plan[1] is None:
            return None
        return plan[1]

    def _race_attack(self, rule: AdversaryModel, own: FloatArray) -> FloatArray | None:
        """`race_attack` for the next turn on `own`, or None while rho < `rule.race`."""
        k = self._filters.k
        attacks = self.attacks_left()
        if k == 0 or attacks <= 0:
            return None
        # rho is at most the exposed models' weight (each model's weights sum to 1, up to
        # rounding): most turns that alone is below the race's start, and the per-model
        # sums rho needs are skipped
        if self.exposure() < rule.race * (1.0 - 1e-9):
            return None
        rho = self.race_exposure()
        if ties.below(rho, rule.race):
            return None
        turns_left = self.rules.max_turns - self._next_turn + 1
        forced = policy.forced_attack(turns_left, k, attacks, endgame=True)
        cost = rule.race_cost * policy.spare_threshold(rule.rule or RULE_THRESHOLDS, attacks - k)
        return race_attack(own, cost, min(1.0, rho), forced)

    def attacks_left(self) -> int:
        """Harry's attacks left, from the attacks he has folded in."""
        return self.rules.attacks - self._attacks_used

    def exposure(self) -> float:
        """The posterior weight of the belief-reacting models that read Harry's own map
        (`reads` own or rule): how exposed his own map is to the adversary."""
        weights = self._weights_floats()
        kept = self._exposure
        if kept is None or kept[0] is not weights:  # once per posterior (several readers)
            kept = self._exposure = (weights, float(sum(weights[i] for i in self._exposed)))
        return kept[1]

    def hesitation(self) -> float:
        """P(Harry searches instead of a threshold attack): the `rule` model's hesitation
        times that model's posterior weight (nothing to hide from other adversaries)."""
        if not self._rule_hesitate:
            return 0.0
        weights = self._weights_floats()
        kept = self._hesitation
        if kept is None or kept[0] is not weights:  # once per posterior (several readers)
            total = float(sum(h * weights[i] for i, h in self._rule_hesitate))
            kept = self._hesitation = (weights, total)
        return kept[1]

    def _rule_attack(self, rule: AdversaryModel, own: FloatArray) -> FloatArray:
        """P(the planner's rule attacks j next turn), per location, on `own`: the top
        location (ties by the turn's tie order) when its occupancy is above the spare
        attacks' threshold lowered by U(0, jitter), unless he hesitates; always when the
        attack is forced (no more turns than Horcruxes, or the endgame)."""
        out: FloatArray = np.zeros(self._n)
        k = self._filters.k
        attacks = self.attacks_left()
        if k == 0 or attacks <= 0:
            return out
        turn = self._turn + 1
        turns_left = self.rules.max_turns - turn + 1
        forced = policy.forced_attack(turns_left, k, attacks, endgame=True)
        seen = own.tolist()
        top = max(seen)
        threshold = policy.spare_threshold(rule.rule or RULE_THRESHOLDS, attacks - k)
        if not forced and (
            top <= threshold - rule.spread if rule.spread > 0.0 else ties.below(top, threshold)
        ):
            return out  # no attack: the top location is below every jittered threshold
        best = ties.argmax_first(
            seen, ties.tie_ranks(self._n, turn)
        )  # lowest tie rank of the near-top
        if forced:
            out[best] = 1.0
            return out
        m = seen[best]
        if rule.spread > 0.0:
            p = min(1.0, max(0.0, (m - (threshold - rule.spread)) / rule.spread))
        else:
            p = 1.0 if ties.at_least(m, threshold) else 0.0
        out[best] = p * (1.0 - self.hesitation())
        return out

    # ------------------------------------------------------------ arrays for planners
    def model_weights(self) -> FloatArray:
        """Posterior weight of each adversary model (sums to 1)."""
        return self._weights_view().copy()

    def log_evidence(self) -> float:
        """log P(Harry's observations so far) under this belief's prior over its models:
        how well the belief predicted what Harry saw (comparable with another belief's)."""
        logw: list[float] = (self._log_prior + self._filters.log_evidence).tolist()
        top = max(logw)
        return top + math.log(math.fsum(math.exp(x - top) for x in logw))

    def _weights_view(self) -> FloatArray:
        """`model_weights()` without the copy: the cached array, never to be written."""
        key = (self._filters.serial, self._filters.version)
        if self._weights is not None and self._weights[0] == key:
            return self._weights[1]
        logw = self._log_prior + self._filters.log_evidence
        logw -= MAX(logw, None)
        w = np.exp(logw)
        out: FloatArray = w / SUM(w, None)
        out.setflags(write=False)
        self._weights = (key, out)
        self._weights_list = None
        return out

    def _weights_floats(self) -> list[float]:
        """`model_weights()` as Python floats (the same doubles), cached with it."""
        weights = self._weights_view()
        if self._weights_list is None:
            self._weights_list = weights.tolist()
        return self._weights_list

    def _arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        if self._cache is None:
            pi = self._weights_view()
            mf = self._filters.marginal()
            decoys = (1.0 - mf) * self._filters.c
            m = pi @ mf
            decoy = pi @ decoys
            q = m + decoy
            self._cache = (CLIP(m, 0.0, 1.0), CLIP(q, 0.0, 1.0), decoy)
        return self._cache

    def model_marginals(self) -> FloatArray:
        """(models, N): each adversary model's own P(real Horcrux at i)."""
        return self._filters.marginal().copy()

    def model_decoy_odds(self) -> FloatArray:
        """(models, N): each adversary model's c_j = P(decoy at j | no Horcrux at j)."""
        return self._filters.c.copy()

    def marginals(self) -> FloatArray:
        """m_i = P(real Horcrux at i), in board order; sums to k."""
        return self._arrays()[0]

    def respond_probability(self) -> FloatArray:
        """q_i = P(i responds to a search) = m_i + (1 - m_i) c_i, in board order."""
        return self._arrays()[1]

    def decoy_probability(self) -> FloatArray:
        """P(decoy at i), in board order."""
        return self._arrays()[2]

    def real_given_responds(self) -> FloatArray:
        """P(real | responds) = m / q per location (decoy risk of a positive place)."""
        m, q, _ = self._arrays()
        out: FloatArray = np.where(q > 0.0, m / np.maximum(q, 1e-300), 0.0)
        return out

    def search_information(self, sensor: Sensor) -> FloatArray:
        """I_j = h2(q d + (1-q) f) - q h2(d) - (1-q) h2(f) per location, in bits."""
        q = self.respond_probability()
        out: FloatArray = (
            h2(q * sensor.d + (1.0 - q) * sensor.f)
            - q * binary_entropy(sensor.d)
            - (1.0 - q) * binary_entropy(sensor.f)
        )
        return out

    def horcrux_information(self, sensor: Sensor) -> FloatArray:
        """Mutual information (bits) between a search at j and whether j holds a Horcrux.

        Like `search_information`, but a decoy counts as noise, not as something to learn:
        P(positive | Horcrux) = d, P(positive | none) = g_j = c_j d + (1 - c_j) f.
        """
        m, _, decoy = self._arrays()
        # elementwise, in the order the scalar formulas read (the same doubles), with one
        # numpy call for every logarithm: c_j = decoy_j / (1 - m_j) where m_j < 1, else 0
        # (below 1, 1 - m_j is at least 2^-53, so no floor is needed)
        d, f = sensor.d, sensor.f
        n = len(m)
        free = 1.0 - m  # each difference computed once, used where the formulas read it
        c = np.divide(decoy, free, out=np.zeros(n), where=m < 1.0)
        g = c * d + (1.0 - c) * f  # P(positive | no Horcrux)
        p = m * d + free * g  # P(positive)
        q = CLIP(np.concatenate((p, g)), 1e-12, 1.0 - 1e-12)
        not_q = 1.0 - q
        logs = np.log2(np.concatenate((q, not_q)))
        h = -(q * logs[: 2 * n] + not_q * logs[2 * n :])  # h2 of p, then of g
        out: FloatArray = h[:n] - m * binary_entropy(d) - free * h[n:]
        return out

    def reveal_information(self) -> FloatArray:
        """Entropy (bits) of Dumbledore's exact reveal at each location."""
        m, _, decoy = self._arrays()
        empty = np.clip(1.0 - m - decoy, 0.0, 1.0)
        total: FloatArray = np.zeros(self._n)
        for p in (m, decoy, empty):
            pc = np.clip(p, 1e-300, 1.0)
            total -= np.where(p > 0.0, p * np.log2(pc), 0.0)
        return total

    # ------------------------------------------------------------ observations
    def _observe(self, turn: int, obs: Observation) -> None:
        j = self._index[obs.location]
        sensor_code = 1 if obs.sensor == "hermione" else 0
        self._log.append((turn, KIND_CODE[obs.kind], j, OUTCOME_CODE[obs.outcome], sensor_code))
        if obs.kind == "search":
            sensor = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            positive = obs.outcome == "positive"
            self._filters.search(j, positive, sensor)
            if positive:
                self._evidence[j] += math.log(sensor.d / sensor.f)
            else:
                self._evidence[j] += math.log((1.0 - sensor.d) / (1.0 - sensor.f))
        elif obs.kind == "attack":
            self._attacks_used += 1
            self._filters.attack(j, obs.outcome)
            self._evidence[j] = 0.0
        else:
            self._filters.reveal(j, obs.outcome)

    # ------------------------------------------------------------ persistence
    def snapshot(self) -> bytes:
        """Construction parameters and the observation log, zlib'd (~200 B at turn 50)."""
        header: dict[str, object] = {
            "v": SNAPSHOT_VERSION,
            "mode": self.mode,
            "models": [asdict(m) for m in self.models],
            "k": self._start_k,
            "r": self._start_r,
        }
        if self._forgotten:
            header["fg"] = self._forgotten
            if self._trust != 1.0:
                header["tr"] = self._trust
        else:
            if self._charge_prior is not None:
                header["cp"] = self._charge_prior
            if self._decoy_prior is not None:
                header["dp"] = self._decoy_prior
        head = json.dumps(header, separators=(",", ":")).encode()
        body = bytearray(struct.pack("<HH", len(head), len(self._ends)))
        body += head
        start = 0
        for end, turn in zip(self._ends, self._turns, strict=True):
            chunk = self._log[start:end]
            body += struct.pack("<HB", turn, len(chunk))
            for _t, kind, loc, outcome, sensor in chunk:
                body += struct.pack("<BBB", kind | sensor << 4, loc, outcome)
            start = end
        return zlib.compress(bytes(body), 9)

    @classmethod
    def restore(cls, rules: RuleSet, data: bytes) -> BayesBelief:
        """Rebuild the map `snapshot()` saved, by replaying its observations (bit-identical)."""
        raw = zlib.decompress(data)
        head_len, turns = struct.unpack_from("<HH", raw, 0)
        offset = 4
        header = json.loads(raw[offset : offset + head_len])
        offset += head_len
        if header.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unsupported belief snapshot version {header.get('v')!r}")
        models = tuple(model_of(m) for m in header["models"])
        cp, dp = header.get("cp"), header.get("dp")
        belief = cls(
            rules,
            header["mode"],
            models=models,
            horcruxes=header["k"],
            charges=header["r"],
            charge_prior=plain_prior(cp),
            decoy_prior=plain_prior(dp),
            forgotten=int(header.get("fg", 0)),
            trust=float(header.get("tr", 1.0)),
        )
        for _ in range(turns):
            turn, count = struct.unpack_from("<HB", raw, offset)
            offset += 3
            observations = []
            for _ in range(count):
                code, loc, outcome = struct.unpack_from("<BBB", raw, offset)
                offset += 3
                kind = KINDS[code & 0x0F]
                sensor = "hermione" if code >> 4 else "harry"
                observations.append(
                    Observation(
                        location=rules.locations[loc],
                        kind=kind,
                        outcome=OUTCOMES[outcome],
                        sensor=sensor if kind == "search" else None,
                    )
                )
            belief.update_observations(turn, tuple(observations))
        return belief
