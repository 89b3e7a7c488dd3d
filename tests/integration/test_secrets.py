"""`horcrux.secrets`: the Anthropic key from Secrets Manager (moto's), cached, returned as a
value (never written to `os.environ`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from conftest import Clock
from moto import mock_aws

from horcrux.agents import HARRY_BRAINS, BrainOptions
from horcrux.agents.gated import _has_llm
from horcrux.rules import CLASSIC
from horcrux.secrets import (
    API_KEY_ENV,
    MAX_AGE_ENV,
    PLACEHOLDER,
    SECRET_ENV,
    AnthropicKey,
    key_from_secret,
    load_anthropic_key,
)
from horcrux.settings import SecretSettings, SettingsError

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
    assert load_anthropic_key(SecretSettings()) is None
    local = SecretSettings.from_env({API_KEY_ENV: "sk-local"})
    assert load_anthropic_key(local) == "sk-local"  # a local run's key, given as a value
    assert parameters.base.DEFAULT_PROVIDERS == {}  # no Secrets Manager provider built
    assert API_KEY_ENV not in os.environ


def test_the_key_is_returned_for_the_brain_factory_and_never_exported(
    monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    arn = secrets.create_secret(Name=NAME, SecretString="sk-ant-test")["ARN"]
    key = load_anthropic_key(SecretSettings.from_env({SECRET_ENV: arn}))
    assert key == "sk-ant-test"
    assert API_KEY_ENV not in os.environ  # the old code exported it here
    assert _has_llm(BrainOptions(rules=CLASSIC, settings={"api_key": key}))
    assert not _has_llm(BrainOptions(rules=CLASSIC))
    # no longer `llm_unavailable`: the key reaches the brain as a setting
    HARRY_BRAINS.create("llm", CLASSIC, for_seat=True, settings={"api_key": key})


def test_the_secret_is_read_once_per_max_age(monkeypatch: pytest.MonkeyPatch, secrets: Any) -> None:
    secrets.create_secret(Name=NAME, SecretString="sk-first")
    # a name works as well as an ARN
    settings = SecretSettings.from_env({SECRET_ENV: NAME, MAX_AGE_ENV: "300"})
    clock = Clock(100.0)
    source = AnthropicKey(settings, clock=clock)
    calls: list[str] = []
    assert source() == "sk-first"
    client = parameters.base.DEFAULT_PROVIDERS["secrets"].client
    client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
    secrets.put_secret_value(SecretId=NAME, SecretString="sk-second")
    for now in (100.0, 200.0, 399.999):
        clock.now = now
        assert source() == "sk-first"
    assert calls == []  # served from the cache for max_age seconds of its clock
    clock.now = 400.0
    assert source() == "sk-second"  # expired: read once more
    assert calls == ["GetSecretValue"]
    clock.now = 699.0
    assert source() == "sk-second"  # cached again from the new read
    assert calls == ["GetSecretValue"]
    assert API_KEY_ENV not in os.environ


def test_a_failed_read_keeps_the_last_key_and_is_retried_next_call(
    monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    secrets.create_secret(Name=NAME, SecretString="sk-first")
    clock = Clock(0.0)
    source = AnthropicKey(
        SecretSettings.from_env({SECRET_ENV: NAME, MAX_AGE_ENV: "60"}), clock=clock
    )
    assert source() == "sk-first"
    secrets.delete_secret(SecretId=NAME, ForceDeleteWithoutRecovery=True)
    clock.now = 60.0
    assert source() == "sk-first"  # unreadable: the last good key
    secrets.create_secret(Name=NAME, SecretString="sk-back")
    assert source() == "sk-back"  # the failure was not cached: read again at once


def test_max_age_zero_reads_every_call(monkeypatch: pytest.MonkeyPatch, secrets: Any) -> None:
    secrets.create_secret(Name=NAME, SecretString="sk-first")
    source = AnthropicKey(
        SecretSettings.from_env({SECRET_ENV: NAME, MAX_AGE_ENV: "0"}), clock=Clock(5.0)
    )
    assert source() == "sk-first"
    secrets.put_secret_value(SecretId=NAME, SecretString="sk-second")
    assert source() == "sk-second"  # the same instant, yet read again


@pytest.mark.parametrize("value", [PLACEHOLDER, "  ", json.dumps({"other": 1})])
def test_a_secret_without_a_key_means_no_key_and_the_planner_plays(
    value: str, monkeypatch: pytest.MonkeyPatch, secrets: Any
) -> None:
    secrets.create_secret(Name=NAME, SecretString=value)
    # a key given directly is not used when a secret is configured: the secret wins
    settings = SecretSettings.from_env({SECRET_ENV: NAME, API_KEY_ENV: "sk-stale"})
    assert load_anthropic_key(settings) is None
    assert AnthropicKey(settings)() is None


def test_an_unreadable_secret_keeps_the_last_value_and_never_raises(
    monkeypatch: pytest.MonkeyPatch, secrets: Any, caplog: pytest.LogCaptureFixture
) -> None:
    gone = SecretSettings(secret_id="arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone")
    assert load_anthropic_key(gone) is None
    assert "could not read the Anthropic secret" in caplog.text
    assert load_anthropic_key(gone, last="sk-known") == "sk-known"


def test_a_json_secret_holds_the_key_under_its_variable_name() -> None:
    assert key_from_secret(json.dumps({"ANTHROPIC_API_KEY": " sk-json "})) == "sk-json"
    assert key_from_secret(json.dumps({"api_key": "sk-2"})) == "sk-2"
    assert key_from_secret(b"sk-bytes") == "sk-bytes"
    assert key_from_secret("{not json") is None
    assert key_from_secret(None) is None


def test_max_age_comes_from_the_settings() -> None:
    assert SecretSettings.from_env({}).max_age_s == 300
    assert SecretSettings.from_env({MAX_AGE_ENV: "60"}).max_age_s == 60
    for bad in ("-1", "soon"):
        with pytest.raises(SettingsError, match=MAX_AGE_ENV):
            SecretSettings.from_env({MAX_AGE_ENV: bad})
