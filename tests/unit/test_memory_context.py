"""Layer 1 working memory: the context, its three renderings and the token estimate."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from horcrux.belief.base import BeliefMap, BeliefPoint
from horcrux.memory import (
    COMPRESSED_BUDGET,
    COMPRESSED_FACTS_BUDGET,
    COMPRESSED_TARGET_MEDIAN,
    MEMORY_LINE_MAX_CHARS,
    AgentContext,
    build_context,
    calibrate,
    compressed_facts,
    estimate_tokens,
    narrative_lines,
    render_compressed,
    render_full,
    render_narrative,
    render_tier,
    resolve_location,
)
from horcrux.memory.gate import gate_measure
from horcrux.models import Ally, Attack, GameState, HarryMoved, HarryRecord, Observation, Search
from horcrux.rules import CLASSIC, LOCATIONS, STANDARD, RuleSet
from horcrux.views import AllyStatus, HarryView, harry_view
from horcrux_tools.sim import play_game

ARTICLE_PROMPT = (
    "Horcrux likely at: Hogwarts (34%), Azkaban (22%), Ministry (18%).\n"
    "Entropy: 1.4 bits (medium confidence). Budget: 3 actions remaining.\n"
    "Ron available in 2 turns. Last signal: negative @ Godric's Hollow."
)


# ---------------------------------------------------------------- a conforming test map
class TinyMap:
    """A small `BeliefMap`: likelihood weights per location, occupancy normalised to k.

    Not the product's filter: independent per-location odds with a mild drift toward
    uniform (Voldemort may have moved), enough to give contexts realistic numbers.
    """

    name = "tiny"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._k = rules.horcruxes
        self.weights = dict.fromkeys(rules.locations, 1.0)
        self._history: list[BeliefPoint] = []

    @property
    def horcruxes_left(self) -> int:
        return self._k

    def update(self, record: HarryRecord) -> None:
        for obs in record.observations:
            if obs.kind == "search":
                s = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
                positive = obs.outcome == "positive"
                self.weights[obs.location] *= s.d / s.f if positive else (1 - s.d) / (1 - s.f)
            elif obs.kind == "attack":
                self._k -= obs.outcome == "destroyed"
                self.weights[obs.location] = 0.0
            else:
                self.weights[obs.location] = 50.0 if obs.outcome == "horcrux" else 0.0
        for loc, w in self.weights.items():
            self.weights[loc] = 0.97 * w + 0.03
        self._history.append(
            BeliefPoint(turn=record.turn, entropy=self.entropy(), top=tuple(self.top()))
        )

    def occupancy(self) -> dict[str, float]:
        occ = dict.fromkeys(self.weights, 0.0)
        free = {loc for loc, w in self.weights.items() if w > 0}
        mass = float(self._k)
        while free and mass > 1e-12:  # water-filling: cap every occupancy at 1
            total = sum(self.weights[loc] for loc in free)
            capped = {loc for loc in free if mass * self.weights[loc] / total >= 1.0}
            if not capped:
                for loc in free:
                    occ[loc] = mass * self.weights[loc] / total
                break
            for loc in capped:
                occ[loc] = 1.0
                mass -= 1.0
            free -= capped
        return occ

    def entropy(self) -> float:
        occ = self.occupancy()
        total = sum(occ.values())
        if total <= 0:
            return 0.0
        return -sum(p / total * math.log2(p / total) for p in occ.values() if p > 0)

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        return sorted(self.occupancy().items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def snapshot(self) -> bytes:
        return repr((self._k, sorted(self.weights.items()))).encode()

    @property
    def history(self) -> list[BeliefPoint]:
        return list(self._history)


def _as_belief_map(m: TinyMap) -> BeliefMap:
    return m  # checked by mypy when the tests are type-checked: TinyMap conforms


def _bayes_factory() -> Callable[[RuleSet], BeliefMap]:
    from horcrux.belief import bayes

    factory: Callable[[RuleSet], BeliefMap] = bayes.BayesBelief
    return factory


def compressed_tokens_over_games(make_map: Callable[[RuleSet], BeliefMap]) -> list[int]:
    """Estimated tokens of the compressed prompt at every decision of 24 seeded games."""
    tokens: list[int] = []
    for rules in (STANDARD, CLASSIC):
        for seed in range(6):
            for harry in ("naive", "oracle"):
                belief = make_map(rules)

                def on_step(state: GameState, event: Any, belief: BeliefMap = belief) -> None:
                    if isinstance(event, HarryMoved):
                        belief.update(
                            HarryRecord(
                                turn=event.turn,
                                action=event.action,
                                observations=event.observations,
                            )
                        )
                    if state.phase == "harry" and not state.over:
                        ctx = build_context(harry_view(state), belief)
                        tokens.append(estimate_tokens(render_compressed(ctx)))

                play_game(rules, 100 + seed, harry, "reference", on_step=on_step)
    return tokens


def views_of_game(rules: RuleSet, seed: int, harry: str = "naive") -> dict[int, HarryView]:
    """Harry's view at each turn of a real game (before he acts), by turn."""
    views: dict[int, HarryView] = {}

    def on_step(state: GameState, event: Any) -> None:
        if state.phase == "harry" and not state.over:
            views[state.turn] = harry_view(state)

    play_game(rules, seed, harry, "reference", on_step=on_step)
    return views


def map_after(view: HarryView) -> TinyMap:
    belief = TinyMap(view.rules)
    for record in view.history:
        belief.update(record)
    return belief


# ---------------------------------------------------------------- hand-made histories
def _search(turn: int, loc: str, outcome: str) -> HarryRecord:
    return HarryRecord(
        turn=turn,
        action=Search(location=loc),
        observations=(Observation(location=loc, kind="search", outcome=outcome, sensor="harry"),),
    )


def realistic_history(turns: int) -> tuple[HarryRecord, ...]:
    """Harry's first `turns` turns: searches, Ron, Hermione, Dumbledore and attacks."""
    records: list[HarryRecord] = []
    for t in range(1, turns + 1):
        a, b = LOCATIONS[t % 15], LOCATIONS[(3 * t + 1) % 15]
        if t % 7 == 3:
            records.append(
                HarryRecord(
                    turn=t,
                    action=Ally(ally="ron", locations=(a, b)),
                    observations=(
                        Observation(location=a, kind="search", outcome="positive", sensor="harry"),
                        Observation(location=b, kind="search", outcome="negative", sensor="harry"),
                    ),
                )
            )
        elif t % 7 == 5:
            records.append(
                HarryRecord(
                    turn=t,
                    action=Ally(ally="hermione", locations=(a,)),
                    observations=(
                        Observation(
                            location=a, kind="search", outcome="negative", sensor="hermione"
                        ),
                    ),
                )
            )
        elif t == 12:
            records.append(
                HarryRecord(
                    turn=t,
                    action=Ally(ally="dumbledore", locations=(a,)),
                    observations=(Observation(location=a, kind="reveal", outcome="empty"),),
                )
            )
        elif t % 9 == 0:
            records.append(
                HarryRecord(
                    turn=t,
                    action=Attack(location=a),
                    observations=(Observation(location=a, kind="attack", outcome="decoy"),),
                )
            )
        else:
            records.append(_search(t, a, "positive" if t % 4 == 0 else "negative"))
    return tuple(records)


def make_view(history: tuple[HarryRecord, ...], rules: RuleSet = STANDARD) -> HarryView:
    turn = len(history) + 1
    allies = {
        "ron": AllyStatus(rest=0, uses_left=None, available=True),
        "hermione": AllyStatus(rest=2, uses_left=None, available=False),
        "dumbledore": AllyStatus(rest=5, uses_left=1, available=False),
    }
    return HarryView(
        rules=rules,
        turn=turn,
        phase="harry",
        attacks_left=4,
        horcruxes_destroyed=1,
        horcruxes_left=2,
        allies={k: v for k, v in allies.items() if k in rules.allies},
        history=history,
    )


def worst_context(memory_line: str | None = None) -> AgentContext:
    """The longest facts this format can have on the GAME.md board."""
    return AgentContext(
        turn=48,
        turns_left=3,
        attacks_left=7,
        horcruxes_left=3,
        allies_ready=("hermione",),
        ally_rests={"ron": 4, "dumbledore": 10},
        top=(("grimmauld-place", 0.99), ("little-hangleton", 0.88), ("knockturn-alley", 0.77)),
        entropy=3.91,
        last_signal="positive @ ministry-of-magic, negative @ little-hangleton",
        memory_line=memory_line,
    )


SAMPLE = AgentContext(
    turn=25,
    turns_left=26,
    attacks_left=3,
    horcruxes_left=3,
    allies_ready=("ron",),
    ally_rests={"dumbledore": 2},
    top=(("hogwarts", 0.3412), ("azkaban", 0.2249), ("ministry-of-magic", 0.18)),
    entropy=1.44,
    last_signal="negative @ godrics-hollow",
)


# ---------------------------------------------------------------- the context
def test_context_rounds_and_is_frozen() -> None:
    assert SAMPLE.entropy == 1.4
    assert SAMPLE.top == (("hogwarts", 0.34), ("azkaban", 0.22), ("ministry-of-magic", 0.18))
    with pytest.raises(ValidationError):
        SAMPLE.turn = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        AgentContext(turn=1, turns_left=50, attacks_left=7, horcruxes_left=3, entropy=-1.0)


def test_build_context_reads_view_and_map() -> None:
    history = realistic_history(24)  # turn 24 is a Ron turn (24 % 7 == 3)
    view = make_view(history)
    belief = map_after(view)
    ctx = build_context(view, belief)
    assert (ctx.turn, ctx.turns_left, ctx.attacks_left, ctx.horcruxes_left) == (25, 26, 4, 2)
    assert ctx.allies_ready == ("ron",)
    assert ctx.ally_rests == {"hermione": 2, "dumbledore": 5}
    assert [loc for loc, _ in ctx.top] == [loc for loc, _ in belief.top(3)]
    assert all(p == round(p, 2) for _, p in ctx.top)
    assert ctx.entropy == round(gate_measure(belief.occupancy(), belief.horcruxes_left), 1)
    a, b = LOCATIONS[24 % 15], LOCATIONS[(3 * 24 + 1) % 15]
    assert ctx.last_signal == f"positive @ {a}, negative @ {b}"
    assert build_context(view, belief) == ctx  # pure: same inputs, same context


def test_first_turn_context_has_no_signal() -> None:
    view = make_view(())
    ctx = build_context(view, TinyMap(STANDARD))
    assert ctx.last_signal is None
    assert "Last: none." in render_compressed(ctx)


def test_tiny_map_conforms() -> None:
    belief = _as_belief_map(TinyMap(CLASSIC))
    assert math.isclose(sum(belief.occupancy().values()), 3.0)
    assert math.isclose(belief.entropy(), math.log2(15))


# ---------------------------------------------------------------- the compressed prompt
def test_compressed_is_deterministic_and_carries_the_facts() -> None:
    text = render_compressed(SAMPLE)
    assert text == render_compressed(SAMPLE.model_copy())
    assert text == render_compressed(AgentContext(**SAMPLE.model_dump()))
    for fact in ("Hogwarts 34%", "Azkaban 22%", "Ministry 18%", "Entropy 1.4 bits"):
        assert fact in text
    assert "Last: negative @ Godrics." in text
    assert "Turn 25/50" in text and "3 attacks" in text and "3 Horcruxes left" in text
    assert "Allies ready: ron" in text and "dumbledore 2" in text
    assert estimate_tokens(text) <= COMPRESSED_TARGET_MEDIAN


def test_compressed_can_name_slugs() -> None:
    text = render_compressed(SAMPLE, names="slug")
    assert "ministry-of-magic 18%" in text and "negative @ godrics-hollow" in text


def test_compressed_without_allies_omits_the_line() -> None:
    ctx = SAMPLE.model_copy(update={"allies_ready": (), "ally_rests": {}})
    assert "Allies" not in render_compressed(ctx)
    assert len(render_compressed(ctx).splitlines()) == 3


def test_worst_case_facts_within_budget() -> None:
    assert estimate_tokens(compressed_facts(worst_context())) <= COMPRESSED_FACTS_BUDGET


def test_compressed_tokens_over_real_games_tiny_map() -> None:
    tokens = compressed_tokens_over_games(TinyMap)
    assert len(tokens) > 500
    assert statistics.median(tokens) <= COMPRESSED_TARGET_MEDIAN
    assert max(tokens) <= COMPRESSED_FACTS_BUDGET


def test_compressed_tokens_over_real_games_bayes_map() -> None:
    tokens = compressed_tokens_over_games(_bayes_factory())
    assert statistics.median(tokens) <= COMPRESSED_TARGET_MEDIAN
    assert max(tokens) <= COMPRESSED_FACTS_BUDGET


# ---------------------------------------------------------------- the memory line
def test_memory_line_is_truncated_never_the_facts() -> None:
    long_line = " ".join(f"lesson{i} Voldemort relocates after positives" for i in range(40))
    ctx = worst_context(memory_line=long_line)
    assert ctx.memory_line is not None and len(ctx.memory_line) <= MEMORY_LINE_MAX_CHARS
    text = render_compressed(ctx)
    facts = compressed_facts(ctx)
    assert text.startswith(facts + "\n")
    assert estimate_tokens(text) <= COMPRESSED_BUDGET
    note = text[len(facts) + 1 :]
    assert note.startswith("Note from past games (data): lesson0")
    assert note.endswith("...")
    assert len(note) < len("Note from past games (data): " + long_line)


def test_short_memory_line_kept_whole_and_flattened() -> None:
    ctx = AgentContext(
        **{**SAMPLE.model_dump(), "memory_line": "Decoys\nsit on\x00 strong  positives."}
    )
    assert ctx.memory_line == "Decoys sit on strong positives."
    text = render_compressed(ctx)
    assert text.splitlines()[-1] == "Note from past games (data): Decoys sit on strong positives."
    assert text.startswith(render_compressed(SAMPLE))
    assert len(text.splitlines()) == len(render_compressed(SAMPLE).splitlines()) + 1


def test_memory_line_dropped_when_no_room() -> None:
    ctx = worst_context(memory_line="anything at all")
    facts = compressed_facts(ctx)
    assert render_compressed(ctx, budget=estimate_tokens(facts)) == facts
    assert render_compressed(ctx, budget=1) == facts  # facts come whole, over budget or not


def test_blank_memory_line_is_none() -> None:
    assert AgentContext(**{**SAMPLE.model_dump(), "memory_line": " \n\t "}).memory_line is None


# ---------------------------------------------------------------- full and narrative
def test_full_context_200_to_500_tokens_from_turn_25() -> None:
    for turns in (24, 30, 40, 49):
        view = make_view(realistic_history(turns))
        text = render_full(view, map_after(view))
        assert 200 <= estimate_tokens(text) <= 500, (turns, estimate_tokens(text))
        assert "Recent signals (last 12" in text
        assert f"T{turns}:" in text and "Rules:" in text and "Ally uses left: dumbledore 1" in text
    view = make_view(realistic_history(30), CLASSIC)
    assert 200 <= estimate_tokens(render_full(view, map_after(view))) <= 500


def test_full_context_over_a_real_game() -> None:
    views = views_of_game(STANDARD, 7)
    for turn in (25, 35, 45):
        view = views[turn]
        assert 200 <= estimate_tokens(render_full(view, map_after(view))) <= 500


def test_narrative_one_line_per_observation() -> None:
    history = realistic_history(30)
    lines = narrative_lines(history)
    assert len(lines) == sum(len(r.observations) for r in history)
    assert lines[0] == f"Turn 1: Harry searched {'Hogsmeade'} -> negative"
    assert "Turn 3: Ron searched" in lines[2]
    assert lines[-1].startswith("Turn 30: ")
    text = render_narrative(make_view(history))
    assert "Game log:" in text.splitlines() and text.splitlines()[-1].startswith("Now: turn 31")
    assert text.startswith("You are Harry. Rules:")
    assert "Turn 3: Ron searched" in text and "After turn 30: " in text


def test_narrative_grows_and_compressed_does_not() -> None:
    views = views_of_game(STANDARD, 3)
    narrative = {t: estimate_tokens(render_narrative(views[t])) for t in (5, 20, 40)}
    compressed = {
        t: estimate_tokens(render_compressed(build_context(views[t], map_after(views[t]))))
        for t in (5, 20, 40)
    }
    assert narrative[5] < narrative[20] < narrative[40]
    assert narrative[40] > 5 * max(compressed.values())
    assert max(compressed.values()) - min(compressed.values()) <= 12
    assert all(c <= COMPRESSED_FACTS_BUDGET for c in compressed.values())


def test_render_tier_dispatch() -> None:
    view = make_view(realistic_history(26))
    belief = map_after(view)
    assert render_tier("zero", view, belief) == ""
    assert render_tier("compressed", view, belief) == render_compressed(build_context(view, belief))
    assert render_tier("full", view, belief) == render_full(view, belief)
    assert render_tier("narrative", view, belief) == render_narrative(view)


def test_resolve_location() -> None:
    assert resolve_location("Ministry") == "ministry-of-magic"
    assert resolve_location("ministry-of-magic") == "ministry-of-magic"
    assert resolve_location("Ministry of Magic") == "ministry-of-magic"
    assert resolve_location("Godric's Hollow") == "godrics-hollow"
    assert resolve_location(" godrics ") == "godrics-hollow"
    assert resolve_location("Narnia") is None
    assert resolve_location("") is None
    assert resolve_location("Hogwarts", locations=("azkaban",)) is None


# ---------------------------------------------------------------- the token estimate
@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("", 0, 0),
        ("a", 1, 1),
        ("The quick brown fox jumps over the lazy dog.", 9, 12),
        ("12345678", 3, 3),
        ("negative @ godrics-hollow", 4, 8),
        (ARTICLE_PROMPT, 48, 66),  # the article counts it as 55
    ],
)
def test_estimate_known_strings(text: str, low: int, high: int) -> None:
    assert low <= estimate_tokens(text) <= high


def test_estimate_monotone_in_length() -> None:
    # every prefix (quadratic): 8 turns hold every character class the narrative has, more
    # turns only repeat them
    text = render_narrative(make_view(realistic_history(8))) + " (34%), ☃ é \n\n x"
    counts = [estimate_tokens(text[:i]) for i in range(len(text) + 1)]
    assert all(a <= b for a, b in itertools.pairwise(counts))
    assert estimate_tokens(ARTICLE_PROMPT * 4) >= 4 * estimate_tokens(ARTICLE_PROMPT) - 4


def test_estimate_scale() -> None:
    base = estimate_tokens(ARTICLE_PROMPT)
    assert estimate_tokens(ARTICLE_PROMPT, scale=1.5) == math.ceil(base * 1.5)
    assert estimate_tokens("a", scale=0.01) == 1


def test_calibrate_offline_without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert calibrate(["hello world"]) is None
    with pytest.raises(ValueError, match="non-empty"):
        calibrate([""])


def test_calibrate_with_a_fake_client() -> None:
    calls: list[dict[str, Any]] = []

    def count_tokens(**kwargs: Any) -> SimpleNamespace:
        calls.append(kwargs)
        text = kwargs["messages"][0]["content"]
        return SimpleNamespace(input_tokens=7 + 2 * estimate_tokens(text))  # 2x + envelope

    client = SimpleNamespace(messages=SimpleNamespace(count_tokens=count_tokens))
    result = calibrate([ARTICLE_PROMPT, "The quick brown fox."], model="m", client=client)
    assert result is not None
    assert result.envelope_tokens == 8  # count(".") - 1 = 7 + 2 - 1
    assert math.isclose(result.scale, 2.0, rel_tol=0.05)
    assert all(c["model"] == "m" and c["messages"][0]["role"] == "user" for c in calls)
