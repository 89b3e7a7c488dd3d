"""The HTTP API: API Gateway HTTP API (payload v2) -> the `api` function.

One route per operation of docs/API.md (nothing else reaches the function), CORS for a
browser client (the headers the API reads: Authorization, Content-Type, Idempotency-Key),
the `$default` stage with throttling (rate and burst) and JSON access logs.
"""

from __future__ import annotations

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import nag, names
from infra.functions import HorcruxFunction, retention
from infra.names import Settings
from infra.storage import Storage
from infra.turns import grant_tables, table_environment


@jsii.implements(apigwv2.IAccessLogSettings)
class AccessLogs:
    """The stage's access log settings: JSON lines (`names.ACCESS_LOG_FORMAT`) into a group."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return apigw.AccessLogFormat.custom(names.ACCESS_LOG_FORMAT)


class HttpApi(Construct):
    """The API function (`self.handler`), the HTTP API (`self.api`) and its stage."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        storage: Storage,
        core_layer: lambda_.ILayerVersion,
        secret: secretsmanager.ISecret,
        operator_secret: secretsmanager.ISecret,
    ) -> None:
        super().__init__(scope, construct_id)
        self.handler = HorcruxFunction(
            self,
            "Api",
            spec=names.API,
            layers=[core_layer],
            environment={
                **table_environment(storage),
                names.ENV_IDEMPOTENCY_TABLE: storage.idempotency.table_name,
                names.ENV_TTL_DAYS: str(settings.ttl_days),
                names.ENV_SECRET: secret.secret_arn,
                names.ENV_OPERATOR_SECRET: operator_secret.secret_arn,
            },
            log_retention_days=settings.log_retention_days,
        )
        grant_tables(self.handler, storage)
        secret.grant_read(self.handler.role)
        operator_secret.grant_read(self.handler.role)

        self.api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="Horcrux Hunt",
            create_default_stage=False,
            cors_preflight=apigwv2.CorsPreflightOptions(
                allow_origins=list(settings.cors_origins),
                allow_methods=[
                    apigwv2.CorsHttpMethod.GET,
                    apigwv2.CorsHttpMethod.POST,
                    apigwv2.CorsHttpMethod.DELETE,
                    apigwv2.CorsHttpMethod.OPTIONS,
                ],
                allow_headers=list(names.CORS_HEADERS),
                expose_headers=list(names.CORS_EXPOSE_HEADERS),
                max_age=Duration.seconds(names.CORS_MAX_AGE_S),
            ),
        )
        integration = integrations.HttpLambdaIntegration(
            "ApiIntegration",
            self.handler.function,
            payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0,
        )
        routes: dict[str, apigwv2.HttpRoute] = {}
        for method, path in names.API_ROUTES:
            for route in self.api.add_routes(
                path=path, methods=[apigwv2.HttpMethod(method)], integration=integration
            ):
                nag.acknowledge(route, "AwsSolutions-APIG4")
                routes[f"{method} {path}"] = route

        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention(settings.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.api,
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=settings.api_rate_limit, burst_limit=settings.api_burst_limit
            ),
            access_log_settings=AccessLogs(self.access_logs),
        )
        # the L2 stage has no per-route settings: creating games (each may start AI games
        # and their LLM bill) gets a tighter limit than the stage's default
        cfn_stage = self.stage.node.default_child
        assert isinstance(cfn_stage, apigwv2.CfnStage)
        self.stage.node.add_dependency(routes[names.CREATE_ROUTE])  # the key must exist
        cfn_stage.route_settings = {
            names.CREATE_ROUTE: {
                "ThrottlingRateLimit": settings.create_rate_limit,
                "ThrottlingBurstLimit": settings.create_burst_limit,
            }
        }

    @property
    def url(self) -> str:
        """The API's base URL (the `$default` stage serves the root)."""
        return self.api.api_endpoint
