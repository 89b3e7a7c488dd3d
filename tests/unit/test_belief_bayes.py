"""The exact Bayes map against a brute-force enumeration of Horcrux sets (BELIEF.md 2-3)."""

from __future__ import annotations

import math
import random
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import horcrux.agents.planner  # noqa: F401  (registers the brains)
from horcrux import engine
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.belief.bayes import MODES, AdversaryModel, BayesBelief, forgotten_budgets
from horcrux.models import Ally, Attack, HarryRecord, Observation, Search
from horcrux.rules import CLASSIC, STANDARD, AllyRules, RuleSet, Sensor
from horcrux.views import HarryView, harry_view, voldemort_view

SMALL = RuleSet(
    name="small",
    locations=("a", "b", "c", "d", "e", "f"),
    horcruxes=2,
    max_turns=20,
    attacks=5,
    relocations=2,
    decoys=2,
    allies={
        "ron": AllyRules(rest=1),
        "hermione": AllyRules(rest=1, sensor=Sensor(d=0.95, f=0.05)),
        "dumbledore": AllyRules(rest=1, max_uses=2),
    },
)


class BruteForce:
    """Dicts over (frozenset, charges), written independently of the numpy filter."""

    def __init__(self, rules: RuleSet, model: AdversaryModel) -> None:
        self.rules = rules
        self.model = model
        self.n = len(rules.locations)
        sets = list(combinations(range(self.n), rules.horcruxes))
        self.w = {(frozenset(s), rules.relocations): 1.0 / len(sets) for s in sets}
        self.c = [0.0] * self.n
        self.used = [1.0] + [0.0] * rules.decoys
        self.evidence = [0.0] * self.n
        self.k = rules.horcruxes
        self.impossible = False

    def _norm(self) -> None:
        total = sum(self.w.values())
        if total <= 1e-300:  # the model calls this observation impossible
            self.impossible = True
            return
        self.w = {key: v / total for key, v in self.w.items() if v > 0.0}

    def observe(self, obs: Observation) -> None:
        j = self.rules.locations.index(obs.location)
        if obs.kind == "search":
            s = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            pos = obs.outcome == "positive"
            lr = s.d if pos else 1 - s.d
            le = s.f if pos else 1 - s.f
            cj = self.c[j]
            self.w = {
                (sset, r): v * (lr if j in sset else cj * lr + (1 - cj) * le)
                for (sset, r), v in self.w.items()
            }
            self.c[j] = cj * lr / (cj * lr + (1 - cj) * le)
            self.evidence[j] += math.log(lr / le)
        elif obs.kind == "attack":
            cj = self.c[j]
            self.c[j] = 0.0
            self.evidence[j] = 0.0
            if obs.outcome == "destroyed":
                self.w = {(sset - {j}, r): v for (sset, r), v in self.w.items() if j in sset}
                self.k -= 1
            else:
                like = cj if obs.outcome == "decoy" else 1 - cj
                self.w = {(sset, r): v * like for (sset, r), v in self.w.items() if j not in sset}
        else:
            cj = self.c[j]
            if obs.outcome == "horcrux":
                self.w = {(sset, r): v for (sset, r), v in self.w.items() if j in sset}
                self.c[j] = 0.0
            else:
                like = cj if obs.outcome == "decoy" else 1 - cj
                self.w = {(sset, r): v * like for (sset, r), v in self.w.items() if j not in sset}
                self.c[j] = 1.0 if obs.outcome == "decoy" else 0.0
        self._norm()

    def marginal(self) -> list[float]:
        m = [0.0] * self.n
        for (sset, _r), v in self.w.items():
            for i in sset:
                m[i] += v
        return m

    def predict(self, positives: list[int]) -> None:
        model, n, k = self.model, self.n, self.k
        out: dict[tuple[frozenset[int], int], float] = {}
        due = [(j, model.trigger) for j in positives]

        def add(key: tuple[frozenset[int], int], v: float) -> None:
            out[key] = out.get(key, 0.0) + v

        moved_total = 0.0
        for (sset, r), v in self.w.items():
            if r == 0 or k == 0 or model.motion == "static":
                add((sset, r), v)
                continue
            if model.motion == "trigger":
                first = next(((j, p) for j, p in due if j in sset), None)
                if first is None:
                    add((sset, r), v)
                    continue
                p, leaving = first[1], [first[0]]
            else:
                p, leaving = model.hazard, sorted(sset)
            add((sset, r), v * (1 - p))
            moved_total += v * p
            for a in leaving:
                for u in range(n):
                    if u not in sset:
                        share = v * p / len(leaving) / (n - k)
                        add(((sset - {a}) | {u}, r - 1), share)
        if moved_total > 0:  # moves neither plant nor lift a decoy: P(decoy at j) stays
            before = self.marginal()
            decoy = [(1 - before[j]) * self.c[j] for j in range(n)]
            self.w = out
            after = self.marginal()
            self.c = [
                min(1.0, decoy[j] / (1 - after[j])) if 1 - after[j] > 1e-6 else self.c[j]
                for j in range(n)
            ]
        self.w = out
        if model.plant > 0 and len(self.used) > 1:
            left = 1 - self.used[-1]
            cands = sorted(
                (j for j in range(n) if self.evidence[j] > 0), key=lambda j: (-self.evidence[j], j)
            )
            if left > 0 and cands:
                m = self.marginal()
                go = model.plant * max(0.0, 1 - moved_total)
                reach, planted = 1.0, 0.0
                for j in cands:
                    cj = self.c[j]
                    if cj < 1:
                        self.c[j] = cj + (1 - cj) * reach * go * left
                        planted += reach * (1 - m[j]) * (1 - cj) * go
                    reach *= m[j] + (1 - m[j]) * cj
                planted = min(1.0, planted)
                used = self.used
                self.used = [
                    used[i] * (1 - planted if i < len(used) - 1 else 1)
                    + (used[i - 1] * planted if i > 0 else 0)
                    for i in range(len(used))
                ]

    def update(self, record: HarryRecord) -> None:
        positives = []
        for obs in record.observations:
            self.observe(obs)
            if obs.kind == "search" and obs.outcome == "positive":
                positives.append(self.rules.locations.index(obs.location))
        self.predict(positives)


def random_move(view: HarryView, r: random.Random) -> Search | Attack | Ally:
    """A random legal move: mostly searches, some attacks, allies when they are ready."""
    locs = list(view.rules.locations)
    ready = [name for name, status in view.allies.items() if status.available]
    roll = r.random()
    if roll < 0.12:
        return Attack(location=r.choice(locs))
    if ready and roll < 0.45:
        name = r.choice(ready)
        return Ally(ally=name, locations=tuple(r.sample(locs, 2 if name == "ron" else 1)))
    return Search(location=r.choice(locs))


def _random_game(rules: RuleSet, seed: int, voldemort: str) -> list[HarryRecord]:
    """A game with random Harry actions (allies included) against `voldemort`."""
    state, _ = engine.new_game(rules, seed)
    vbrain = VOLDEMORT_BRAINS.create(voldemort, rules)
    r = random.Random(seed)
    while not state.over:
        if state.phase == "harry":
            state, _ = engine.apply(state, random_move(harry_view(state), r))
        else:
            state, _ = engine.apply(state, vbrain.decide(voldemort_view(state), r))
    return list(state.history)


MODELS = [
    AdversaryModel("trigger", "trigger", trigger=1.0, plant=1.0),
    AdversaryModel("trigger-soft", "trigger", trigger=0.6, plant=0.4),
    AdversaryModel("hazard", "hazard", hazard=0.1, plant=0.5),
    AdversaryModel("static", "static", plant=0.0),
    AdversaryModel("static-decoys", "static", plant=0.7),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
@pytest.mark.parametrize("voldemort", ["reference", "random", "passive"])
def test_matches_brute_force(model: AdversaryModel, voldemort: str) -> None:
    for seed in range(4):
        belief = BayesBelief(SMALL, "custom", models=(model,))
        brute = BruteForce(SMALL, model)
        for record in _random_game(SMALL, seed, voldemort):
            belief.update(record)
            brute.update(record)
            assert belief.horcruxes_left == brute.k
            if brute.k == 0 or brute.impossible:
                break
            assert belief.marginals() == pytest.approx(brute.marginal(), abs=1e-9)
            flt = belief._filters
            assert list(flt.c[0]) == pytest.approx(brute.c, abs=1e-9)
            assert list(flt.used[0]) == pytest.approx(brute.used, abs=1e-9)
            for (subset, r), v in brute.w.items():
                row = flt.tab.sets.index(tuple(sorted(subset)))
                assert flt.w[r, 0, row] == pytest.approx(v, abs=1e-9)


def test_mixture_runs_each_model_exactly() -> None:
    models = tuple(MODELS)
    for seed in range(3):
        mixed = BayesBelief(SMALL, "custom", models=models)
        alone = [BayesBelief(SMALL, "custom", models=(m,)) for m in models]
        for record in _random_game(SMALL, seed, "reference"):
            mixed.update(record)
            for b in alone:
                b.update(record)
            for i, b in enumerate(alone):
                assert mixed.model_marginals()[i] == pytest.approx(b.marginals(), abs=1e-12)
            evidence = [b._filters.log_evidence[0] for b in alone]
            assert list(mixed._filters.log_evidence) == pytest.approx(evidence, abs=1e-9)


def test_known_posterior_after_one_search() -> None:
    # one positive at `a`, static model: P(a) = k d / (k d + (N-k) f) scaled per set
    belief = BayesBelief(SMALL, "static")
    obs = Observation(location="a", kind="search", outcome="positive", sensor="harry")
    belief.update(HarryRecord(turn=1, action=Search(location="a"), observations=(obs,)))
    d, f, n, k = 0.8, 0.15, 6, 2
    with_a = math.comb(n - 1, k - 1)
    expected = with_a * d / (with_a * d + (math.comb(n, k) - with_a) * f)
    assert belief.occupancy()["a"] == pytest.approx(expected, abs=1e-12)


def test_mixture_weights_follow_the_evidence() -> None:
    # repeated positives then a Horcrux destroyed there: a trigger-Voldemort would have
    # moved it after the first positive, a static world explains it best
    belief = BayesBelief(CLASSIC, "mixture")
    for turn in range(1, 5):
        obs = Observation(location="hogwarts", kind="search", outcome="positive", sensor="harry")
        belief.update(
            HarryRecord(turn=turn, action=Search(location="hogwarts"), observations=(obs,))
        )
    hit = Observation(location="hogwarts", kind="attack", outcome="destroyed")
    belief.update(HarryRecord(turn=5, action=Attack(location="hogwarts"), observations=(hit,)))
    names = [m.name for m in belief.models]
    weights = dict(zip(names, belief.model_weights(), strict=True))
    assert weights["static"] > weights["trigger"]
    assert sum(weights.values()) == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(sorted(MODES)),
    rules=st.sampled_from([CLASSIC, STANDARD, SMALL]),
    voldemort=st.sampled_from(["reference", "random", "passive"]),
)
def test_occupancy_sums_to_horcruxes_left(
    seed: int, mode: str, rules: RuleSet, voldemort: str
) -> None:
    belief = BayesBelief(rules, mode)
    left = rules.horcruxes
    for record in _random_game(rules, seed, voldemort):
        left -= sum(o.outcome == "destroyed" for o in record.observations)
        belief.update(record)
        occ = belief.occupancy()
        assert belief.horcruxes_left == left
        assert sum(occ.values()) == pytest.approx(left, abs=1e-9)
        assert all(-1e-12 <= v <= 1 + 1e-12 for v in occ.values())
        assert belief.entropy() >= (math.log2(left) - 1e-9 if left else 0.0)
        assert belief.decision_entropy() >= 0.0
        assert belief.history[-1].turn == record.turn


def test_snapshot_round_trip_is_identical_and_small() -> None:
    for seed in range(3):
        belief = BayesBelief(STANDARD, "mixture")
        for record in _random_game(STANDARD, seed, "reference"):
            belief.update(record)
        data = belief.snapshot()
        assert len(data) <= 8192
        again = BayesBelief.restore(STANDARD, data)
        assert (again.marginals() == belief.marginals()).all()
        assert (again.respond_probability() == belief.respond_probability()).all()
        assert again.history == belief.history
        assert again.turn == belief.turn


def test_harry_brains_registered() -> None:
    """Each spec builds the brain it names (class, mode, window), and it plays a legal move."""
    expected = {
        "planner": ("PlannerHarry", "aware-copy", None),
        "planner:aware": ("PlannerHarry", "aware", None),
        "planner:mixture": ("PlannerHarry", "mixture", None),
        "planner:trigger": ("PlannerHarry", "trigger", None),
        "planner-window:8": ("WindowPlannerHarry", "trigger", 8),
        "seed-heuristic": ("SeedHeuristicHarry", None, None),
    }
    state, _ = engine.new_game(CLASSIC, 0)
    for name, (cls, mode, window) in expected.items():
        brain = HARRY_BRAINS.create(name, CLASSIC)
        got = (type(brain).__name__, getattr(brain, "mode", None), getattr(brain, "window", None))
        assert (brain.name, got) == (name, (cls, mode, window))
        after, event = engine.apply(state, brain.decide(harry_view(state), random.Random(0)))
        assert event.type == "harry_moved" and after.phase == "voldemort"


def test_budget_priors_weight_the_charges_and_survive_a_snapshot() -> None:
    positive = Observation(location="a", kind="search", outcome="positive", sensor="harry")
    record = HarryRecord(turn=3, action=Search(location="a"), observations=(positive,))
    spent = BayesBelief(SMALL, "trigger", charge_prior=(1.0, 0.0, 0.0))  # no charge left
    static = BayesBelief(SMALL, "static")
    for belief in (spent, static):
        belief.update(record)
    assert spent.occupancy()["a"] == pytest.approx(static.occupancy()["a"], abs=1e-12)
    unsure = BayesBelief(SMALL, "mixture", charge_prior=(1.0, 1.0, 1.0), decoy_prior=(1, 2, 1))
    unsure.update(record)
    again = BayesBelief.restore(SMALL, unsure.snapshot())
    assert (again.marginals() == unsure.marginals()).all()
    with pytest.raises(ValueError, match="charge_prior"):
        BayesBelief(SMALL, charge_prior=(1.0, 1.0))
    with pytest.raises(ValueError, match="decoy_prior"):
        BayesBelief(SMALL, decoy_prior=(1.0,))


def test_forgotten_budgets_are_each_models_binomial_forecast() -> None:
    models = MODES["mixture"]  # trigger, hazard, static
    charges, decoys = forgotten_budgets(models, CLASSIC, 3, 10)
    assert len(charges) == len(decoys) == len(models)
    for row in (*charges, *decoys):
        assert len(row) == 4 and sum(row) == pytest.approx(1.0) and min(row) >= 0.0
    hit = 3 / 15 * 0.80  # a search finds a real Horcrux: 0.16 a turn
    assert charges[0][3] == pytest.approx((1 - hit) ** 10)  # trigger: none of 10 hit
    assert charges[0][2] == pytest.approx(10 * hit * (1 - hit) ** 9)
    assert charges[1][3] == pytest.approx(0.97**10)  # hazard h = 0.03
    assert charges[2] == (0.0, 0.0, 0.0, 1.0)  # static never moves
    positive = 3 / 15 * 0.80 + 12 / 15 * 0.15  # 0.28
    plant = positive * (1 - hit)  # the trigger model plants whenever it can
    assert decoys[0][0] == pytest.approx((1 - plant) ** 10)
    assert decoys[2] == (1.0, 0.0, 0.0, 0.0)  # static plants nothing
    # more forgotten turns: more of the budgets spent, never fewer
    later_charges, later_decoys = forgotten_budgets(models, CLASSIC, 3, 30)
    assert later_charges[0][0] > charges[0][0] and later_decoys[0][3] > decoys[0][3]
    assert forgotten_budgets(models, CLASSIC, 3, 0)[0][0] == (0.0, 0.0, 0.0, 1.0)


def test_forgotten_turns_build_per_model_priors_and_survive_a_snapshot() -> None:
    positive = Observation(location="hogwarts", kind="search", outcome="positive")
    record = HarryRecord(turn=30, action=Search(location="hogwarts"), observations=(positive,))
    charges, decoys = forgotten_budgets(MODES["mixture"], CLASSIC, 3, 29)
    explicit = BayesBelief(CLASSIC, "mixture", charge_prior=charges, decoy_prior=decoys)
    forgot = BayesBelief(CLASSIC, "mixture", forgotten=29)
    start = BayesBelief(CLASSIC, "mixture")
    for belief in (explicit, forgot, start):
        belief.update(record)
    assert (explicit.marginals() == forgot.marginals()).all()
    # 29 forgotten turns: the charges are probably spent, so the positive sticks
    assert forgot.occupancy()["hogwarts"] > start.occupancy()["hogwarts"] + 0.2
    again = BayesBelief.restore(CLASSIC, forgot.snapshot())
    assert (again.marginals() == forgot.marginals()).all()
    with pytest.raises(ValueError, match="not both"):
        BayesBelief(CLASSIC, forgotten=3, charge_prior=(1.0,) * 4)
    with pytest.raises(ValueError, match=">= 0"):
        BayesBelief(CLASSIC, forgotten=-1)


def test_trust_weighs_the_forecast_against_ignorance() -> None:
    models = MODES["mixture"]
    forecast = forgotten_budgets(models, CLASSIC, 3, 12)
    for trust in (0.0, 0.25, 2 / 3):
        blended = forgotten_budgets(models, CLASSIC, 3, 12, trust)
        for rows, sure in zip(blended, forecast, strict=True):
            for row, f in zip(rows, sure, strict=True):
                assert row == pytest.approx([trust * p + (1 - trust) / 4 for p in f])
    assert forgotten_budgets(models, CLASSIC, 3, 12, 1.0) == forecast
    # nothing forgotten: the start is known, whatever the trust
    assert forgotten_budgets(models, CLASSIC, 3, 0, 0.0)[0][0] == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        forgotten_budgets(models, CLASSIC, 3, 12, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        BayesBelief(CLASSIC, forgotten=3, trust=-0.1)


def test_a_trusting_rebuild_survives_a_snapshot_and_differs_from_the_forecast() -> None:
    positive = Observation(location="hogwarts", kind="search", outcome="positive")
    record = HarryRecord(turn=30, action=Search(location="hogwarts"), observations=(positive,))
    charges, decoys = forgotten_budgets(MODES["trigger"], CLASSIC, 3, 29, 0.5)
    hedged = BayesBelief(CLASSIC, "trigger", forgotten=29, trust=0.5)
    explicit = BayesBelief(CLASSIC, "trigger", charge_prior=charges, decoy_prior=decoys)
    sure = BayesBelief(CLASSIC, "trigger", forgotten=29)
    for belief in (hedged, explicit, sure):
        belief.update(record)
    assert hedged.marginals() == pytest.approx(explicit.marginals(), abs=1e-12)
    # less trust in "the charges are spent": the positive sticks less
    assert hedged.occupancy()["hogwarts"] < sure.occupancy()["hogwarts"] - 0.05
    again = BayesBelief.restore(CLASSIC, hedged.snapshot())
    assert (again.marginals() == hedged.marginals()).all()
    with pytest.raises(ValueError, match="for each of the 3 models"):
        BayesBelief(CLASSIC, "mixture", charge_prior=((1.0,) * 4,) * 2)
    with pytest.raises(ValueError, match="positive sum"):
        BayesBelief(CLASSIC, decoy_prior=(0.0,) * 4)


def test_an_adversary_who_plants_anywhere_raises_every_free_locations_decoy_odds() -> None:
    anywhere = AdversaryModel("early", "hazard", hazard=0.0, plant=0.5, placement="random")
    evidence = AdversaryModel("ref", "trigger", plant=0.5)
    for model in (anywhere, evidence):
        belief = BayesBelief(CLASSIC, models=(model,))
        negative = Observation(location="hogwarts", kind="search", outcome="negative")
        belief.update(
            HarryRecord(turn=1, action=Search(location="hogwarts"), observations=(negative,))
        )
        c = belief._filters.c[0]
        used = belief._filters.used[0]
        if model is anywhere:  # no evidence needed; every location, the same odds
            assert c.min() > 0.0 and np.allclose(c[1:], c[1])
            assert used[1] == pytest.approx(0.5)  # a decoy with probability `plant`
        else:  # the reference's rule needs positive public evidence: none yet
            assert c.max() == 0.0 and used[0] == 1.0
    robust = BayesBelief(CLASSIC, "robust")
    robust.update(HarryRecord(turn=1, action=Search(location="hogwarts"), observations=(negative,)))
    again = BayesBelief.restore(CLASSIC, robust.snapshot())
    assert (again.marginals() == robust.marginals()).all()
    assert [m.placement for m in again.models][-1] == "random"


def test_array_sum_adds_like_numpys_sum() -> None:
    """The decoy step sums short rows in Python floats: `array_sum` must give numpy's
    double bit for bit (sequential below 8 values, 8 partial sums up to 128, numpy's
    own sum beyond), where a plain left-to-right sum does not."""
    from horcrux.belief.bayes import array_sum

    rng = np.random.default_rng(7)
    plain_differs = 0
    for n in range(0, 300):
        for _ in range(3 if n < 140 else 1):
            values = (rng.random(n) * rng.choice([1e-9, 1.0, 1e6], n)).tolist()
            assert array_sum(values) == float(np.array(values, dtype=np.float64).sum()), n
            left = 0.0
            for x in values:
                left += x
            plain_differs += left != array_sum(values)
    assert plain_differs > 100  # the order matters: a naive sum would not pass


def test_horcrux_information_is_the_h2_formula_bit_for_bit() -> None:
    """`horcrux_information` computes its binary entropies elementwise, with one numpy
    call for every logarithm: the same doubles as the formula on the array `h2`, with
    c_j = P(decoy at j) / (1 - m_j) (0 where m_j = 1), g_j = c_j d + (1 - c_j) f."""
    from horcrux.belief.information import binary_entropy, h2

    rng = np.random.default_rng(11)
    sensor = CLASSIC.sensor
    d, f = sensor.d, sensor.f
    for trial in range(300):
        m = rng.random(15) ** rng.choice([1.0, 4.0])
        m[rng.integers(15)] = (0.0, 1.0, 1e-15, 1 - 1e-15)[trial % 4]
        decoy = (1.0 - m) * rng.random(15) * rng.choice([0.0, 0.2, 1.0])
        belief = BayesBelief(CLASSIC)
        belief._cache = (m, m + decoy, decoy)  # the map the information reads
        c = np.array(
            [dj / (1.0 - mj) if mj < 1.0 else 0.0 for mj, dj in zip(m, decoy, strict=True)]
        )
        g = c * d + (1.0 - c) * f
        want = h2(m * d + (1.0 - m) * g) - m * binary_entropy(d) - (1.0 - m) * h2(g)
        assert belief.horcrux_information(sensor).tobytes() == want.tobytes()


class _NeverSpent(set[int]):
    """A `_Filters._spent` that never records a model: every move is computed in full."""

    def add(self, element: int) -> None:
        pass


def test_spent_belief_models_are_skipped_without_changing_a_bit() -> None:
    """A belief model with no charge left is skipped (its move would move nothing): the
    filter is bit for bit the one that computes every move, previews included, and the
    shortcut does fire in these games."""
    fired = 0
    for seed in range(6):
        planner = HARRY_BRAINS.create("planner", CLASSIC)
        vold = VOLDEMORT_BRAINS.create("reference", CLASSIC)
        state, _ = engine.new_game(CLASSIC, seed)
        quick, full = BayesBelief(CLASSIC), BayesBelief(CLASSIC)
        full._filters._spent = _NeverSpent()
        while not state.over:
            if state.phase == "harry":
                move = planner.decide(harry_view(state), random.Random(seed * 1000 + state.turn))
                state, _ = engine.apply(state, move)
                quick.update(state.history[-1])
                full.update(state.history[-1])
                a, b = quick._filters, full._filters
                assert a.w.tobytes() == b.w.tobytes()
                assert a.c.tobytes() == b.c.tobytes() and a.used.tobytes() == b.used.tobytes()
                assert quick.marginals().tobytes() == full.marginals().tobytes()
                spent = set(a._spent)
                loc = CLASSIC.locations[state.turn % len(CLASSIC.locations)]
                assert quick.preview(loc, True).tobytes() == full.preview(loc, True).tobytes()
                assert a._spent == spent  # a lookahead leaves the filter's record alone
                fired += bool(spent)
            else:
                state, _ = engine.apply(state, vold.decide(voldemort_view(state), random.Random(0)))
    assert fired > 0


def _quiet(belief: BayesBelief, turns: range) -> list[float]:
    """m at location 0 after each of `turns` with no observation (Harry learns nothing)."""
    out = []
    for turn in turns:
        belief.update_observations(turn, ())
        out.append(float(belief.marginals()[0]))
    return out
