"""cdk-nag (AwsSolutionsChecks) acknowledgements: each finding the stack accepts, and why.

cdk-nag 3 reads CDK's own `Validations.of(scope).acknowledge(...)`; an acknowledgement on a
construct covers the resources under it. The tests run the checks and require no finding
that is not acknowledged here.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

PACK = "AwsSolutions"

REASONS: dict[str, str] = {
    "AwsSolutions-IAM5[Resource::*]": (
        "Only dynamodb:ListStreams (added by the stream event source mapping of the stream "
        "consumers) uses '*': it has no resource-level permissions. Every DynamoDB data "
        "action is on named table ARNs; X-Ray is off, so no xray:* action is granted."
    ),
    "AwsSolutions-L1": (
        "python3.13 is the runtime the layers are built for (cp313 arm64 wheels of numpy, "
        "pydantic-core, jiter); moving to a newer runtime is a deliberate rebuild of the layers "
        "and a re-run of the import tests, not a drift."
    ),
    "AwsSolutions-APIG4": (
        "The game authenticates inside the function, per game: a seat's bearer token (256 "
        "bits, stored only as its sha256) is checked on every move; creating a game, the "
        "lobby, joining a free seat and spectating are public by design (docs/API.md, Auth). "
        "There is no account identity for an API Gateway authorizer to check."
    ),
    "AwsSolutions-SQS3": (
        "This queue is itself the dead-letter destination: the on-failure destination of a "
        "stream event source mapping, holding the metadata of the records it gave up on. A "
        "queue behind it would have nothing to catch."
    ),
    "AwsSolutions-SMG4": (
        "A third-party API key (Anthropic): rotating it means issuing a new key in Anthropic's "
        "console, which no rotation Lambda can do. docs/DEPLOY.md shows how to replace it; the "
        "functions pick a new value up within HORCRUX_SECRET_MAX_AGE (300 s)."
    ),
    "AwsSolutions-SMG4[operator]": (
        "It holds the SHA-256 of an operator token that the operator generates and keeps "
        "(docs/DEPLOY.md): a rotation Lambda cannot hand a new token to a person. Rotating "
        "is storing a new digest; the API refuses the old token within 300 s."
    ),
    # the browser client's hosting (infra/web.py)
    "AwsSolutions-S1": (
        "The web client's bucket holds only the public page's static files, written by the "
        "stack's own deployment; it is private (reached only by CloudFront through origin "
        "access control), so its server access log would record CloudFront's reads alone."
    ),
    "AwsSolutions-CFR1": (
        "A game anyone may play from anywhere: no geographic restriction is wanted for a "
        "static page whose API authenticates every move with a per-game seat token."
    ),
    "AwsSolutions-CFR2": (
        "No WAF web ACL: the distribution serves a few static files from a private bucket; "
        "the API behind the page is throttled by its own stage (rate, burst, POST /games). "
        "A web ACL costs a monthly fee a small game deployment should not carry by default."
    ),
    "AwsSolutions-CFR3": (
        "No CloudFront access logs: the page's files are static and public; the API's own "
        "access log (JSON, per request) records every call the page makes to the game."
    ),
    "AwsSolutions-CFR4": (
        "The distribution uses the default *.cloudfront.net certificate (no custom domain), "
        "for which CloudFront cannot enforce a minimum TLS version; the viewer policy "
        "redirects HTTP to HTTPS and HSTS is sent. A custom domain would set TLSv1.2_2021."
    ),
    "AwsSolutions-IAM5[web]": (
        "The role of aws-cdk-lib's BucketDeployment handler: its grants are the construct's "
        "own, s3 Get/List/Put/Delete object actions (wildcarded action names) on the site "
        "bucket's objects and on the CDK asset bucket's objects, plus "
        "cloudfront:CreateInvalidation/GetInvalidation, which take no resource ARN ('*'); "
        "nothing else."
    ),
    "AwsSolutions-L1[web]": (
        "The runtime of aws-cdk-lib's BucketDeployment handler is chosen by aws-cdk-lib (it "
        "ships the handler code); it moves with the library's version, not with ours."
    ),
}


def acknowledge(scope: IConstruct, rule: str, *, reason: str | None = None) -> None:
    """Acknowledge `rule` on `scope` and the resources under it, for REASONS[reason or rule]
    (`reason`: a key naming one of a rule's reasons, `AwsSolutions-SMG4[operator]`)."""
    why = REASONS[reason or rule]
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=why))
