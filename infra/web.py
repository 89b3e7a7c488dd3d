"""The browser client's hosting: a private S3 bucket behind CloudFront (origin access control).

The site is `horcrux_tools.web`'s files as `horcrux serve` serves them (`write_site`: content-hashed
assets, index.html pointing at them), uploaded by two `BucketDeployment`s: the hashed assets
cached for a year as immutable, index.html and `config.json` (the API's URL, read by the
page at start) revalidated on every load (`no-cache`). Old hashed assets are kept (no
prune): a page loaded before a deploy still finds its script. CloudFront adds the security
headers (`ResponseHeadersPolicy`: the page's CSP, allowing calls to the API's origin, HSTS,
nosniff, frame denial, no referrer). No Docker: the deployments' handler is the Lambda
asset aws-cdk-lib ships; its role is ours (no managed policy, logs to one log group).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from horcrux_tools.web.static import (
    CONFIG,
    IMMUTABLE,
    INDEX,
    NO_CACHE,
    content_security_policy,
    write_site,
)
from infra import nag, names
from infra.functions import retention
from infra.names import Settings

HSTS_S = 63_072_000  # two years


class WebHosting(Construct):
    """`self.bucket` (private), `self.distribution` and `self.url` (https://<domain>/)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, api_url: str
    ) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Site",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=False,
            removal_policy=RemovalPolicy.RETAIN if settings.retain_data else RemovalPolicy.DESTROY,
        )
        nag.acknowledge(self.bucket, "AwsSolutions-S1")
        headers = cloudfront.ResponseHeadersPolicy(
            self,
            "Headers",
            comment="Horcrux Hunt web client: CSP and security headers",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=content_security_policy(api_url), override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.seconds(HSTS_S),
                    include_subdomains=True,
                    override=True,
                ),
            ),
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="Horcrux Hunt web client",
            default_root_object=INDEX,
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=headers,
                compress=True,
            ),
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
        )
        for rule in ("AwsSolutions-CFR1", "AwsSolutions-CFR2", "AwsSolutions-CFR3"):
            nag.acknowledge(self.distribution, rule)
        nag.acknowledge(self.distribution, "AwsSolutions-CFR4")
        self.url = f"https://{self.distribution.distribution_domain_name}/"

        # the deployments' handler: our role (inline, least privilege), one log group
        log_group = logs.LogGroup(
            self,
            "DeployLogs",
            retention=retention(settings.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            "DeployRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Horcrux Hunt: uploads the web client to its bucket",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        site = s3deploy.Source.asset(str(write_site(names.ROOT / "build" / "web")))
        assets = s3deploy.BucketDeployment(
            self,
            "Assets",
            destination_bucket=self.bucket,
            sources=[site],
            exclude=[INDEX, CONFIG],
            cache_control=[s3deploy.CacheControl.from_string(IMMUTABLE)],
            prune=False,
            role=role,
            log_group=log_group,
            memory_limit=256,
        )
        pages = s3deploy.BucketDeployment(
            self,
            "Pages",
            destination_bucket=self.bucket,
            sources=[site, s3deploy.Source.json_data(CONFIG, {"apiUrl": api_url})],
            exclude=["*"],
            include=[INDEX, CONFIG],
            cache_control=[s3deploy.CacheControl.from_string(NO_CACHE)],
            prune=False,
            role=role,
            log_group=log_group,
            memory_limit=256,
            distribution=self.distribution,  # invalidated after each upload
            distribution_paths=[f"/{INDEX}", f"/{CONFIG}", "/"],
        )
        pages.node.add_dependency(assets)  # the new index.html only once its assets exist
        bucket_id = Stack.of(self).get_logical_id(self.bucket.node.default_child)  # type: ignore[arg-type]
        for finding in (
            *(
                f"Action::s3:{a}*"
                for a in ("Abort", "DeleteObject", "GetBucket", "GetObject", "List")
            ),
            f"Resource::<{bucket_id}.Arn>/*",
            "Resource::*",  # the CloudFront invalidation (no resource-level permission)
            "Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*",
        ):
            nag.acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason="AwsSolutions-IAM5[web]")
        for child in self.node.scope.node.children if self.node.scope else ():
            if child.node.id.startswith("Custom::CDKBucketDeployment"):
                nag.acknowledge(child, "AwsSolutions-L1", reason="AwsSolutions-L1[web]")


__all__ = ["WebHosting"]
