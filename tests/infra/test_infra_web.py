"""The browser client's hosting in the synthesised stack (infra/web.py): a private,
encrypted, SSL-only bucket read by CloudFront through origin access control, the page's
security headers, the deployments (hashed assets immutable, index.html + config.json
no-cache) and the `WebUrl` output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "shared", ROOT):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template  # noqa: E402

from horcrux_tools.web.static import IMMUTABLE, NO_CACHE, site_files  # noqa: E402
from infra import names  # noqa: E402
from infra.stack import HorcruxStack, build_app, cdk_json_context  # noqa: E402

pytestmark = pytest.mark.synth
Json = dict[str, Any]


@pytest.fixture(scope="module")
def synth() -> Iterator[tuple[HorcruxStack, Json]]:
    _, stack = build_app(cdk_json_context())
    yield stack, Template.from_stack(stack).to_json()


def _of(doc: Json, kind: str) -> dict[str, Json]:
    return {k: r for k, r in doc["Resources"].items() if r["Type"] == kind}


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_the_bucket_is_private_encrypted_and_ssl_only(synth: tuple[HorcruxStack, Json]) -> None:
    stack, doc = synth
    key = stack.get_logical_id(stack.web.bucket.node.default_child)  # type: ignore[arg-type]
    props = doc["Resources"][key]["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    (policy,) = [
        p
        for p in _of(doc, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": key}
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    deny = [s for s in statements if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in deny)
    allow = [s for s in statements if s["Effect"] == "Allow"]
    # only CloudFront reads, and only for this distribution (origin access control)
    assert allow and all(s["Principal"] == {"Service": "cloudfront.amazonaws.com"} for s in allow)
    dist = stack.get_logical_id(stack.web.distribution.node.default_child)  # type: ignore[arg-type]
    for s in allow:
        assert s["Action"] == "s3:GetObject"
        assert dist in _text(s["Condition"]["StringEquals"]["AWS:SourceArn"])


def test_the_distribution_uses_oac_https_index_and_the_csp(
    synth: tuple[HorcruxStack, Json],
) -> None:
    stack, doc = synth
    (oac,) = _of(doc, "AWS::CloudFront::OriginAccessControl").values()
    config = oac["Properties"]["OriginAccessControlConfig"]
    assert config["OriginAccessControlOriginType"] == "s3"
    assert config["SigningBehavior"] == "always"
    (dist,) = _of(doc, "AWS::CloudFront::Distribution").values()
    props = dist["Properties"]["DistributionConfig"]
    assert props["DefaultRootObject"] == "index.html"
    (origin,) = props["Origins"]
    assert "OriginAccessControlId" in origin and origin["S3OriginConfig"] == {
        "OriginAccessIdentity": ""
    }
    behavior = props["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
    (policy,) = _of(doc, "AWS::CloudFront::ResponseHeadersPolicy").values()
    security = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = _text(security["ContentSecurityPolicy"]["ContentSecurityPolicy"])
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    api_key = stack.get_logical_id(stack.http.api.node.default_child)  # type: ignore[arg-type]
    assert api_key in csp  # connect-src names the API's own URL
    assert security["FrameOptions"]["FrameOption"] == "DENY"
    assert security["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31_536_000
    assert behavior["ResponseHeadersPolicyId"] == {
        "Ref": stack.get_logical_id(policy_construct(stack))
    }


def policy_construct(stack: HorcruxStack) -> Any:
    return stack.web.node.find_child("Headers").node.default_child


def test_the_deployments_upload_the_site_and_the_api_url(synth: tuple[HorcruxStack, Json]) -> None:
    stack, doc = synth
    deployments = list(_of(doc, "Custom::CDKBucketDeployment").values())
    by_cache = {_text(d["Properties"].get("SystemMetadata")): d["Properties"] for d in deployments}
    assert len(deployments) == 2
    immutable = next(p for k, p in by_cache.items() if IMMUTABLE in k)
    pages = next(p for k, p in by_cache.items() if f'"{NO_CACHE}"' in k)
    assert immutable["Prune"] is False and pages["Prune"] is False
    assert "index.html" in _text(immutable.get("Exclude"))
    assert _text(pages["Include"]) == _text(["index.html", "config.json"])
    # config.json carries the API's URL (json_data: a deploy-time substitution)
    api_key = stack.get_logical_id(stack.http.api.node.default_child)  # type: ignore[arg-type]
    assert api_key in _text(pages["SourceMarkersConfig"]) or api_key in _text(
        pages["SourceMarkers"]
    )
    assert "DistributionId" in pages  # the pages' upload invalidates the cache
    # the site directory synthesised is what horcrux serve serves
    assert {p.name for p in (ROOT / "build" / "web").iterdir()} == set(site_files())


def test_the_web_url_output_and_no_managed_policy_on_the_deploy_role(
    synth: tuple[HorcruxStack, Json],
) -> None:
    stack, doc = synth
    output = doc["Outputs"][names.OUTPUT_WEB_URL]
    dist = stack.get_logical_id(stack.web.distribution.node.default_child)  # type: ignore[arg-type]
    assert _text(output["Value"]) == _text(
        {"Fn::Join": ["", ["https://", {"Fn::GetAtt": [dist, "DomainName"]}, "/"]]}
    )
    for role in _of(doc, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]
