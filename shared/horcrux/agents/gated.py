"""The three-layer design: an entropy gate in front of a zero-token planner and an LLM.

Every decision starts in Layer 2: the planner folds Harry's new observations into its
exact Bayes map. A move the planner's rule forces whatever the map says (no more turns
than Horcruxes left, or the endgame: the attacks left cover every turn left) is a zero-tier
decision at once, unless a tier is pinned (`force`). Otherwise the gate
(`horcrux.memory.gate`) measures how unsure that map is and picks the memory tier the
decision deserves:

- `zero`: the planner decides, no token spent (with probability epsilon the gate
  explores instead: a search of a location other than the most likely one);
- `compressed` / `full`: the LLM decides from the tier's context (the ~55-token L1
  working memory, or the 200-500-token richer one), the planner's move being the
  fallback for any failure (illegal, unparsable, timeout, 429, 5xx).

Without an Anthropic key (or an injected client) the gate still routes and renders
every context, so the tier shares and token counts are real, but the planner decides in
every tier; each such decision is recorded with fallback reason `no_key` and `stats()`
says so in its notes. The LLM consumes memory, never produces it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from horcrux.agents.base import HARRY_BRAINS, BrainOptions, HarryMove
from horcrux.agents.llm import LLMHarry, llm_harry
from horcrux.agents.llm_client import Deadline
from horcrux.agents.llm_config import LLMConfig, parse_llm_param
from horcrux.agents.planner import PlannerHarry, forced_attack
from horcrux.decisions import DecisionRecord, Tier
from horcrux.memory.gate import DecisionLog, EntropyGate, GateConfig, exploration_target
from horcrux.memory.tokens import estimate_tokens
from horcrux.memory.working import WorkingMemory
from horcrux.models import Search
from horcrux.rules import RuleSet
from horcrux.settings import llm_settings
from horcrux.views import HarryView

if TYPE_CHECKING:
    from horcrux.belief.bayes import BayesBelief

__all__ = ["NO_KEY_NOTE", "GatedHarry", "WorkingMemory", "make_gated"]

NO_KEY_NOTE = "no ANTHROPIC_API_KEY: the planner decided in every tier (contexts still rendered)"


class GatedHarry:
    """Gate -> planner (zero tier) or LLM with the tier's context (other tiers)."""

    name = "gated"

    def __init__(
        self,
        rules: RuleSet,
        *,
        planner: PlannerHarry | None = None,
        gate: EntropyGate | None = None,
        llm: LLMHarry | None = None,
        memory_line: str | None = None,
    ) -> None:
        self.rules = rules
        self.planner = planner or PlannerHarry(rules)
        self.gate = gate or EntropyGate.from_env()
        self.memory = WorkingMemory(self.planner, "compressed", memory_line)
        self.llm = llm
        if llm is not None:
            llm.context_provider = self.memory
        self.decisions: list[DecisionRecord] = []

    @property
    def belief(self) -> BayesBelief:
        return self.planner.belief

    def adopt_memory_line(self, line: str) -> None:
        """Carry cross-game memory's line in the L1 context (`MemoryLineReader`)."""
        self.memory.memory_line = line

    def memory_planner(self) -> PlannerHarry | None:
        """Cross-game memory plays through the planner inside (`MemoryReader`)."""
        return self.planner.memory_planner()

    def decide(
        self, view: HarryView, rng: random.Random, *, deadline_s: Deadline | None = None
    ) -> HarryMove:
        start = time.perf_counter()
        self.planner.sync(view)
        if self.gate.config.force is None and forced_attack(view, self.planner.params):
            # the planner's rule decides whatever the map says: no context could change
            # the move, so it deserves no tokens (and no exploration)
            self._record(view.turn, "zero", "planner", start)
            return self.planner.choose(view).move
        belief = self.planner.belief
        occupancy = belief.occupancy()
        route = self.gate.route(occupancy, belief.horcruxes_left, rng)
        if route.tier == "zero":
            if route.explore:
                move: HarryMove = Search(location=exploration_target(occupancy, rng))
                source: Any = "explore"
            else:
                move, source = self.planner.choose(view).move, "planner"
            self._record(view.turn, "zero", source, start)
            return move
        self.memory.tier = route.tier
        if self.llm is None:
            prompt = self.memory(view)
            move = self.planner.choose(view).move
            self._record(
                view.turn,
                route.tier,
                "planner",
                start,
                context_tokens=estimate_tokens(prompt),
                no_key=True,
            )
            return move
        self.llm.tier = route.tier
        move = self.llm.decide(view, rng, deadline_s=deadline_s)
        self.decisions.append(self.llm.decisions[-1])
        return move

    def _record(
        self,
        turn: int,
        tier: Tier,
        source: Any,
        start: float,
        *,
        context_tokens: int = 0,
        no_key: bool = False,
    ) -> None:
        self.decisions.append(
            DecisionRecord(
                turn=turn,
                tier=tier,
                source=source,
                context_tokens=context_tokens,
                latency_ms=(time.perf_counter() - start) * 1000.0,
                fallback_reason="no_key" if no_key else None,
            )
        )

    def stats(self) -> dict[str, Any]:
        summary = DecisionLog(self.decisions).summary()
        notes = [] if self.llm is not None else [NO_KEY_NOTE]
        return {"brain": self.name, "llm": self.llm is not None, "notes": notes, **summary}


def _has_llm(options: BrainOptions) -> bool:
    """Whether the upper tiers can call an LLM: a keyless backend (`gated:local`), an
    injected client, or a key (in the settings or `ANTHROPIC_API_KEY`)."""
    s = options.settings
    config = s.get("config")
    if options.param:
        config = parse_llm_param(options.param)
    if isinstance(config, LLMConfig) and not config.backend.requires_key:
        return True
    return bool(s.get("client") or s.get("api_key") or llm_settings().api_key)


def make_gated(
    options: BrainOptions, *, llm_factory: Callable[[BrainOptions], LLMHarry] | None = None
) -> GatedHarry:
    """A gated Harry; with a key (or an injected client) its upper tiers call the LLM."""
    planner = PlannerHarry(options.rules)
    gate = options.settings.get("gate")
    if gate is not None and not isinstance(gate, EntropyGate):
        gate = EntropyGate(GateConfig.model_validate(gate))
    llm: LLMHarry | None = None
    if _has_llm(options):
        settings = {**options.settings, "fallback": planner}
        llm_options = BrainOptions(options.rules, options.param, options.truth, settings)
        factory = llm_factory or llm_harry
        llm = factory(llm_options)
    return GatedHarry(
        options.rules,
        planner=planner,
        gate=gate,
        llm=llm,
        memory_line=options.settings.get("memory_line"),
    )


@HARRY_BRAINS.register(
    "gated",
    description="entropy gate: planner when sure, LLM with L1 memory otherwise (gated:local)",
)
def _gated(options: BrainOptions) -> GatedHarry:
    return make_gated(options)
