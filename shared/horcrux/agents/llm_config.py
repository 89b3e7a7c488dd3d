"""The `llm` brains' configuration: model, backend (Claude or a local Anthropic-compatible
server), prices, output cap, tools and time budget (`LLMConfig`), and the spec parameter
that names them (`parse_llm_param`: `llm:local`, `llm:anthropic:MODEL`, `llm:MODEL`).

Defaults a brain is not given (the model, the local server's address and prefill) come from
`horcrux.settings.llm_settings`, the one reader of the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from horcrux.errors import HorcruxError
from horcrux.settings import llm_settings

DEFAULT_MODEL = "claude-haiku-4-5"
MODEL_ENV = "HORCRUX_LLM_MODEL"
API_KEY_ENV = "ANTHROPIC_API_KEY"


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


__all__ = [
    "API_KEY_ENV",
    "BACKENDS",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_LOCAL_URL",
    "DEFAULT_MODEL",
    "DEFAULT_PRICES",
    "LOCAL_PREFILL",
    "MODEL_ENV",
    "Backend",
    "LLMConfig",
    "LLMUnavailable",
    "Price",
    "ToolStyle",
    "anthropic_backend",
    "local_backend",
    "parse_llm_param",
]
