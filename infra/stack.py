"""The stack: storage, layers, the HTTP API, the stream consumers, monitoring.

Environment-agnostic (no account or region is looked up: `cdk synth` calls nothing), with
cdk-nag's AwsSolutions checks registered on the app: a finding fails the synth unless it is
acknowledged (infra/nag.py holds each acknowledgement's reason).
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import App, CfnOutput, SecretValue, Stack, Validations
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from horcrux.operator_token import PLACEHOLDER as OPERATOR_PLACEHOLDER
from horcrux.secrets import PLACEHOLDER
from infra import nag, names
from infra.api import HttpApi
from infra.layer import Layers
from infra.monitoring import Monitoring
from infra.names import Settings
from infra.storage import Storage
from infra.turns import StreamConsumers
from infra.web import WebHosting


class HorcruxStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description=names.STACK_DESCRIPTION, **kwargs)
        settings = Settings.from_context(self.node)
        self.settings = settings
        self.storage = Storage(self, "Storage", settings=settings)
        self.layers = Layers(self, "Layers")
        self.secret = secretsmanager.Secret(
            self,
            "AnthropicApiKey",
            description=(
                "Horcrux Hunt: the Anthropic API key of the LLM brains; "
                f"'{PLACEHOLDER}' = no key (the planner plays)"
            ),
            secret_string_value=SecretValue.unsafe_plain_text(PLACEHOLDER),
        )
        nag.acknowledge(self.secret, "AwsSolutions-SMG4")
        # the /memory operator token's SHA-256 (horcrux.operator_token), set by the operator
        # once; CloudFormation leaves a value it did not change, so redeploys keep it
        self.operator_secret = secretsmanager.Secret(
            self,
            "OperatorToken",
            description=(
                "Horcrux Hunt: the SHA-256 (hex) of the /memory routes' operator token, or "
                f'{{"sha256": ..., "agents": ...}}; \'{OPERATOR_PLACEHOLDER}\' = no operator'
            ),
            secret_string_value=SecretValue.unsafe_plain_text(OPERATOR_PLACEHOLDER),
        )
        nag.acknowledge(
            self.operator_secret, "AwsSolutions-SMG4", reason="AwsSolutions-SMG4[operator]"
        )
        self.http = HttpApi(
            self,
            "Api",
            settings=settings,
            storage=self.storage,
            core_layer=self.layers.core,
            secret=self.secret,
            operator_secret=self.operator_secret,
        )
        self.consumers = StreamConsumers(
            self,
            "Turns",
            settings=settings,
            storage=self.storage,
            core_layer=self.layers.core,
            llm_layer=self.layers.llm,
            secret=self.secret,
        )
        self.web = WebHosting(self, "Web", settings=settings, api_url=self.http.url)
        self.functions = [self.http.handler, *self.consumers.functions.values()]
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            settings=settings,
            storage=self.storage,
            api=self.http,
            functions=self.functions,
            dead_letter_queues=self.consumers.dead_letter_queues,
        )
        self._outputs()

    def _outputs(self) -> None:
        outputs = {
            names.OUTPUT_API_URL: (self.http.url, "the HTTP API's base URL"),
            names.OUTPUT_GAMES_TABLE: (self.storage.games.table_name, "games table"),
            names.OUTPUT_EVENTS_TABLE: (self.storage.events.table_name, "events table"),
            names.OUTPUT_IDEMPOTENCY_TABLE: (
                self.storage.idempotency.table_name,
                "idempotency table",
            ),
            names.OUTPUT_SECRET: (self.secret.secret_arn, "set the Anthropic key here"),
            names.OUTPUT_OPERATOR_SECRET: (
                self.operator_secret.secret_arn,
                "set the /memory operator token's SHA-256 here",
            ),
            names.OUTPUT_DASHBOARD: (
                self.monitoring.dashboard.dashboard_name,
                "CloudWatch dashboard",
            ),
            names.OUTPUT_ALARM_TOPIC: (self.monitoring.topic.topic_arn, "alarm notifications"),
            names.OUTPUT_WEB_URL: (self.web.url, "open this in a browser to play"),
        }
        for key, (value, description) in outputs.items():
            CfnOutput(self, key, value=value, description=description)


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (the CLI passes it itself; tests and scripts pass it with this)."""
    context: dict[str, Any] = json.loads((names.ROOT / "cdk.json").read_text())["context"]
    return context


def build_app(context: dict[str, Any] | None = None) -> tuple[App, HorcruxStack]:
    """The app with its one stack and cdk-nag's AwsSolutions checks registered."""
    app = App(context=context)
    stack = HorcruxStack(app, names.STACK_ID)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack
