"""One Lambda function as every function of the stack is built.

python3.13 on arm64, the handler's directory as code and the layers for the rest, an explicit
memory size and timeout, X-Ray tracing off (no code traces: docs/DEPLOY.md), JSON logs into
a log group of its own with a retention, and a role of its own holding only what is granted
to it: log writes to its log group here, then each construct grants the DynamoDB actions,
stream, queue and secret it uses.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import nag, names
from infra.layer import ARCHITECTURE, RUNTIME
from infra.names import FunctionSpec

RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def retention(days: int) -> logs.RetentionDays:
    """CloudWatch Logs' retention for `days` (one of RETENTION's keys)."""
    try:
        return RETENTION[days]
    except KeyError:
        raise ValueError(f"log retention must be one of {sorted(RETENTION)} days") from None


def pascal(name: str) -> str:
    """`harry_turn` -> `HarryTurn` (construct ids)."""
    return "".join(part.capitalize() for part in name.split("_"))


class HorcruxFunction(Construct):
    """A function of the stack (`self.function`), with its role and log group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        layers: list[lambda_.ILayerVersion],
        environment: dict[str, str],
        log_retention_days: int,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=retention(log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Horcrux Hunt {spec.name} function (least privilege)",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=lambda_.Code.from_asset(str(spec.code_dir), exclude=["__pycache__", "*.pyc"]),
            handler=spec.handler,
            description=spec.description,
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_s),
            layers=layers,
            environment={
                names.ENV_METRICS_NAMESPACE: names.METRICS_NAMESPACE,
                **dict(spec.environment),
                **environment,
            },
            role=self.role,
            tracing=lambda_.Tracing.DISABLED,  # no X-Ray: docs/DEPLOY.md, Tracing
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            log_group=self.log_group,
            reserved_concurrent_executions=reserved_concurrency,
        )
        if spec.name != names.API.name:  # the stream mapping's dynamodb:ListStreams
            nag.acknowledge(self.role, "AwsSolutions-IAM5[Resource::*]")
        nag.acknowledge(self.function, "AwsSolutions-L1")

    def grant_dynamodb(
        self, actions: tuple[str, ...], resources: list[str], *, sid: str | None = None
    ) -> None:
        """Allow exactly `actions` on exactly `resources` (table or index ARNs)."""
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=resources, sid=sid)
        )
