"""Typed settings, one object per function, read from the environment ONCE, at cold start.

Each Lambda handler module builds its settings at import (`api_settings()`,
`turn_settings(seat)`, `compaction_settings()`) and injects them into what it builds: the
store (`DynamoDbStore.from_settings(settings.store)`), the service (brain settings: the
Anthropic key as `api_key`, the model, the entropy gate), the operator check of the memory
routes, the secret loader. Nothing below the handler reads `os.environ` on a request; changing the
environment of a warm function changes nothing until a new settings object is built.

This module is the only one of the runtime that reads the environment (a test walks the
runtime's syntax trees for `os.environ` / `os.getenv`). Code run with no handler above it (the
tools, a test, a REPL) builds the same objects from the process environment through the same
builders (`store_settings()`, `llm_settings()`) called with no mapping.

A bad value fails at cold start with a `SettingsError` naming the variable (the function's
init fails, loudly, instead of a request failing later).

| variable | setting | used by |
| --- | --- | --- |
| `HORCRUX_GAMES_TABLE`, `HORCRUX_EVENTS_TABLE` | table names | every function |
| `AWS_REGION` / `AWS_DEFAULT_REGION`, `HORCRUX_DYNAMODB_ENDPOINT` | DynamoDB | every one |
| `HORCRUX_TTL_DAYS` | a game's lifetime (days, > 0; default 30) | API |
| `HORCRUX_IDEMPOTENCY_TABLE` | Powertools idempotency table | API |
| `HORCRUX_OPERATOR_{SECRET_ARN,TOKEN_SHA256,READONLY_TOKEN_SHA256,AGENTS}` | the operator | API |
| `HORCRUX_ANTHROPIC_SECRET_ARN`, `HORCRUX_SECRET_MAX_AGE` | the key's secret | API, turns |
| `ANTHROPIC_API_KEY` | a key given directly (local runs; no secret) | API, turns |
| `HORCRUX_LLM_MODEL` | the LLM brains' model (`settings["model"]`) | API, turns |
| `HORCRUX_LOCAL_MODEL`, `..._URL`, `..._PREFILL` | the `llm:local` server | local runs |
| `HORCRUX_ECHO_CONFIG` | an ECHO config file instead of the shipped one | ECHO |
| `HORCRUX_GATE_{LOW,HIGH,EPSILON,MEASURE,FORCE}` | the gated Harry's entropy gate | Harry turn |
| `HORCRUX_RESULTS_KEEP` | summaries a recent-results item keeps (>= 1; default 20) | compaction |
| `POWERTOOLS_METRICS_NAMESPACE` | the metrics namespace (default `HorcruxHunt`) | compaction |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from horcrux.decisions import Tier

if TYPE_CHECKING:
    from horcrux.operator_token import OperatorAccess

Env = Mapping[str, str]
SeatName = Literal["harry", "voldemort"]

DEFAULT_TTL_DAYS = 30.0
DEFAULT_SECRET_MAX_AGE_S = 300
DEFAULT_RESULTS_KEEP = 20
DEFAULT_IDEMPOTENCY_TABLE = "horcrux-idempotency"
DEFAULT_METRICS_NAMESPACE = "HorcruxHunt"

ABANDONED_AFTER_S = 30 * 60
"""A running game nobody has moved in for this long (30 minutes) is `abandoned`: it leaves
the games being played (`GET /games?status=active`) and `GET /games/{id}` says so, until a
seated player's move (a person's or an AI's) revives it. Fixed, not an environment
setting: the page and the docs state it."""
HEARTBEAT_S = 5 * 60
"""A move refreshes the game's heartbeat (`GameSnapshot.active_at`) only when it is at least
this old (5 minutes), so the lobby index moves at most once per this-many seconds of play,
never once per turn. A game is called abandoned when its heartbeat is
`ABANDONED_AFTER_S + HEARTBEAT_S` old: its last move was then between 30 and 35 minutes
ago, never less."""


TIERS: tuple[Tier, ...] = get_args(Tier)
Measure = Literal["min-entropy", "shannon"]
MEASURES: tuple[Measure, ...] = get_args(Measure)
ENV_PREFIX = "HORCRUX_GATE_"


class SettingsError(ValueError):
    """A setting's value is unusable; the message names the variable."""


# ---------------------------------------------------------------- readers
def _text(env: Env, name: str, default: str | None = None) -> str | None:
    raw = env.get(name, "").strip()
    return raw or default


def _number(
    env: Env,
    name: str,
    default: float,
    *,
    minimum: float,
    strict: bool = False,
    whole: bool = False,
) -> float:
    """A number from `env[name]` (`default` if unset), at least `minimum` (above it if
    `strict`; a whole number if `whole`); SettingsError naming the variable otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise SettingsError(f"{name} must be {kind}, got {raw!r}") from None
    if value < minimum or (strict and value == minimum):
        sign = ">" if strict else ">="
        raise SettingsError(f"{name} must be {sign} {minimum:g}, got {raw!r}")
    return value


def _integer(env: Env, name: str, default: int, *, minimum: int) -> int:
    return int(_number(env, name, default, minimum=minimum, whole=True))


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- parts
class StoreSettings(_Settings):
    """The DynamoDB tables and client, and the games' time to live: what
    `DynamoDbStore(settings)` and the stream reader are built with."""

    games_table: str = "horcrux-games"
    events_table: str = "horcrux-events"
    region: str | None = None
    endpoint_url: str | None = None
    ttl_days: float = Field(default=DEFAULT_TTL_DAYS, gt=0)
    connect_timeout_s: float = Field(default=0.5, gt=0)
    read_timeout_s: float = Field(default=0.8, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    """Attempts per call: the store's own retries (back-off with jitter on throttling, 5xx,
    timeouts and connection errors; the client's own are off), each started only while the
    request's budget (`horcrux.store.budget`) covers its read timeout. A database that is
    down or frozen costs a call at most about `max_attempts * (connect or read timeout)`
    plus the back-off, and a request at most its budget, then `StoreUnavailable`."""
    request_budget_s: float = Field(default=1.6, gt=0)

    @classmethod
    def from_env(cls, env: Env) -> StoreSettings:
        return cls(
            games_table=_text(env, "HORCRUX_GAMES_TABLE", "horcrux-games") or "",
            events_table=_text(env, "HORCRUX_EVENTS_TABLE", "horcrux-events") or "",
            region=_text(env, "AWS_REGION") or _text(env, "AWS_DEFAULT_REGION"),
            endpoint_url=_text(env, "HORCRUX_DYNAMODB_ENDPOINT"),
            ttl_days=_number(env, "HORCRUX_TTL_DAYS", DEFAULT_TTL_DAYS, minimum=0, strict=True),
            connect_timeout_s=_number(
                env, "HORCRUX_DYNAMODB_CONNECT_TIMEOUT_S", 0.5, minimum=0, strict=True
            ),
            read_timeout_s=_number(
                env, "HORCRUX_DYNAMODB_READ_TIMEOUT_S", 0.8, minimum=0, strict=True
            ),
            max_attempts=_integer(env, "HORCRUX_DYNAMODB_MAX_ATTEMPTS", 3, minimum=1),
            request_budget_s=_number(
                env, "HORCRUX_DYNAMODB_REQUEST_BUDGET_S", 1.6, minimum=0, strict=True
            ),
        )

    @property
    def ttl_seconds(self) -> int:
        return int(self.ttl_days * 86400)


class SecretSettings(_Settings):
    """Where the Anthropic key comes from: a Secrets Manager secret, or a key given."""

    secret_id: str | None = Field(default=None, description="an ARN or a name")
    max_age_s: int = Field(default=DEFAULT_SECRET_MAX_AGE_S, ge=0)
    api_key: str | None = Field(default=None, repr=False, description="ANTHROPIC_API_KEY")

    @classmethod
    def from_env(cls, env: Env) -> SecretSettings:
        return cls(
            secret_id=_text(env, "HORCRUX_ANTHROPIC_SECRET_ARN"),
            max_age_s=_integer(env, "HORCRUX_SECRET_MAX_AGE", DEFAULT_SECRET_MAX_AGE_S, minimum=0),
            api_key=_text(env, "ANTHROPIC_API_KEY"),
        )


class OperatorSettings(_Settings):
    """The memory routes' operator: the Secrets Manager secret holding its token's SHA-256
    and reach (`HORCRUX_OPERATOR_SECRET_ARN`, what the stack sets; `horcrux.operator_token`),
    or, without a secret (local play, tests), the SHA-256 (hex) of its token and the agents
    it reaches (`*`: all). No operator configured: every memory call is refused (403)."""

    token_sha256: str = Field(default="", repr=False)
    readonly_sha256: str = Field(default="", repr=False)
    """HORCRUX_OPERATOR_READONLY_TOKEN_SHA256: the read-only operator (GET routes only)."""
    agents: tuple[str, ...] = ("*",)
    secret_arn: str = ""
    max_age_s: int = Field(default=DEFAULT_SECRET_MAX_AGE_S, ge=0)

    @classmethod
    def from_env(cls, env: Env) -> OperatorSettings:
        digest = (_text(env, "HORCRUX_OPERATOR_TOKEN_SHA256") or "").lower()
        readonly = (_text(env, "HORCRUX_OPERATOR_READONLY_TOKEN_SHA256") or "").lower()
        for name, value in (
            ("HORCRUX_OPERATOR_TOKEN_SHA256", digest),
            ("HORCRUX_OPERATOR_READONLY_TOKEN_SHA256", readonly),
        ):
            if value and (len(value) != 64 or any(c not in "0123456789abcdef" for c in value)):
                raise SettingsError(f"{name} must be 64 hex digits (SHA-256)")
        agents = tuple(
            a.strip() for a in (_text(env, "HORCRUX_OPERATOR_AGENTS", "*") or "").split(",")
        )
        secret = _text(env, "HORCRUX_OPERATOR_SECRET_ARN") or ""
        age = _integer(env, "HORCRUX_SECRET_MAX_AGE", DEFAULT_SECRET_MAX_AGE_S, minimum=0)
        return cls(
            token_sha256=digest,
            readonly_sha256=readonly,
            agents=tuple(a for a in agents if a) or ("*",),
            secret_arn=secret.strip(),
            max_age_s=age,
        )

    def access(self) -> OperatorAccess | None:
        """The operator's access now (the secret, cached for `max_age_s`), or None."""
        from horcrux.operator_token import OperatorAccess, load_operator_access

        if self.secret_arn:
            return load_operator_access(self.secret_arn, max_age=self.max_age_s)
        if not (self.token_sha256 or self.readonly_sha256):
            return None
        return OperatorAccess(self.token_sha256, self.agents, self.readonly_sha256)


class BrainSettings(_Settings):
    """What every brain a function builds is given (`BrainOptions.settings`)."""

    model: str | None = Field(default=None, description="HORCRUX_LLM_MODEL")
    gate: dict[str, Any] | None = Field(
        default=None, description="the gated Harry's gate (a `GateConfig`, as JSON)"
    )

    def values(self, api_key: str | None) -> dict[str, Any]:
        """The brain factory's settings, with this call's key (None: no key)."""
        out: dict[str, Any] = {}
        if api_key:
            out["api_key"] = api_key
        if self.model:
            out["model"] = self.model
        if self.gate is not None:
            out["gate"] = dict(self.gate)
        return out


class LLMSettings(_Settings):
    """The LLM brains' defaults when a brain is given none: the Claude model and key, and
    the `llm:local` backend's server (`horcrux.agents.llm_config`)."""

    model: str | None = Field(default=None, description="HORCRUX_LLM_MODEL")
    api_key: str | None = Field(default=None, repr=False, description="ANTHROPIC_API_KEY")
    local_url: str | None = Field(default=None, description="HORCRUX_LOCAL_MODEL_URL")
    local_model: str | None = Field(default=None, description="HORCRUX_LOCAL_MODEL")
    local_prefill: str | None = Field(
        default=None, description="HORCRUX_LOCAL_MODEL_PREFILL (None: unset; empty: no prefill)"
    )

    @classmethod
    def from_env(cls, env: Env) -> LLMSettings:
        return cls(
            model=_text(env, "HORCRUX_LLM_MODEL"),
            api_key=_text(env, "ANTHROPIC_API_KEY"),
            local_url=_text(env, "HORCRUX_LOCAL_MODEL_URL"),
            local_model=_text(env, "HORCRUX_LOCAL_MODEL"),
            local_prefill=env.get("HORCRUX_LOCAL_MODEL_PREFILL"),
        )


# ---------------------------------------------------------------- the entropy gate
class GateConfig(BaseModel):
    """The gate's thresholds (bits of excess entropy) and its exploration rate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    low: float = Field(default=1.0, ge=0.0, description="zero-token tier below this")
    high: float = Field(default=2.0, ge=0.0, description="compressed below this, else full")
    epsilon: float = Field(default=0.10, ge=0.0, le=1.0, description="zero-tier exploration")
    measure: Measure = Field(default="min-entropy", description="excess min-entropy or Shannon")
    force: Tier | None = Field(default=None, description="pin every decision to one tier")

    @model_validator(mode="after")
    def _ordered(self) -> GateConfig:
        if self.low > self.high:
            raise ValueError(f"gate thresholds need low <= high, got {self.low} > {self.high}")
        return self

    @classmethod
    def from_mapping(cls, env: Mapping[str, str], **overrides: Any) -> GateConfig:
        """Defaults, then HORCRUX_GATE_{LOW,HIGH,EPSILON,MEASURE,FORCE} from `env` (the
        variables a function's settings were read from, once, at cold start), then keyword
        `overrides`. Empty variables are ignored; a bad value raises ValueError naming the
        variable."""
        choices: dict[str, tuple[str, ...]] = {"force": TIERS, "measure": MEASURES}
        values: dict[str, Any] = {}
        for field in ("low", "high", "epsilon", "measure", "force"):
            name = ENV_PREFIX + field.upper()
            raw = env.get(name, "").strip()
            if not raw:
                continue
            if field in choices:
                if raw not in choices[field]:
                    known = ", ".join(choices[field])
                    raise ValueError(f"{name} must be one of {known}, got {raw!r}")
                values[field] = raw
                continue
            try:
                values[field] = float(raw)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {raw!r}") from None
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> GateConfig:
        """`from_mapping` over `env`, or over the process environment when `env` is None
        (a shim for callers that build a gate without settings: the Lambdas pass their
        gate in the brain settings, read once at cold start)."""
        return cls.from_mapping(os.environ if env is None else env, **overrides)


def _gate(env: Env) -> dict[str, Any]:
    try:
        return GateConfig.from_mapping(env).model_dump(mode="json")
    except ValidationError as exc:  # e.g. low > high: name the variables
        raise SettingsError(f"HORCRUX_GATE_LOW/HIGH/EPSILON: {exc.errors()[0]['msg']}") from None
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


# ---------------------------------------------------------------- one object per function
class ApiSettings(_Settings):
    """The HTTP API function."""

    store: StoreSettings = StoreSettings()
    secret: SecretSettings = SecretSettings()
    operator: OperatorSettings = OperatorSettings()
    brains: BrainSettings = BrainSettings()
    idempotency_table: str = DEFAULT_IDEMPOTENCY_TABLE


class TurnSettings(_Settings):
    """An AI-turn function (one per seat)."""

    seat: SeatName
    store: StoreSettings = StoreSettings()
    secret: SecretSettings = SecretSettings()
    brains: BrainSettings = BrainSettings()


class CompactionSettings(_Settings):
    """The compaction function."""

    store: StoreSettings = StoreSettings()
    results_keep: int = Field(default=DEFAULT_RESULTS_KEEP, ge=1)
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE


def _env(env: Env | None) -> Env:
    return dict(os.environ) if env is None else env


def api_settings(env: Env | None = None) -> ApiSettings:
    """The API function's settings from `env` (default: the process environment, now)."""
    source = _env(env)
    return ApiSettings(
        store=StoreSettings.from_env(source),
        secret=SecretSettings.from_env(source),
        operator=OperatorSettings.from_env(source),
        brains=BrainSettings(model=_text(source, "HORCRUX_LLM_MODEL")),
        idempotency_table=_text(source, "HORCRUX_IDEMPOTENCY_TABLE", DEFAULT_IDEMPOTENCY_TABLE)
        or DEFAULT_IDEMPOTENCY_TABLE,
    )


def turn_settings(seat: SeatName, env: Env | None = None) -> TurnSettings:
    """An AI-turn function's settings; Harry's carry the entropy gate."""
    source = _env(env)
    return TurnSettings(
        seat=seat,
        store=StoreSettings.from_env(source),
        secret=SecretSettings.from_env(source),
        brains=BrainSettings(
            model=_text(source, "HORCRUX_LLM_MODEL"),
            gate=_gate(source) if seat == "harry" else None,
        ),
    )


ENV_SEAT = "HORCRUX_SEAT"
"""The seat an AI-turn function plays (`harry` or `voldemort`): both turn functions run the
same code (lambdas/ai_turn/handler.py), each with its own value."""


def turn_seat(env: Env | None = None) -> SeatName:
    """HORCRUX_SEAT: the seat of this AI-turn function (missing or another value: an error
    naming the variable, so a bad deployment fails at cold start)."""
    raw = (_text(_env(env), ENV_SEAT) or "").strip()
    if raw == "harry":
        return "harry"
    if raw == "voldemort":
        return "voldemort"
    raise SettingsError(f"{ENV_SEAT} must be harry or voldemort, got {raw!r}")


def store_settings(env: Env | None = None) -> StoreSettings:
    """The store's settings alone (a store built with none: the tools, the tests)."""
    return StoreSettings.from_env(_env(env))


def llm_settings(env: Env | None = None) -> LLMSettings:
    """The LLM brains' defaults from `env` (default: the process environment, now): what a
    brain built without a model or a key falls back to."""
    return LLMSettings.from_env(_env(env))


def compaction_settings(env: Env | None = None) -> CompactionSettings:
    source = _env(env)
    return CompactionSettings(
        store=StoreSettings.from_env(source),
        results_keep=_integer(source, "HORCRUX_RESULTS_KEEP", DEFAULT_RESULTS_KEEP, minimum=1),
        metrics_namespace=_text(source, "POWERTOOLS_METRICS_NAMESPACE", DEFAULT_METRICS_NAMESPACE)
        or DEFAULT_METRICS_NAMESPACE,
    )


def echo_config_file(env: Env | None = None) -> str:
    """HORCRUX_ECHO_CONFIG: the ECHO config file to read instead of the shipped echo.toml
    (empty: the shipped one). Read where the config is loaded (`echo.config`)."""
    return (_text(os.environ if env is None else env, "HORCRUX_ECHO_CONFIG") or "").strip()


__all__ = [
    "ENV_PREFIX",
    "ENV_SEAT",
    "MEASURES",
    "TIERS",
    "ApiSettings",
    "BrainSettings",
    "CompactionSettings",
    "GateConfig",
    "LLMSettings",
    "Measure",
    "OperatorSettings",
    "SecretSettings",
    "SettingsError",
    "StoreSettings",
    "TurnSettings",
    "api_settings",
    "compaction_settings",
    "echo_config_file",
    "llm_settings",
    "store_settings",
    "turn_seat",
    "turn_settings",
]
