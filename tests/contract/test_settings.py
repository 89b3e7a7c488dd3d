"""`horcrux.settings`: one typed settings object per function, read from the environment
once, at cold start (the handler module's import), and injected; a bad value fails the
cold start naming the variable."""

from __future__ import annotations

from typing import Any

import pytest
from api_fixtures import ApiClient, load_handler

from horcrux.settings import (
    ApiSettings,
    SettingsError,
    api_settings,
    compaction_settings,
    turn_settings,
)
from horcrux.store import DynamoDbStore
from horcrux.store.port import hash_token

OPERATOR = "an-operator-token-long-enough-to-be-a-secret"


def test_a_handler_module_reads_the_environment_once(
    dynamo: DynamoDbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HORCRUX_OPERATOR_TOKEN_SHA256", raising=False)
    handler = load_handler("api")
    api = ApiClient(handler)
    q = {"opponent": "reference"}
    assert api.call("GET", "/memory/planner", query=q, token=OPERATOR).status == 403
    # a warm function whose environment changes: nothing changes until new settings
    monkeypatch.setenv("HORCRUX_OPERATOR_TOKEN_SHA256", hash_token(OPERATOR))
    monkeypatch.setenv("HORCRUX_GAMES_TABLE", "another-table")
    monkeypatch.setenv("HORCRUX_TTL_DAYS", "1")
    assert api.call("GET", "/memory/planner", query=q, token=OPERATOR).status == 403
    created = api.call(
        "POST", "/games", body={"seats": {"harry": {"kind": "human"}, "voldemort": {"kind": "ai"}}}
    )
    assert created.status == 201  # still the table it started with
    snap = dynamo.load(created.body["game_id"])
    assert snap.expires_at - int(snap.created_at) == 30 * 86400  # still the default TTL
    # a new settings object (a cold start) sees the new values
    fresh = api_settings()
    assert fresh.store.games_table == "another-table" and fresh.store.ttl_seconds == 86400
    assert fresh.operator.token_sha256 == hash_token(OPERATOR)
    monkeypatch.setenv("HORCRUX_GAMES_TABLE", dynamo.settings.games_table)  # moto's table
    again = ApiClient(load_handler("api"))
    assert again.call("GET", "/memory/planner", query=q, token=OPERATOR).status == 200


@pytest.mark.parametrize(
    ("function", "name", "value"),
    [
        ("api", "HORCRUX_TTL_DAYS", "a month"),
        ("api", "HORCRUX_TTL_DAYS", "0"),
        ("api", "HORCRUX_SECRET_MAX_AGE", "-5"),
        ("api", "HORCRUX_OPERATOR_TOKEN_SHA256", "not-a-sha256"),
        ("harry_turn", "HORCRUX_GATE_LOW", "low"),
        ("harry_turn", "HORCRUX_GATE_MEASURE", "vibes"),
        ("voldemort_turn", "HORCRUX_SECRET_MAX_AGE", "soon"),
        ("compaction", "HORCRUX_RESULTS_KEEP", "0"),
    ],
)
def test_a_bad_setting_fails_at_cold_start_naming_the_variable(
    dynamo: DynamoDbStore, monkeypatch: pytest.MonkeyPatch, function: str, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=name):
        load_handler(function)


def test_inconsistent_gate_thresholds_fail_naming_the_variables() -> None:
    with pytest.raises(SettingsError, match="HORCRUX_GATE_LOW"):
        turn_settings("harry", {"HORCRUX_GATE_LOW": "3", "HORCRUX_GATE_HIGH": "1"})


def test_each_function_gets_only_its_own_settings() -> None:
    env = {
        "HORCRUX_GATE_LOW": "0.5",
        "HORCRUX_LLM_MODEL": "claude-test",
        "HORCRUX_RESULTS_KEEP": "7",
        "HORCRUX_GAMES_TABLE": "g",
    }
    harry = turn_settings("harry", env).brains.values("sk-x")
    assert harry["api_key"] == "sk-x" and harry["model"] == "claude-test"
    assert harry["gate"]["low"] == 0.5 and harry["gate"]["high"] == 2.0
    assert "gate" not in turn_settings("voldemort", env).brains.values(None)
    assert "api_key" not in turn_settings("voldemort", env).brains.values(None)
    compaction = compaction_settings(env)
    assert compaction.results_keep == 7 and compaction.store.games_table == "g"
    api = api_settings(env)
    assert (
        DynamoDbStore(api.store).settings.games_table == "g"
        and api.idempotency_table == "horcrux-idempotency"
    )
    assert "api_key" not in repr(api_settings({"ANTHROPIC_API_KEY": "sk-secret"}))
    assert "sk-secret" not in repr(api_settings({"ANTHROPIC_API_KEY": "sk-secret"}))


def test_settings_carry_no_unknown_fields() -> None:
    with pytest.raises(ValueError, match="surprise"):
        ApiSettings.model_validate({"surprise": 1})
    fields: Any = ApiSettings.model_fields
    assert set(fields) == {"store", "secret", "operator", "brains", "idempotency_table"}
