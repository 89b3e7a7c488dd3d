"""`horcrux.secrets`: the Anthropic key from Secrets Manager (moto's), cached, exported."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from horcrux.agents import HARRY_BRAINS, BrainOptions
from horcrux.agents.gated import _has_key
from horcrux.rules import CLASSIC
from horcrux.secrets import (
    API_KEY_ENV,
    MAX_AGE_ENV,
    PLACEHOLDER,
    SECRET_ENV,
    key_from_secret,
    load_anthropic_key,
    max_age_from_env,
)

NAME = "horcrux/anthropic"


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    monkeypatch.delenv(MAX_AGE_ENV, raising=False)
    parameters.clear_caches()  # Powertools' provider (and its boto3 client) and cache
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="eu-west-1")
        yield client
    parameters.clear_caches()


def test_without_a_configured_secret_nothing_is_read(
    monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    assert load_anthropic_key() is False
    monkeypatch.setenv(API_KEY_ENV, "sk-local")
    assert load_anthropic_key() is True  # a local run's key is left alone
    assert parameters.base.DEFAULT_PROVIDERS == {}  # no Secrets Manager provider built


def test_the_key_is_exported_for_the_brain_factory(
    monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    arn = secrets.create_secret(Name=NAME, SecretString="sk-ant-test")["ARN"]
    monkeypatch.setenv(SECRET_ENV, arn)
    assert load_anthropic_key() is True
    assert os.environ[API_KEY_ENV] == "sk-ant-test"
    assert _has_key(BrainOptions(rules=CLASSIC))  # the gated brain will call the LLM
    HARRY_BRAINS.create("llm", CLASSIC, for_seat=True)  # no longer `llm_unavailable`


def test_the_secret_is_read_once_per_max_age(monkeypatch: pytest.MonkeyPatch, secrets: Any) -> None:
    secrets.create_secret(Name=NAME, SecretString="sk-first")
    monkeypatch.setenv(SECRET_ENV, NAME)  # a name works as well as an ARN
    monkeypatch.setenv(MAX_AGE_ENV, "1")
    calls: list[str] = []
    assert load_anthropic_key() is True
    client = parameters.base.DEFAULT_PROVIDERS["secrets"].client
    client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
    secrets.put_secret_value(SecretId=NAME, SecretString="sk-second")
    for _ in range(5):
        assert load_anthropic_key() is True
    assert calls == [] and os.environ[API_KEY_ENV] == "sk-first"  # served from the cache
    time.sleep(1.05)
    assert load_anthropic_key() is True  # expired: read once more
    assert calls == ["GetSecretValue"] and os.environ[API_KEY_ENV] == "sk-second"


@pytest.mark.parametrize("value", [PLACEHOLDER, "  ", json.dumps({"other": 1})])
def test_a_secret_without_a_key_means_no_key_and_the_planner_plays(
    value: str, monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    secrets.create_secret(Name=NAME, SecretString=value)
    monkeypatch.setenv(SECRET_ENV, NAME)
    monkeypatch.setenv(API_KEY_ENV, "sk-stale")  # a key that was removed since
    assert load_anthropic_key() is False
    assert API_KEY_ENV not in os.environ
    assert not _has_key(BrainOptions(rules=CLASSIC))


def test_an_unreadable_secret_keeps_the_last_value_and_never_raises(
    monkeypatch: pytest.MonkeyPatch, secrets: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(SECRET_ENV, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone")
    assert load_anthropic_key() is False
    assert "could not read the Anthropic secret" in caplog.text
    monkeypatch.setenv(API_KEY_ENV, "sk-known")
    assert load_anthropic_key() is True


def test_a_json_secret_holds_the_key_under_its_variable_name() -> None:
    assert key_from_secret(json.dumps({"ANTHROPIC_API_KEY": " sk-json "})) == "sk-json"
    assert key_from_secret(json.dumps({"api_key": "sk-2"})) == "sk-2"
    assert key_from_secret(b"sk-bytes") == "sk-bytes"
    assert key_from_secret("{not json") is None
    assert key_from_secret(None) is None


def test_max_age_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_AGE_ENV, raising=False)
    assert max_age_from_env() == 300
    monkeypatch.setenv(MAX_AGE_ENV, "60")
    assert max_age_from_env() == 60
    monkeypatch.setenv(MAX_AGE_ENV, "-1")
    with pytest.raises(ValueError, match=MAX_AGE_ENV):
        max_age_from_env()
