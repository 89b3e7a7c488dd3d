"""Every name, number and setting of the stack in one place.

The constructs (storage, api, turns, monitoring) read their names from here, the tests assert
against the same values, and `Settings.from_context` reads the knobs a deployer may change
with `npx cdk deploy -c horcrux:<key>=<value>` (or in cdk.json's `context`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from constructs import Node

ROOT: Final = Path(__file__).resolve().parent.parent
LAMBDAS_DIR: Final = ROOT / "lambdas"

STACK_ID: Final = "HorcruxHunt"
STACK_DESCRIPTION: Final = (
    "Horcrux Hunt: HTTP API, AI turn and compaction Lambdas, DynamoDB event store"
)

# ------------------------------------------------------------------ environment variables
# the names the handlers read (shared/horcrux/store/dynamodb.py, api/idempotency.py, secrets.py)
ENV_EVENTS_TABLE: Final = "HORCRUX_EVENTS_TABLE"
ENV_GAMES_TABLE: Final = "HORCRUX_GAMES_TABLE"
ENV_IDEMPOTENCY_TABLE: Final = "HORCRUX_IDEMPOTENCY_TABLE"
ENV_SECRET: Final = "HORCRUX_ANTHROPIC_SECRET_ARN"
ENV_TTL_DAYS: Final = "HORCRUX_TTL_DAYS"
ENV_METRICS_NAMESPACE: Final = "POWERTOOLS_METRICS_NAMESPACE"
ENV_SEAT: Final = "HORCRUX_SEAT"  # the AI-turn function's seat (shared/horcrux/settings.py)
# the /memory routes' operator token (shared/horcrux/operator_token.py; docs/DEPLOY.md): a
# secret the stack owns (starting as `unset`: every call refused), holding only the token's
# SHA-256; the API function gets its ARN. CloudFormation never rewrites a value the template
# did not change, so a plain redeploy keeps what the operator stored.
ENV_OPERATOR_SECRET: Final = "HORCRUX_OPERATOR_SECRET_ARN"
# no longer read (a one-off `-c` value was dropped by the next deploy): the synth refuses them
RETIRED_CONTEXT: Final = {
    "horcrux:operatorTokenSha256": "store the digest in the stack's operator secret",
    "horcrux:operatorAgents": "store the agents in the stack's operator secret (JSON)",
}

# ------------------------------------------------------------------ DynamoDB (docs/STORE.md)
EVENTS_PK: Final = "pk"  # S: GAME#<id>
EVENTS_SK: Final = "seq"  # N
GAMES_PK: Final = "pk"  # S
GAMES_SK: Final = "sk"  # S
LOBBY_INDEX: Final = "lobby"
LOBBY_PK: Final = "lobby"
LOBBY_SK: Final = "lobby_sk"
LOBBY_PROJECTION: Final = ("rules", "open_seats", "created", "ttl", "names")
TTL_ATTRIBUTE: Final = "ttl"
IDEMPOTENCY_PK: Final = "id"
IDEMPOTENCY_TTL_ATTRIBUTE: Final = "expiration"

# ------------------------------------------------------------------ metrics
METRICS_NAMESPACE: Final = "HorcruxHunt"
COMPACTION_SERVICE: Final = "compaction"  # Powertools' `service` dimension of its metrics
REPLAY_MISMATCH_METRIC: Final = "ReplayMismatch"
# both AI-turn functions run lambdas/ai_turn/handler.py, whose `service` is chosen by seat
HARRY_TURN_SERVICE: Final = "horcrux-harry-turn"
VOLDEMORT_TURN_SERVICE: Final = "horcrux-voldemort-turn"
# cross-game memory (docs/ECHO.md): the compaction's leaky bucket, an AI Harry's start-up
MEMORY_LEAK_METRIC: Final = "MemoryLeakPrevented"  # service: compaction
MEMORY_EVICTED_METRIC: Final = "MemoryEvicted"  # the cap evicted items (service: compaction)
MEMORY_CONFLICT_METRIC: Final = "MemoryCorrectionConflict"  # evidence contradicts a correction
MEMORY_STARTUP_METRICS: Final = ("MemoryRead", "MemoryRebuilt", "MemoryUnavailable")
# any AI turn whose memory pin (the snapshot's) did not decode: harry_turn and voldemort_turn
MEMORY_PIN_METRIC: Final = "MemoryPinUnreadable"
MEMORY_COPIED_METRIC: Final = "MemoryCopied"  # a Voldemort's copy of Harry's brain adopted it
PIN_ALARM_SERVICES: Final = {
    "harry_turn": HARRY_TURN_SERVICE,
    "voldemort_turn": VOLDEMORT_TURN_SERVICE,
}
# any AI turn whose seat's stored brain spec no longer builds: its default brain played
# (`horcrux.api.stream_handler.BRAIN_REPLACED_METRIC`), both turn functions
BRAIN_REPLACED_METRIC: Final = "AiBrainReplaced"

# ------------------------------------------------------------------ stream consumers
# the compaction's filter (docs/COMPACTION.md): INSERTs of a final event only; TTL deletions
# are REMOVEs, so they never reach it (nor the turn functions, filtered on INSERT too)
FINAL_EVENT_FILTER: Final[dict[str, Any]] = {
    "eventName": ["INSERT"],
    "dynamodb": {"NewImage": {"winner": {"S": [{"exists": True}]}}},
}
STREAM_BATCH_SIZE: Final = 10
STREAM_RETRY_ATTEMPTS: Final = 3
TURN_MAX_RECORD_AGE_S: Final = 3600  # an AI turn older than an hour goes to the queue
COMPACTION_MAX_RECORD_AGE_S: Final = 86_400  # the stream keeps records 24 h anyway
TURN_PARALLELIZATION: Final = 5  # records of one game share a partition key: still in order
COMPACTION_PARALLELIZATION: Final = 1
DLQ_RETENTION_DAYS: Final = 14

# ------------------------------------------------------------------ HTTP API (docs/API.md)
_ROUTES: Final = (
    ("POST", "/games"),
    ("GET", "/games"),
    ("POST", "/games/{id}/seats/{seat}"),
    ("GET", "/games/{id}"),
    ("POST", "/games/{id}/moves"),
    ("GET", "/games/{id}/events"),
    ("GET", "/games/{id}/replay"),
    ("GET", "/games/{id}/belief"),
    ("GET", "/openapi.json"),
    ("GET", "/brains"),  # the AI brains per seat (the browser client's new-game form)
    # ECHO's operator routes (docs/ECHO.md)
    ("GET", "/memory/{agent}"),
    ("GET", "/memory/{agent}/search"),
    ("GET", "/memory/{agent}/export"),
    ("GET", "/memory/{agent}/audit"),
    ("GET", "/memory/{agent}/items/{item_id}"),
    ("GET", "/memory/{agent}/items/{item_id}/history"),
    ("DELETE", "/memory/{agent}/items/{item_id}"),
    ("POST", "/memory/{agent}/items/{item_id}/{verdict}"),
    ("POST", "/memory/{agent}/quarantine/{item_id}/{action}"),
    ("POST", "/memory/corrections"),
    ("DELETE", "/memory/{agent}"),
    # a player's own memory, with their player key (docs/API.md)
    ("GET", "/players/{player}/memory"),
    ("DELETE", "/players/{player}/memory"),
)
API_ROUTES: Final = _ROUTES + tuple(("HEAD", path) for method, path in _ROUTES if method == "GET")
"""Every route of the app, and HEAD wherever GET is (the app answers it as GET, no body)."""
CORS_HEADERS: Final = (
    "authorization",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-none-match",
)
CORS_EXPOSE_HEADERS: Final = ("etag", "retry-after")
"""What a page may read of a response: the game's version (for If-Match) and the wait of a
429 or 503."""
CREATE_ROUTE: Final = "POST /games"
"""Throttled on its own (`create_rate_limit`): each create may start AI games."""
CORS_MAX_AGE_S: Final = 600
ACCESS_LOG_FORMAT: Final = json.dumps(
    {
        "requestId": "$context.requestId",
        "requestTime": "$context.requestTime",
        "ip": "$context.identity.sourceIp",
        "method": "$context.httpMethod",
        "routeKey": "$context.routeKey",
        "path": "$context.path",
        "status": "$context.status",
        "responseLength": "$context.responseLength",
        "responseLatency": "$context.responseLatency",
        "integrationLatency": "$context.integrationLatency",
        "integrationStatus": "$context.integrationStatus",
        "integrationError": "$context.integrationErrorMessage",
        "error": "$context.error.message",
    }
)


# ------------------------------------------------------------------ the four functions
@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function: where its handler is and what it may use."""

    name: str  # the construct id's stem (and the code's directory under lambdas/ by default)
    handler: str
    memory_mb: int
    timeout_s: int  # <= 30: the turn handlers derive their LLM deadline from it
    description: str
    llm: bool = False  # gets the Anthropic layer (the SDK) and may call Anthropic
    reads_secret: bool = False  # gets the secret's ARN and read access to it
    reserved: bool = False  # capped by Settings.turn_reserved_concurrency, when one is set
    code: str | None = None  # the directory under lambdas/ (None: `name`)
    environment: tuple[tuple[str, str], ...] = ()  # what tells functions of one code apart

    @property
    def code_dir(self) -> Path:
        return LAMBDAS_DIR / (self.code or self.name)


API = FunctionSpec(
    "api",
    "handler.lambda_handler",
    memory_mb=1024,
    timeout_s=10,
    description="Horcrux Hunt HTTP API (API Gateway HTTP API, payload v2)",
    reads_secret=True,  # refuses an LLM seat (422) when no key exists
)
HARRY_TURN = FunctionSpec(
    "harry_turn",
    "handler.lambda_handler",
    memory_mb=1024,
    timeout_s=30,
    description="Horcrux Hunt AI Harry: one turn per events-table stream record",
    llm=True,
    reads_secret=True,
    reserved=True,
    code="ai_turn",
    environment=((ENV_SEAT, "harry"),),
)
VOLDEMORT_TURN = FunctionSpec(
    "voldemort_turn",
    "handler.lambda_handler",
    memory_mb=512,
    timeout_s=30,
    description="Horcrux Hunt AI Voldemort: one turn per events-table stream record",
    llm=True,
    reads_secret=True,
    reserved=True,
    code="ai_turn",
    environment=((ENV_SEAT, "voldemort"),),
)
COMPACTION = FunctionSpec(
    "compaction",
    "handler.handler",
    memory_mb=512,
    timeout_s=30,
    description="Horcrux Hunt compaction: the end-of-game record and the snapshot check",
)
FUNCTIONS: Final = (API, HARRY_TURN, VOLDEMORT_TURN, COMPACTION)
TURN_SEATS: Final = {"harry": HARRY_TURN, "voldemort": VOLDEMORT_TURN}

# ------------------------------------------------------------------ the least privilege
# exactly the DynamoDB actions each function's code sends (shared/horcrux/store/dynamodb.py):
# a TransactWriteItems of Puts is authorised as dynamodb:PutItem on each table it writes
DYNAMO_ACTIONS: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "api": {
        # create (transaction: event + snapshot), join (PutItem), move (transaction),
        # GET /games/{id} (GetItem), events and replay (Query), the lobby (Query on the index);
        # the /memory routes (GetItem, PutItem; DELETE /memory: DeleteItem)
        "games": ("dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"),
        "lobby": ("dynamodb:Query",),
        "events": ("dynamodb:PutItem", "dynamodb:Query"),
        # Powertools' DynamoDBPersistenceLayer
        "idempotency": (
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ),
    },
    # load (GetItem) + commit_turn (transaction: event + snapshot)
    "harry_turn": {
        "games": ("dynamodb:GetItem", "dynamodb:PutItem"),
        "events": ("dynamodb:PutItem",),
    },
    "voldemort_turn": {
        "games": ("dynamodb:GetItem", "dynamodb:PutItem"),
        "events": ("dynamodb:PutItem",),
    },
    # the log (Query), the snapshot and the scope item (GetItem), the record (PutItem and a
    # transaction of Puts), the repair (PutItem)
    "compaction": {
        "games": ("dynamodb:GetItem", "dynamodb:PutItem"),
        "events": ("dynamodb:Query",),
    },
}

# ------------------------------------------------------------------ alarms
ALARM_PERIOD_S: Final = 300
DURATION_ALARM_SHARE: Final = 0.8  # p99 duration alarms at 80% of the function's timeout
ITERATOR_AGE_ALARM_MS: Final = 60_000
API_5XX_ALARM: Final = 1
DLQ_DEPTH_ALARM: Final = 1

# ------------------------------------------------------------------ outputs
OUTPUT_API_URL: Final = "ApiUrl"
OUTPUT_GAMES_TABLE: Final = "GamesTableName"
OUTPUT_EVENTS_TABLE: Final = "EventsTableName"
OUTPUT_IDEMPOTENCY_TABLE: Final = "IdempotencyTableName"
OUTPUT_SECRET: Final = "AnthropicSecretArn"
OUTPUT_OPERATOR_SECRET: Final = "OperatorTokenSecretArn"
OUTPUT_DASHBOARD: Final = "DashboardName"
OUTPUT_ALARM_TOPIC: Final = "AlarmTopicArn"
OUTPUT_WEB_URL: Final = "WebUrl"  # the browser client (CloudFront), infra/web.py


# ------------------------------------------------------------------ deploy-time settings
@dataclass(frozen=True)
class Settings:
    """The knobs, from CDK context `horcrux:<key>` (defaults below)."""

    api_rate_limit: int = 50  # steady requests per second, whole stage
    api_burst_limit: int = 100
    create_rate_limit: int = 5  # POST /games per second, whole stage (each may start AI games)
    create_burst_limit: int = 10
    cors_origins: tuple[str, ...] = ("*",)
    # per AI turn function; 0 (default): no reservation, so a new account (whose unreserved
    # concurrency must stay >= 10 out of a low quota) can deploy; opt in with -c
    turn_reserved_concurrency: int = 0
    log_retention_days: int = 30
    ttl_days: int = 30
    retain_data: bool = True  # tables survive `cdk destroy` (RETAIN) unless false
    alarm_email: str | None = None

    @classmethod
    def from_context(cls, node: Node) -> Settings:
        def get(key: str, default: Any) -> Any:
            value = node.try_get_context(f"horcrux:{key}")
            return default if value is None else value

        origins = get("corsOrigins", list(cls.cors_origins))
        if isinstance(origins, str):
            origins = [o.strip() for o in origins.split(",") if o.strip()]
        retain = get("retainData", cls.retain_data)
        for key, instead in RETIRED_CONTEXT.items():
            if node.try_get_context(key) is not None:
                raise ValueError(
                    f"{key} is no longer a setting (the next deploy without it dropped it): "
                    f"{instead}, output {OUTPUT_OPERATOR_SECRET} (docs/DEPLOY.md)"
                )
        reserved = int(get("turnReservedConcurrency", cls.turn_reserved_concurrency))
        if reserved < 0:
            raise ValueError(f"horcrux:turnReservedConcurrency must be >= 0, got {reserved}")
        return cls(
            api_rate_limit=int(get("apiRateLimit", cls.api_rate_limit)),
            api_burst_limit=int(get("apiBurstLimit", cls.api_burst_limit)),
            create_rate_limit=int(get("createRateLimit", cls.create_rate_limit)),
            create_burst_limit=int(get("createBurstLimit", cls.create_burst_limit)),
            cors_origins=tuple(str(o) for o in origins),
            turn_reserved_concurrency=reserved,
            log_retention_days=int(get("logRetentionDays", cls.log_retention_days)),
            ttl_days=int(get("ttlDays", cls.ttl_days)),
            retain_data=retain if isinstance(retain, bool) else str(retain).lower() == "true",
            alarm_email=get("alarmEmail", None) or None,
        )
