"""The `llm` brains: Harry and Voldemort played by Claude through the Messages API.

Each decision is one `messages.create` call with a single tool, `make_move`, whose input
schema is the seat's legal action set this turn (`horcrux.agents.legal`), and
`tool_choice` forcing that tool. The prompt is whatever the injected context provider
renders from the view (default: a short deterministic rendering written here; the L1
compressor of `horcrux.memory` plugs in the same way). A reply that is unparsable or
illegal, a timeout, a 429 or a 5xx all fall back to an injected local brain, and every
decision is recorded as a `DecisionRecord` (tokens, cost, latency, fallback reason).

Deadlines: the caller gives `deadline_s`, the time this decision may take in all (for a
Lambda, its remaining time minus its own margin), as a number or a callable read at each
decision; `LLMConfig.timeout_margin_s` is kept for the fallback, and the rest is the HTTP
budget. The SDK's own retries are off (`max_retries=0`: it would honour any `retry-after`,
however long); this module retries 429/5xx/connection errors itself, only while the wait
and another attempt still fit in the budget.

Fallback reasons: a reply without a make_move tool_use or with a malformed input or body
-> "unparsable"; a move the engine refuses -> "illegal"; the client's timeout or no time
left -> "timeout"; 429 -> "rate_limited"; 5xx -> "server_error"; connection errors ->
"connection"; other 4xx (logged) -> "client_error"; 401/403 (key refused) -> "no_key".
A reply's tokens are counted even when its move is not played.

`import horcrux.agents.llm` does not import `anthropic` (Lambda cold start): the SDK is
imported when the first client is built, lazily, once per brain.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

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
    planner_candidates,
)
from horcrux.agents.legal import (
    TOOL_NAME,
    UnparsableMove,
    harry_tool_schema,
    parse_harry_move,
    parse_voldemort_move,
    voldemort_tool_schema,
)
from horcrux.agents.voldemort import public_evidence
from horcrux.decisions import DecisionRecord, DecisionTrace, FallbackReason, Tier
from horcrux.errors import HorcruxError, IllegalAction
from horcrux.memory.tokens import estimate_tokens
from horcrux.models import HarryRecord, Observation
from horcrux.rules import RuleSet
from horcrux.settings import llm_settings
from horcrux.views import HarryView, VoldemortView

if TYPE_CHECKING:
    from anthropic import Anthropic, Timeout
    from anthropic.types import MessageParam, ToolParam

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5"
MODEL_ENV = "HORCRUX_LLM_MODEL"
API_KEY_ENV = "ANTHROPIC_API_KEY"
MIN_ATTEMPT_S = 0.05  # below this much time left, a call is not worth starting

Deadline = float | Callable[[], float]
HarryContextProvider = Callable[[HarryView], str]
VoldemortContextProvider = Callable[[VoldemortView], str]


class LLMUnavailable(HorcruxError):
    """The llm brain cannot start (no API key, no price for the model, no SDK)."""

    code = "llm_unavailable"


# ---------------------------------------------------------------- configuration
class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


# List prices in USD per million input / output tokens; keep in step with the price page.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-haiku-4-5": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "claude-sonnet-4-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-opus-4-5": Price(input_per_mtok=5.0, output_per_mtok=25.0),
    "claude-opus-4-1": Price(input_per_mtok=15.0, output_per_mtok=75.0),
}


DEFAULT_LOCAL_URL = "http://127.0.0.1:8089"
DEFAULT_LOCAL_MODEL = "smollm2-135m-instruct"
LOCAL_PREFILL = "<tool_call>"
"""Opens the assistant's turn on a Hermes/Qwen-style local server: its grammar then writes
a schema-valid tool call at once instead of letting a small model ramble first."""
LOCAL_STOP = "</tool_call>"
"""Ends a local model's reply after its first tool call: llama-server's grammar allows
several calls (it does not read `disable_parallel_tool_use`), and a small model writes them."""
LOCAL_KEY = "local"
"""What is sent as the key to a local server (llama-server checks none unless started
with --api-key, in which case set `ANTHROPIC_API_KEY`-free `api_key` in the settings)."""
BACKENDS = ("anthropic", "local")

ToolStyle = Literal["legal", "candidates"]


class Backend(BaseModel):
    """Where an LLM brain's Messages API calls go and how that endpoint is driven.

    `anthropic` is Claude (a key is required, the price comes from `LLMConfig.prices`);
    `local` is any Anthropic-compatible server on this machine or network (llama.cpp's
    `llama-server` by default): no key, a price of 0 unless given, and an assistant
    prefill that makes a small model call the tool at once. Every field can be set, so a
    bigger local model or a proxy works through the same profile.
    """

    model_config = ConfigDict(frozen=True)

    name: str = "anthropic"
    base_url: str | None = Field(default=None, description="None: the SDK's default")
    requires_key: bool = True
    api_key: str | None = Field(default=None, description="sent when no key is given")
    prefill: str | None = Field(default=None, description="a last assistant message")
    price: Price | None = Field(default=None, description="None: LLMConfig.prices[model]")
    stop_sequences: tuple[str, ...] = Field(
        default=(), description="end the reply there (one tool call, not several)"
    )
    sampling: dict[str, float] = Field(
        default_factory=dict,
        description="sampling fields sent as is (a local server: temperature 0, reproducible)",
    )


def anthropic_backend() -> Backend:
    """Claude through the Messages API (the SDK reads `ANTHROPIC_BASE_URL` itself)."""
    return Backend()


def local_backend(
    *,
    base_url: str | None = None,
    prefill: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Backend:
    """A local Anthropic-compatible server: `HORCRUX_LOCAL_MODEL_URL` (default
    http://127.0.0.1:8089, `horcrux model serve`), `HORCRUX_LOCAL_MODEL_PREFILL` (default
    `<tool_call>`; an empty value sends none). Price 0."""
    found = llm_settings(env)
    if prefill is None:
        prefill = LOCAL_PREFILL if found.local_prefill is None else found.local_prefill
    return Backend(
        name="local",
        base_url=base_url or found.local_url or DEFAULT_LOCAL_URL,
        requires_key=False,
        api_key=LOCAL_KEY,
        prefill=prefill or None,
        price=Price(input_per_mtok=0.0, output_per_mtok=0.0),
        stop_sequences=(LOCAL_STOP,),
        sampling={"temperature": 0.0},
    )


def _default_model() -> str:
    return llm_settings().model or DEFAULT_MODEL


class LLMConfig(BaseModel):
    """Model, backend, prices, output cap, tools and time budget of the llm brains."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(default_factory=_default_model, description=f"model id; env {MODEL_ENV}")
    backend: Backend = Field(default_factory=anthropic_backend)
    prices: dict[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    max_tokens: int = Field(default=256, ge=1, description="output cap (one tool call)")
    timeout_margin_s: float = Field(
        default=0.5, ge=0, description="kept from the caller's deadline for the fallback"
    )
    default_deadline_s: float = Field(default=10.0, gt=0, description="when the caller gives none")
    retries: int = Field(default=1, ge=0, description="own retries, only if they fit the deadline")
    retry_backoff_s: float = Field(default=0.25, ge=0, description="first wait without retry-after")
    connect_timeout_s: float = Field(default=1.0, gt=0, description="cap of the connect timeout")
    compressed_tool: ToolStyle = Field(
        default="candidates",
        description="compressed tier tool: the planner's candidate moves, or every legal move",
    )
    max_candidates: int = Field(default=6, ge=1, description="moves a candidates tool offers")
    trace: bool = Field(default=True, description="keep each decision's prompt and reply")

    @classmethod
    def for_backend(
        cls, name: str, model: str | None = None, *, env: Mapping[str, str] | None = None
    ) -> LLMConfig:
        """The config of a named backend profile (`anthropic` or `local`), model optional."""
        found = llm_settings(env)
        if name == "local":
            chosen = model or found.local_model or DEFAULT_LOCAL_MODEL
            return cls(model=chosen, backend=local_backend(env=env), default_deadline_s=30.0)
        if name == "anthropic":
            return cls(model=model or found.model or DEFAULT_MODEL)
        raise LLMUnavailable(f"unknown LLM backend {name!r}; known: {', '.join(BACKENDS)}")

    def price(self) -> Price:
        """The price of `model`; raises `LLMUnavailable` if neither backend nor table has one."""
        if self.backend.price is not None:
            return self.backend.price
        found = self.prices.get(self.model)
        if found is None:
            raise LLMUnavailable(
                f"no price for model {self.model!r} in LLMConfig.prices "
                f"(known: {', '.join(sorted(self.prices))}); add one to count its cost"
            )
        return found

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """USD for one call: tokens x price per million / 1e6."""
        p = self.price()
        return (tokens_in * p.input_per_mtok + tokens_out * p.output_per_mtok) / 1e6


def parse_llm_param(param: str | None, *, env: Mapping[str, str] | None = None) -> LLMConfig:
    """The config a spec's parameter names: `local`, `local:MODEL`, `anthropic`,
    `anthropic:MODEL`, or a bare Claude model id (`llm:claude-sonnet-4-5`)."""
    if not param:
        return LLMConfig()
    head, _, rest = param.partition(":")
    if head in BACKENDS:
        return LLMConfig.for_backend(head, rest or None, env=env)
    return LLMConfig(model=param)


# ---------------------------------------------------------------- default prompts
def _obs_text(obs: Observation) -> str:
    who = "hermione " if obs.sensor == "hermione" else ""
    return f"{who}{obs.kind} {obs.location} {obs.outcome}"


def _record_text(record: HarryRecord) -> str:
    action = record.action
    label = action.ally if action.type == "ally" else action.type
    obs = "; ".join(_obs_text(o) for o in record.observations)
    return f"t{record.turn} {label}: {obs}"


def render_harry_view(view: HarryView, window: int = 8) -> str:
    """A short deterministic rendering of Harry's view: counters and his last turns."""
    allies = []
    for name, status in view.allies.items():
        state = "ready" if status.available else f"rests {status.rest}"
        if status.uses_left is not None:
            state += f", {status.uses_left} uses left"
        allies.append(f"{name} {state}")
    recent = [_record_text(r) for r in view.history[-window:]] if window > 0 else []
    lines = [
        f"Turn {view.turn}/{view.rules.max_turns}. Attacks left {view.attacks_left}. "
        f"Horcruxes destroyed {view.horcruxes_destroyed}/{view.rules.horcruxes}.",
        "Allies: " + ("; ".join(allies) if allies else "none"),
        "Your last turns (oldest first): " + (" | ".join(recent) if recent else "none yet"),
        "Call make_move with one legal move.",
    ]
    return "\n".join(lines)


def render_voldemort_view(view: VoldemortView, top: int = 3) -> str:
    """A short deterministic rendering of Voldemort's view: the truth, charges, Harry's turn."""
    last = view.last_harry
    harry_now = _record_text(last) if last is not None and last.turn == view.turn else "nothing"
    evidence = public_evidence(view.rules, view.history)
    best = sorted(evidence.items(), key=lambda kv: (-kv[1], view.rules.locations.index(kv[0])))
    hot = ", ".join(f"{loc} {score:+.1f}" for loc, score in best[:top] if score > 0) or "none"
    lines = [
        f"Turn {view.turn}/{view.rules.max_turns}. Horcruxes at: "
        f"{', '.join(view.horcrux_locations) or 'none'}. "
        f"Decoys at: {', '.join(view.decoy_locations) or 'none'}.",
        f"Relocations left {view.relocations_left}, decoys left {view.decoys_left}.",
        f"Harry this turn: {harry_now}. Harry has {view.attacks_left} attacks left and has "
        f"destroyed {view.horcruxes_destroyed}/{view.rules.horcruxes}.",
        f"Where Harry's searches point (log-likelihood): {hot}.",
        "Call make_move with one legal move.",
    ]
    return "\n".join(lines)


def harry_system_prompt(rules: RuleSet) -> str:
    s = rules.sensor
    return (
        f"You are Harry Potter hunting {rules.horcruxes} Horcruxes hidden among "
        f"{len(rules.locations)} locations within {rules.max_turns} turns. A search says "
        f"positive with probability {s.d} where a Horcrux or a decoy is, {s.f} elsewhere. "
        "An attack destroys a Horcrux, removes a decoy, or is wasted; attacks are few. "
        "Voldemort sees everything you do: he may move a Horcrux after a positive search "
        "and plant decoys where your searches point. Answer only by calling make_move."
    )


def harry_short_system_prompt(rules: RuleSet) -> str:
    """The compressed tier's system prompt: what the working memory's lines mean, no more."""
    return (
        f"You are Harry, hunting {rules.horcruxes} Horcruxes. Likely: the chance a Horcrux "
        "is there. Searches are noisy; attacks are few and a miss wastes one. Pick one move."
    )


def voldemort_system_prompt(rules: RuleSet) -> str:
    return (
        f"You are Voldemort guarding {rules.horcruxes} Horcruxes among "
        f"{len(rules.locations)} locations. Harry searches with a noisy sensor and attacks; "
        f"you win if a Horcrux survives turn {rules.max_turns} or his attacks run out. "
        "You may relocate a Horcrux to a free location or plant a decoy at a free location "
        "(both with limited charges), or pass. Answer only by calling make_move."
    )


# ---------------------------------------------------------------- the call
@dataclass(frozen=True)
class _Reply:
    """One decision's exchange with the API: the tool input, or why there is none.

    `tokens_in` is the whole prompt by the model's own count (system, tools, context and
    any prefill), prompt-cache reads included; `tokens_cached` is the part read from the
    server's cache. `raw` is what the model wrote (text, or the tool call as JSON).
    """

    tool_input: object | None
    tokens_in: int = 0
    tokens_out: int = 0
    failure: FallbackReason | None = None
    detail: str = ""
    tokens_cached: int = 0
    raw: str = ""


def _resolve_deadline(deadline: Deadline | None, default: float) -> float:
    if deadline is None:
        return default
    return float(deadline() if callable(deadline) else deadline)


class LLMClient:
    """The Anthropic client of one brain (built lazily, once) and its deadline-bound call."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        client: Anthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        refusal_hint: str = "use the planner brain",
    ) -> None:
        backend = config.backend
        if backend.requires_key:
            key = api_key or llm_settings().api_key
        else:  # never send a Claude key to another endpoint
            key = api_key or backend.api_key
        if client is None and not key:
            raise LLMUnavailable(
                f"the llm brain needs {API_KEY_ENV}; {refusal_hint} to play without one "
                "(or inject an anthropic client, or use the local backend: llm:local)"
            )
        config.price()  # refuse now rather than count no cost later
        self.config = config
        self._injected = client
        self._base_url = base_url or backend.base_url
        self._api_key = key
        self._client: Anthropic | None = None
        self.errors: Counter[str] = Counter()

    @property
    def client(self) -> Anthropic:
        """The client, built on first use; SDK retries off (ours respect the deadline)."""
        if self._client is None:
            if self._injected is not None:
                self._client = self._injected.with_options(max_retries=0)
            else:
                try:
                    import anthropic
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise LLMUnavailable(
                        "the llm brain needs the anthropic SDK: pip install 'horcrux-hunt[llm]'"
                    ) from exc
                self._client = anthropic.Anthropic(
                    api_key=self._api_key, base_url=self._base_url, max_retries=0
                )
        return self._client

    def _timeout(self, remaining: float) -> Timeout:
        import anthropic

        # connect + write + pool + read stay within `remaining` (one read for a reply)
        c = min(self.config.connect_timeout_s, remaining / 10)
        return anthropic.Timeout(remaining - 3 * c, connect=c, write=c, pool=c)

    def _messages(self, prompt: str) -> list[MessageParam]:
        """The user's context, then the backend's prefill (if any) opening the reply."""
        messages: list[MessageParam] = [{"role": "user", "content": prompt}]
        prefill = self.config.backend.prefill
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        return messages

    @property
    def _extra_body(self) -> dict[str, Any] | None:
        sampling = self.config.backend.sampling
        return dict(sampling) if sampling else None

    @property
    def _stop(self) -> dict[str, Any]:
        stop = self.config.backend.stop_sequences
        return {"stop_sequences": list(stop)} if stop else {}

    def ask(self, system: str, prompt: str, tool: dict[str, Any], budget_s: float) -> _Reply:
        """One decision's call, retried while time allows; never raises an API error."""
        import anthropic

        client = self.client
        end = time.monotonic() + budget_s
        attempt = 0
        while True:
            remaining = end - time.monotonic()
            if remaining < MIN_ATTEMPT_S:
                return _Reply(None, failure="timeout", detail="no time left for a call")
            wait: float | None = None
            retryable = False
            try:
                message = client.messages.create(
                    model=self.config.model,
                    max_tokens=self.config.max_tokens,
                    system=system,
                    messages=self._messages(prompt),
                    tools=[cast("ToolParam", tool)],
                    tool_choice={
                        "type": "tool",
                        "name": TOOL_NAME,
                        "disable_parallel_tool_use": True,
                    },
                    timeout=self._timeout(remaining),
                    extra_body=self._extra_body,
                    **self._stop,
                )
            except anthropic.APITimeoutError:
                self.errors["timeout"] += 1
                return _Reply(None, failure="timeout", detail="the API did not answer in time")
            except anthropic.APIStatusError as exc:
                self.errors[str(exc.status_code)] += 1
                reason: FallbackReason
                if isinstance(exc, anthropic.RateLimitError):
                    reason = "rate_limited"
                elif exc.status_code in (401, 403):
                    reason = "no_key"  # the key was refused
                    log.warning("llm key refused (%s): %s", exc.status_code, exc.message)
                elif exc.status_code >= 500:
                    reason = "server_error"
                else:
                    reason = "client_error"  # any other 4xx is our fault: log it
                    log.warning("llm call refused (%s): %s", exc.status_code, exc.message)
                if exc.status_code == 429 or exc.status_code >= 500:
                    retryable = True
                    wait = _retry_after(exc.response.headers)
                failed = _Reply(None, failure=reason, detail=f"HTTP {exc.status_code}")
            except anthropic.APIConnectionError as exc:
                self.errors["connection"] += 1
                failed = _Reply(None, failure="connection", detail=str(exc))
                retryable = True
            except (anthropic.APIError, ValueError) as exc:  # a body that is not a message
                self.errors["bad_response"] += 1
                return _Reply(None, failure="unparsable", detail=str(exc))
            except Exception as exc:  # a game must go on: log it, play the fallback
                log.exception("llm call failed unexpectedly")
                self.errors[type(exc).__name__] += 1
                return _Reply(None, failure="server_error", detail=repr(exc))
            else:
                return _read_message(message)
            if not retryable or attempt >= self.config.retries:
                return failed
            if wait is None:
                wait = self.config.retry_backoff_s * 2**attempt
            if time.monotonic() + wait + MIN_ATTEMPT_S >= end:
                return failed
            time.sleep(wait)
            attempt += 1


def _count(usage: object, name: str) -> int:
    value = getattr(usage, name, 0)
    return value if isinstance(value, int) else 0


def _raw_text(content: list[Any]) -> str:
    """What the model wrote: its text blocks and its tool calls (as JSON), in order."""
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "tool_use":
            body = {"name": getattr(block, "name", None), "input": getattr(block, "input", None)}
            parts.append(json.dumps(body, separators=(",", ":"), default=str))
    return "\n".join(parts)


def _read_message(message: object) -> _Reply:
    """The make_move input and usage of a reply; defensive, as the SDK does not validate.

    The prompt's size is the model's own count: `input_tokens` plus what the server read
    from or wrote to its prompt cache (a local llama-server reports the cached prefix as
    `cache_read_input_tokens`, Claude reports cache writes and reads the same way).
    """
    usage = getattr(message, "usage", None)
    fresh = _count(usage, "input_tokens")
    cached = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    tin, tout = fresh + cached + written, _count(usage, "output_tokens")
    content = getattr(message, "content", None)
    blocks = content if isinstance(content, list) else []
    raw = _raw_text(blocks)
    for block in blocks:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == TOOL_NAME:
            return _Reply(getattr(block, "input", None), tin, tout, tokens_cached=cached, raw=raw)
    return _Reply(
        None,
        tin,
        tout,
        failure="unparsable",
        detail="no make_move tool_use",
        tokens_cached=cached,
        raw=raw,
    )


def _retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` / `retry-after` (seconds only), if given."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) / scale)
        except ValueError:
            return None  # an HTTP date: treat as unknown (the backoff applies)
    return None


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
        total = _resolve_deadline(
            deadline_s if deadline_s is not None else self.deadline_s,
            self.config.default_deadline_s,
        )
        budget = total - self.config.timeout_margin_s
        reply = (
            self.llm.ask(system, prompt, tool.schema, budget)
            if budget >= MIN_ATTEMPT_S
            else _Reply(None, failure="timeout", detail="deadline shorter than the margin")
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
        from horcrux.agents.planner import PlannerHarry

        planner = self.fallback if isinstance(self.fallback, PlannerHarry) else None
        if planner is None:
            return super()._tool(view)
        if self.tier == "compressed" and self.config.compressed_tool == "candidates":
            moves, choice = planner_candidates(planner, view, self.config.max_candidates)
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
    """The L1 context over `brain`'s Bayes map when it is a planner, else None."""
    from horcrux.agents.planner import PlannerHarry
    from horcrux.memory.working import WorkingMemory

    return WorkingMemory(brain, tier) if isinstance(brain, PlannerHarry) else None


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


@HARRY_BRAINS.register(
    "llm", description="an LLM via tool use (llm:MODEL, llm:local[:MODEL]); falls back locally"
)
def _llm_harry(options: BrainOptions) -> LLMHarry:
    return LLMHarry(options.rules, **_settings_kwargs(options, HARRY_BRAINS))


@VOLDEMORT_BRAINS.register(
    "llm", description="an LLM via tool use (llm:MODEL, llm:local[:MODEL]); falls back locally"
)
def _llm_voldemort(options: BrainOptions) -> LLMVoldemort:
    return LLMVoldemort(options.rules, **_settings_kwargs(options, VOLDEMORT_BRAINS))


__all__ = [
    "BACKENDS",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_LOCAL_URL",
    "DEFAULT_MODEL",
    "DEFAULT_PRICES",
    "Backend",
    "Deadline",
    "HarryContextProvider",
    "LLMClient",
    "LLMConfig",
    "LLMHarry",
    "LLMUnavailable",
    "LLMVoldemort",
    "Price",
    "VoldemortContextProvider",
    "anthropic_backend",
    "harry_short_system_prompt",
    "harry_system_prompt",
    "local_backend",
    "parse_llm_param",
    "render_harry_view",
    "render_voldemort_view",
    "voldemort_system_prompt",
]
