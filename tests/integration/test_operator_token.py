"""`horcrux.operator_token`: the /memory operator's digest and reach from Secrets Manager
(moto's), cached, failing closed; without a secret (local play), the digest the settings
read."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from horcrux.operator_token import (
    PLACEHOLDER,
    InvalidOperatorSecret,
    OperatorAccess,
    access_from_secret,
    load_operator_access,
)
from horcrux.settings import OperatorSettings, SettingsError

SECRET_ENV = "HORCRUX_OPERATOR_SECRET_ARN"
TOKEN_SHA256_ENV = "HORCRUX_OPERATOR_TOKEN_SHA256"
AGENTS_ENV = "HORCRUX_OPERATOR_AGENTS"

TOKEN = "operator-secret-token-of-at-least-some-length"
DIGEST = hashlib.sha256(TOKEN.encode()).hexdigest()
AWS_ENV = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    parameters.clear_caches()
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")
    parameters.clear_caches()


def test_the_secret_forms() -> None:
    assert access_from_secret(PLACEHOLDER) is None
    assert access_from_secret("  ") is None
    assert access_from_secret(DIGEST.upper()) == OperatorAccess(DIGEST, ("*",))
    scoped = access_from_secret(json.dumps({"sha256": DIGEST, "agents": "planner, gated"}))
    assert scoped == OperatorAccess(DIGEST, ("planner", "gated"))
    listed = access_from_secret(json.dumps({"sha256": DIGEST, "agents": ["planner"]}))
    assert listed == OperatorAccess(DIGEST, ("planner",))
    assert access_from_secret(DIGEST.encode()) == OperatorAccess(DIGEST)
    for bad in (TOKEN, "{not json", json.dumps({"agents": "*"}), json.dumps([DIGEST]), "ab" * 31):
        with pytest.raises(InvalidOperatorSecret):
            access_from_secret(bad)


def test_the_access_checks_the_token_and_the_agent() -> None:
    access = OperatorAccess(DIGEST, ("planner",))
    assert access.accepts(TOKEN)
    assert not access.accepts(TOKEN + "x") and not access.accepts(DIGEST)
    assert access.reaches("planner") and not access.reaches("gated")
    assert OperatorAccess(DIGEST).reaches("anything")


def test_the_digest_is_read_from_the_stacks_secret_and_cached(secrets: Any) -> None:
    arn = secrets.create_secret(Name="horcrux/operator", SecretString=PLACEHOLDER)["ARN"]
    settings = OperatorSettings.from_env({SECRET_ENV: arn})
    assert settings.access() is None  # the stack's initial value: no operator
    parameters.clear_caches()
    secrets.put_secret_value(
        SecretId=arn, SecretString=json.dumps({"sha256": DIGEST, "agents": "planner"})
    )
    access = settings.access()
    assert access == OperatorAccess(DIGEST, ("planner",)) and access.accepts(TOKEN)
    # cached for max_age: a new value is seen only once the cache expires
    secrets.put_secret_value(SecretId=arn, SecretString=PLACEHOLDER)
    assert load_operator_access(arn, max_age=300) == access
    parameters.clear_caches()  # the cache expired
    assert settings.access() is None


def test_it_fails_closed(secrets: Any) -> None:
    gone = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone"
    assert load_operator_access(gone) is None  # cannot be read: refuse, never a default
    arn = secrets.create_secret(Name="horcrux/operator", SecretString=TOKEN)["ARN"]
    assert load_operator_access(arn) is None  # the token, by mistake
    assert load_operator_access("  ") is None  # no secret named


def test_without_a_secret_the_settings_give_the_digest() -> None:
    assert OperatorSettings.from_env({}).access() is None
    env = {TOKEN_SHA256_ENV: DIGEST, AGENTS_ENV: "planner,gated"}
    assert OperatorSettings.from_env(env).access() == OperatorAccess(DIGEST, ("planner", "gated"))
    assert OperatorSettings.from_env({TOKEN_SHA256_ENV: DIGEST}).access() == OperatorAccess(DIGEST)
    with pytest.raises(SettingsError, match=TOKEN_SHA256_ENV):  # the token, not its digest
        OperatorSettings.from_env({TOKEN_SHA256_ENV: TOKEN})
    with pytest.raises(SettingsError, match="HORCRUX_SECRET_MAX_AGE"):
        OperatorSettings.from_env({"HORCRUX_SECRET_MAX_AGE": "soon"})
    assert parameters.base.DEFAULT_PROVIDERS == {}  # no Secrets Manager provider built


def test_the_memory_routes_authorize_against_the_stacks_secret(secrets: Any) -> None:
    from horcrux.echo.ops import OperatorForbidden, OperatorUnauthorized, authorize
    from horcrux.settings import OperatorSettings

    arn = secrets.create_secret(
        Name="horcrux/operator", SecretString=json.dumps({"sha256": DIGEST, "agents": "planner"})
    )["ARN"]
    operator = OperatorSettings.from_env({SECRET_ENV: arn, "HORCRUX_SECRET_MAX_AGE": "0"})
    assert operator.secret_arn == arn and operator.token_sha256 == ""
    authorize(TOKEN, "planner", operator)  # the digest in the secret accepts the token
    with pytest.raises(OperatorForbidden, match="does not reach agent 'gated'"):
        authorize(TOKEN, "gated", operator)
    with pytest.raises(OperatorForbidden, match="not the operator's"):
        authorize("another-token", "planner", operator)
    with pytest.raises(OperatorUnauthorized):
        authorize(None, "planner", operator)
    secrets.put_secret_value(SecretId=arn, SecretString=PLACEHOLDER)  # no operator: refused
    with pytest.raises(OperatorForbidden):
        authorize(TOKEN, "planner", operator)
    local = OperatorSettings.from_env({TOKEN_SHA256_ENV: DIGEST, AGENTS_ENV: "*"})
    authorize(TOKEN, "gated", local)  # without a secret: the digest of local play
