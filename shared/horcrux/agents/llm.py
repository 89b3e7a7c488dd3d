"""The `llm` brains: Harry and Voldemort played by Claude through the Messages API.

Each decision is one `messages.create` call with a single tool, `make_move`, whose input
schema is the seat's legal action set this turn (`horcrux.agents.legal`), and
`tool_choice` forcing that tool. The prompt is whatever the injected context provider
renders from the view (default: a short deterministic rendering, `llm_prompts`; the L1
compressor of `horcrux.memory` plugs in the same way). A reply that is unparsable or
illegal, a timeout, a 429 or a 5xx all fall back to an injected local brain, and every
decision is recorded as a `DecisionRecord` (tokens, cost, latency, fallback reason).

Deadlines: the caller gives `deadline_s`, the time this decision may take in all (for a
Lambda, its remaining time minus its own margin), as a number or a callable read at each
decision; `LLMConfig.timeout_margin_s` is kept for the fallback, and the rest is the HTTP
budget of `LLMClient.ask`.

The parts live by job: the configuration and backends in `horcrux.agents.llm_config`, the
default prompts in `horcrux.agents.llm_prompts`, the HTTP client with its retries in
`horcrux.agents.llm_client`; this module holds the brains and registers them.

Fallback reasons: a reply without a make_move tool_use or with a malformed input or body
-> "unparsable"; a move the engine refuses -> "illegal"; the client's timeout or no time
left -> "timeout"; 429 -> "rate_limited"; 5xx -> "server_error"; connection errors ->
"connection"; other 4xx (logged) -> "client_error"; 401/403 (key refused) -> "no_key".
A reply's tokens are counted even when its move is not played.

`import horcrux.agents.llm` does not import `anthropic` (Lambda cold start): the SDK is
imported when the first client is built, lazily, once per brain (`llm_client`).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from horcrux.agents.base import (
    HARRY_BRAINS,
    VOLDEMORT_BRAINS,
    BrainOptions,
    HarryBrain,
    HarryMove,
    Registry,
    VoldemortBrain,
    VoldemortMove,
)
from horcrux.agents.candidates import (
    candidates_tool,
    move_label,
    parse_candidate,
)
from horcrux.agents.contract import Planner
from horcrux.agents.legal import (
    UnparsableMove,
    harry_tool_schema,
    parse_harry_move,
    parse_voldemort_move,
    voldemort_tool_schema,
)
from horcrux.agents.llm_client import MIN_ATTEMPT_S, Deadline, LLMClient, Reply, resolve_deadline
from horcrux.agents.llm_config import LLMConfig, parse_llm_param
from horcrux.agents.llm_prompts import (
    HarryContextProvider,
    VoldemortContextProvider,
    harry_short_system_prompt,
    harry_system_prompt,
    render_harry_view,
    render_voldemort_view,
    voldemort_system_prompt,
)
from horcrux.decisions import DecisionRecord, DecisionTrace, Tier
from horcrux.errors import HorcruxError, IllegalAction
from horcrux.memory.tokens import estimate_tokens
from horcrux.rules import RuleSet
from horcrux.views import HarryView, VoldemortView

if TYPE_CHECKING:
    from anthropic import Anthropic

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the brains
V = TypeVar("V", bound=HarryView)
M = TypeVar("M", HarryMove, VoldemortMove)


@dataclass(frozen=True)
class _Seat(Generic[V, M]):
    """What differs between the two seats' LLM brains, besides fallback and context."""

    system_prompt: Callable[[RuleSet], str]
    tool_schema: Callable[[V], dict[str, Any]]
    parse: Callable[[object, V], M]
    refusal_hint: str


@dataclass(frozen=True)
class _Tool(Generic[M]):
    """One decision's tool: its schema, how a reply is parsed, and what it offered."""

    schema: dict[str, Any]
    parse: Callable[[object], M]
    kind: Literal["legal", "candidates"] = "legal"
    offered: tuple[str, ...] = ()
    system: str | None = None  # None: the brain's system prompt
    baseline: M | None = None  # the planner's move in the same state, if known


class _LLMBrain(Generic[V, M]):
    """What both seats share: the call, validation, fallback and the decision records.

    A subclass sets `_seat`, and in its `__init__` sets `fallback`, `_fallback` (the
    fallback's `decide`) and `context_provider` after calling `super().__init__`.
    """

    name = "llm"
    _seat: _Seat[V, M]
    _fallback: Callable[[V, random.Random], M]
    context_provider: Callable[[V], str]

    def __init__(
        self,
        rules: RuleSet,
        config: LLMConfig | None,
        client: Anthropic | None,
        base_url: str | None,
        api_key: str | None,
        deadline_s: Deadline | None,
        tier: Tier,
        on_decision: Callable[[DecisionRecord], None] | None = None,
    ) -> None:
        """Client first (a missing key is refused before any fallback is made), then the rest.

        `on_decision` is called with each decision's record (a terminal client shows the
        traces live with it)."""
        self.llm = LLMClient(
            config or LLMConfig(),
            client=client,
            base_url=base_url,
            api_key=api_key,
            refusal_hint=self._seat.refusal_hint,
        )
        self.config = self.llm.config
        self.rules = rules
        self.system = self._seat.system_prompt(rules)
        self.deadline_s = deadline_s
        self.tier = tier
        self.on_decision = on_decision
        self.decisions: list[DecisionRecord] = []

    def _tool(self, view: V) -> _Tool[M]:
        """The tool of this decision: by default, every legal move (raises if not our turn)."""
        schema = self._seat.tool_schema(view)
        return _Tool(schema, lambda raw: self._seat.parse(raw, view))

    def _decide(self, view: V, rng: random.Random, deadline_s: Deadline | None) -> M:
        start = time.monotonic()
        tool = self._tool(view)
        prompt = self.context_provider(view)
        system = tool.system or self.system
        total = resolve_deadline(
            deadline_s if deadline_s is not None else self.deadline_s,
            self.config.default_deadline_s,
        )
        budget = total - self.config.timeout_margin_s
        reply = (
            self.llm.ask(system, prompt, tool.schema, budget)
            if budget >= MIN_ATTEMPT_S
            else Reply(None, failure="timeout", detail="deadline shorter than the margin")
        )
        reason = reply.failure
        detail = reply.detail
        move: M | None = None
        if reason is None:
            try:
                move = tool.parse(reply.tool_input)
            except UnparsableMove as exc:
                reason, detail = "unparsable", exc.message
                log.info("llm move unparsable: %s", exc.message)
            except IllegalAction as exc:
                reason, detail = "illegal", exc.message
                log.info("llm move illegal (%s): %s", exc.code, exc.message)
        elif reason != "timeout":
            log.info("llm fallback (%s): %s", reason, reply.detail)
        llm_move = move
        if move is None:
            move = self._fallback(view, rng)
        latency_ms = (time.monotonic() - start) * 1000.0
        trace = None
        if self.config.trace:
            trace = DecisionTrace(
                system=system,
                prompt=prompt,
                prefill=self.config.backend.prefill,
                tool=tool.kind,
                offered=tool.offered,
                reply=reply.raw,
                detail=detail if reason else "",
                llm_move=None if llm_move is None else move_label(llm_move),
                played=move_label(move),
                planner_move=None if tool.baseline is None else move_label(tool.baseline),
                tokens_cached=reply.tokens_cached,
            )
        self.decisions.append(
            DecisionRecord(
                turn=view.turn,
                tier=self.tier,
                source="llm" if reason is None else "fallback",
                tokens_in=reply.tokens_in,
                tokens_out=reply.tokens_out,
                context_tokens=estimate_tokens(prompt),
                latency_ms=latency_ms,
                cost_usd=self.config.cost(reply.tokens_in, reply.tokens_out),
                fallback_reason=reason,
                trace=trace,
            )
        )
        if self.on_decision is not None:
            self.on_decision(self.decisions[-1])
        return move

    def stats(self) -> dict[str, Any]:
        """A small JSON-able summary of this brain's decisions."""
        n = len(self.decisions)
        fallbacks = Counter(d.fallback_reason for d in self.decisions if d.fallback_reason)
        return {
            "brain": self.name,
            "model": self.config.model,
            "backend": self.config.backend.name,
            "decisions": n,
            "llm_moves": sum(d.source == "llm" for d in self.decisions),
            "fallbacks": dict(sorted(fallbacks.items())),
            "tokens_in": sum(d.tokens_in for d in self.decisions),
            "tokens_out": sum(d.tokens_out for d in self.decisions),
            "cost_usd": sum(d.cost_usd for d in self.decisions),
            "mean_latency_ms": (sum(d.latency_ms for d in self.decisions) / n) if n else 0.0,
            "api_errors": dict(sorted(self.llm.errors.items())),
        }


class LLMHarry(_LLMBrain[HarryView, HarryMove]):
    """Harry played by an LLM; any failure plays the fallback brain's move instead.

    By default the fallback is the `planner` and the prompt is the L1 working memory
    (`tier`, default `compressed`) rendered from the planner's own Bayes map, so the LLM
    sees ~55 tokens of computed belief, never the raw log (unless `tier="narrative"`). In
    the compressed tier the tool offers the planner's candidate moves
    (`horcrux.agents.candidates`) with a short system prompt, unless
    `LLMConfig.compressed_tool` is `legal`; the other tiers offer every legal move.
    """

    _seat = _Seat(
        harry_system_prompt,
        harry_tool_schema,
        parse_harry_move,
        refusal_hint="use the planner brain (or naive)",
    )

    def __init__(
        self,
        rules: RuleSet,
        *,
        config: LLMConfig | None = None,
        context_provider: HarryContextProvider | None = None,
        fallback: HarryBrain | None = None,
        client: Anthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        deadline_s: Deadline | None = None,
        tier: Tier = "compressed",
        on_decision: Callable[[DecisionRecord], None] | None = None,
    ) -> None:
        super().__init__(rules, config, client, base_url, api_key, deadline_s, tier, on_decision)
        self.fallback: HarryBrain = fallback or HARRY_BRAINS.create("planner", rules)
        self._fallback = self.fallback.decide
        if context_provider is None:
            context_provider = _working_memory(self.fallback, tier) or render_harry_view
        self.context_provider = context_provider
        self.short_system = harry_short_system_prompt(rules)

    def _tool(self, view: HarryView) -> _Tool[HarryMove]:
        planner = self.fallback if isinstance(self.fallback, Planner) else None
        if planner is None:
            return super()._tool(view)
        if self.tier == "compressed" and self.config.compressed_tool == "candidates":
            moves, choice = planner.candidates(view, self.config.max_candidates)
            return _Tool(
                candidates_tool(moves),
                lambda raw: parse_candidate(raw, view, moves),
                kind="candidates",
                offered=tuple(move_label(m) for m in moves),
                system=self.short_system,
                baseline=choice,
            )
        schema = harry_tool_schema(view)
        planner.sync(view)
        return _Tool(
            schema, lambda raw: parse_harry_move(raw, view), baseline=planner.choose(view).move
        )

    def decide(
        self, view: HarryView, rng: random.Random, *, deadline_s: Deadline | None = None
    ) -> HarryMove:
        """Harry's move; `deadline_s` (seconds, or a callable) overrides the brain's."""
        return self._decide(view, rng, deadline_s)


def _working_memory(brain: HarryBrain, tier: Tier) -> HarryContextProvider | None:
    """The L1 context over `brain`'s Bayes map when it is a `Planner`, else None."""
    from horcrux.memory.working import WorkingMemory

    return WorkingMemory(brain, tier) if isinstance(brain, Planner) else None


class LLMVoldemort(_LLMBrain[VoldemortView, VoldemortMove]):
    """Voldemort played by Claude; any failure plays the fallback (reference) move."""

    _seat = _Seat(
        voldemort_system_prompt,
        voldemort_tool_schema,
        parse_voldemort_move,
        refusal_hint="use the reference brain",
    )

    def __init__(
        self,
        rules: RuleSet,
        *,
        config: LLMConfig | None = None,
        context_provider: VoldemortContextProvider | None = None,
        fallback: VoldemortBrain | None = None,
        client: Anthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        deadline_s: Deadline | None = None,
        tier: Tier = "full",
        on_decision: Callable[[DecisionRecord], None] | None = None,
    ) -> None:
        super().__init__(rules, config, client, base_url, api_key, deadline_s, tier, on_decision)
        self.fallback: VoldemortBrain = fallback or VOLDEMORT_BRAINS.create("reference", rules)
        self._fallback = self.fallback.decide
        self.context_provider = context_provider or render_voldemort_view

    def decide(
        self, view: VoldemortView, rng: random.Random, *, deadline_s: Deadline | None = None
    ) -> VoldemortMove:
        return self._decide(view, rng, deadline_s)


# ---------------------------------------------------------------- registry factories
_SETTING_KEYS = (
    "context_provider",
    "client",
    "base_url",
    "api_key",
    "deadline_s",
    "tier",
    "on_decision",
)


def _settings_kwargs(options: BrainOptions, brains: Registry[Any]) -> dict[str, Any]:
    """LLM settings from `BrainOptions.settings`; the spec's param picks the backend and model
    (`llm:local`, `llm:local:MODEL`, `llm:anthropic:MODEL`, `llm:MODEL`: `parse_llm_param`).

    Keys: config (LLMConfig; the param still sets its backend or model), model (a Claude
    model id, when neither config nor param names one), context_provider,
    fallback (a brain, or a spec made with `brains`), client, base_url, api_key, deadline_s
    (seconds or a callable), tier, on_decision (called with each decision's record).
    """
    s = options.settings
    config = s.get("config")
    if config is not None and not isinstance(config, LLMConfig):
        raise HorcruxError("settings['config'] must be an LLMConfig")
    if options.param:
        named = parse_llm_param(options.param)
        if config is None:
            config = named
        else:
            config = config.model_copy(update={"model": named.model, "backend": named.backend})
    if config is None and s.get("model"):  # the function's settings (HORCRUX_LLM_MODEL)
        config = LLMConfig(model=str(s["model"]))
    config = config or LLMConfig()
    kwargs: dict[str, Any] = {"config": config}
    for key in _SETTING_KEYS:
        if s.get(key) is not None:
            kwargs[key] = s[key]
    fallback = s.get("fallback")
    if isinstance(fallback, str):
        fallback = brains.create(fallback, options.rules, truth=options.truth)
    kwargs["fallback"] = fallback
    return kwargs


def llm_harry(options: BrainOptions) -> LLMHarry:
    """The `llm` Harry a seat spec builds (the gated brain's upper tiers too)."""
    return LLMHarry(options.rules, **_settings_kwargs(options, HARRY_BRAINS))


HARRY_BRAINS.register(
    "llm", description="an LLM via tool use (llm:MODEL, llm:local[:MODEL]); falls back locally"
)(llm_harry)


@VOLDEMORT_BRAINS.register(
    "llm", description="an LLM via tool use (llm:MODEL, llm:local[:MODEL]); falls back locally"
)
def _llm_voldemort(options: BrainOptions) -> LLMVoldemort:
    return LLMVoldemort(options.rules, **_settings_kwargs(options, VOLDEMORT_BRAINS))


__all__ = ["LLMHarry", "LLMVoldemort", "llm_harry"]
