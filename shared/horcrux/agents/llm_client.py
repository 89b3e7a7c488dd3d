"""The `llm` brains' HTTP client: one Messages API call per decision, bounded by a deadline.

The SDK's own retries are off (`max_retries=0`: it would honour any `retry-after`, however
long); `LLMClient.ask` retries 429/5xx/connection errors itself, only while the wait and
another attempt still fit in the budget, and never raises an API error: a failure comes
back as a `Reply` with its reason (`horcrux.decisions.FallbackReason`).

`import horcrux.agents.llm_client` does not import `anthropic` (Lambda cold start): the SDK
is imported when the first client is built, lazily, once per brain.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from horcrux.agents.legal import TOOL_NAME
from horcrux.agents.llm_config import API_KEY_ENV, LLMConfig, LLMUnavailable
from horcrux.decisions import FallbackReason
from horcrux.settings import llm_settings

if TYPE_CHECKING:
    from anthropic import Anthropic, Timeout
    from anthropic.types import MessageParam, ToolParam

log = logging.getLogger(__name__)

MIN_ATTEMPT_S = 0.05  # below this much time left, a call is not worth starting

Deadline = float | Callable[[], float]


@dataclass(frozen=True)
class Reply:
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


def resolve_deadline(deadline: Deadline | None, default: float) -> float:
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

    def ask(self, system: str, prompt: str, tool: dict[str, Any], budget_s: float) -> Reply:
        """One decision's call, retried while time allows; never raises an API error."""
        import anthropic

        client = self.client
        end = time.monotonic() + budget_s
        attempt = 0
        while True:
            remaining = end - time.monotonic()
            if remaining < MIN_ATTEMPT_S:
                return Reply(None, failure="timeout", detail="no time left for a call")
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
                return Reply(None, failure="timeout", detail="the API did not answer in time")
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
                failed = Reply(None, failure=reason, detail=f"HTTP {exc.status_code}")
            except anthropic.APIConnectionError as exc:
                self.errors["connection"] += 1
                failed = Reply(None, failure="connection", detail=str(exc))
                retryable = True
            except (anthropic.APIError, ValueError) as exc:  # a body that is not a message
                self.errors["bad_response"] += 1
                return Reply(None, failure="unparsable", detail=str(exc))
            except Exception as exc:  # a game must go on: log it, play the fallback
                log.exception("llm call failed unexpectedly")
                self.errors[type(exc).__name__] += 1
                return Reply(None, failure="server_error", detail=repr(exc))
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


def _read_message(message: object) -> Reply:
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
            return Reply(getattr(block, "input", None), tin, tout, tokens_cached=cached, raw=raw)
    return Reply(
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


__all__ = ["MIN_ATTEMPT_S", "Deadline", "LLMClient", "Reply", "resolve_deadline"]
