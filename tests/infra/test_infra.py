"""The CDK stack: properties of the synthesised template, cdk-nag and cfn-lint.

The app is synthesised once per test session (`template`, session-scoped: the first synth
costs seconds); the assertions are on properties (names, values, actions), not on counts.
Nothing here calls AWS: the stack is environment-agnostic.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "shared", ROOT):  # horcrux and infra/, as app.py puts them
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App  # noqa: E402
from aws_cdk.assertions import Match, Template  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from horcrux.api.stream_handler import filter_pattern  # noqa: E402
from horcrux.operator_token import PLACEHOLDER as OPERATOR_PLACEHOLDER  # noqa: E402
from horcrux.secrets import PLACEHOLDER  # noqa: E402
from infra import names  # noqa: E402
from infra.names import FunctionSpec, Settings  # noqa: E402
from infra.stack import HorcruxStack, build_app, cdk_json_context  # noqa: E402

Json = dict[str, Any]
DEFAULTS = Settings()
CFN_LINT = "import sys; from cfnlint.runner import main; sys.argv[0] = 'cfn-lint'; sys.exit(main())"
STREAM_ACTIONS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}


@pytest.fixture(scope="session")
def synth() -> Iterator[tuple[App, HorcruxStack, Template]]:
    app, stack = build_app(cdk_json_context())
    yield app, stack, Template.from_stack(stack)


@pytest.fixture(scope="session")
def stack(synth: tuple[App, HorcruxStack, Template]) -> HorcruxStack:
    return synth[1]


@pytest.fixture(scope="session")
def template(synth: tuple[App, HorcruxStack, Template]) -> Template:
    return synth[2]


@pytest.fixture(scope="session")
def doc(template: Template) -> Json:
    result: Json = template.to_json()
    return result


def resources(doc: Json, kind: str) -> dict[str, Json]:
    return {k: r for k, r in doc["Resources"].items() if r["Type"] == kind}


def logical_id(stack: HorcruxStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def function_of(stack: HorcruxStack, doc: Json, spec: FunctionSpec) -> tuple[str, Json]:
    fn = next(f for f in stack.functions if f.spec.name == spec.name)
    key = logical_id(stack, fn.function)
    return key, doc["Resources"][key]["Properties"]


def policy_statements(stack: HorcruxStack, doc: Json, spec: FunctionSpec) -> list[Json]:
    fn = next(f for f in stack.functions if f.spec.name == spec.name)
    role = logical_id(stack, fn.role)
    statements: list[Json] = []
    for policy in resources(doc, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# ------------------------------------------------------------------ storage
def test_the_events_table_keys_ttl_stream_and_protection(stack: HorcruxStack, doc: Json) -> None:
    table = doc["Resources"][logical_id(stack, stack.storage.events)]["Properties"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "seq", "KeyType": "RANGE"},
    ]
    assert {"AttributeName": "seq", "AttributeType": "N"} in table["AttributeDefinitions"]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


@pytest.mark.parametrize("key", ["events", "games", "idempotency"])
def test_every_table_is_on_demand_encrypted_and_recoverable(
    key: str, stack: HorcruxStack, doc: Json
) -> None:
    table = doc["Resources"][logical_id(stack, stack.storage.tables[key])]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_the_games_table_has_the_sparse_lobby_index_and_ttl(stack: HorcruxStack, doc: Json) -> None:
    table = doc["Resources"][logical_id(stack, stack.storage.games)]["Properties"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert "StreamSpecification" not in table
    (index,) = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "lobby"
    assert index["KeySchema"] == [
        {"AttributeName": "lobby", "KeyType": "HASH"},
        {"AttributeName": "lobby_sk", "KeyType": "RANGE"},
    ]
    assert index["Projection"]["ProjectionType"] == "INCLUDE"
    assert set(index["Projection"]["NonKeyAttributes"]) == {
        "rules",
        "open_seats",
        "created",
        "ttl",
        "names",
    }


def test_the_store_and_the_infra_agree_on_the_lobby_index() -> None:
    from horcrux.store.dynamodb import LOBBY_INDEX

    assert names.LOBBY_INDEX == LOBBY_INDEX


def test_the_idempotency_table_is_powertools_shaped(stack: HorcruxStack, doc: Json) -> None:
    table = doc["Resources"][logical_id(stack, stack.storage.idempotency)]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


# ------------------------------------------------------------------ functions
@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_each_function_runtime_architecture_limits_tracing_and_logs(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    _, fn = function_of(stack, doc, spec)
    assert fn["Runtime"] == "python3.13"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == spec.handler
    assert fn["Timeout"] == spec.timeout_s <= 30
    assert fn["MemorySize"] == spec.memory_mb
    assert fn.get("TracingConfig", {}).get("Mode") != "Active"  # X-Ray off: test below
    assert fn["LoggingConfig"]["LogFormat"] == "JSON"
    assert fn["LoggingConfig"]["ApplicationLogLevel"] == "INFO"
    group = doc["Resources"][fn["LoggingConfig"]["LogGroup"]["Ref"]]["Properties"]
    assert group["RetentionInDays"] == DEFAULTS.log_retention_days
    handler_file = spec.code_dir / f"{spec.handler.split('.')[0]}.py"
    assert f"def {spec.handler.split('.')[1]}" in handler_file.read_text() or (
        f"\n{spec.handler.split('.')[1]} = " in handler_file.read_text()
    )


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_each_function_environment_names_what_its_handler_reads(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    _, fn = function_of(stack, doc, spec)
    env = fn["Environment"]["Variables"]
    expected = {"HORCRUX_EVENTS_TABLE", "HORCRUX_GAMES_TABLE", "POWERTOOLS_METRICS_NAMESPACE"}
    if spec.name == "api":
        expected |= {"HORCRUX_IDEMPOTENCY_TABLE", "HORCRUX_TTL_DAYS", "HORCRUX_OPERATOR_SECRET_ARN"}
        assert env["HORCRUX_OPERATOR_SECRET_ARN"] == {
            "Ref": logical_id(stack, stack.operator_secret)
        }
        assert env["HORCRUX_IDEMPOTENCY_TABLE"] == {
            "Ref": logical_id(stack, stack.storage.idempotency)
        }
        assert env["HORCRUX_TTL_DAYS"] == str(DEFAULTS.ttl_days)
    if spec.reads_secret:
        expected.add("HORCRUX_ANTHROPIC_SECRET_ARN")
        assert env["HORCRUX_ANTHROPIC_SECRET_ARN"] == {"Ref": logical_id(stack, stack.secret)}
    if spec.name.endswith("_turn"):  # one code for both seats: the seat from the environment
        expected.add("HORCRUX_SEAT")
        assert env["HORCRUX_SEAT"] == spec.name.removesuffix("_turn")
    assert set(env) == expected
    assert env["HORCRUX_EVENTS_TABLE"] == {"Ref": logical_id(stack, stack.storage.events)}
    assert env["HORCRUX_GAMES_TABLE"] == {"Ref": logical_id(stack, stack.storage.games)}
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "HorcruxHunt"


def test_both_turn_functions_run_one_code_asset_under_their_own_ids(
    stack: HorcruxStack, doc: Json
) -> None:
    """lambdas/ai_turn/ is both AI-turn functions' code (the seat from HORCRUX_SEAT); their
    construct ids stay `HarryTurn` / `VoldemortTurn`, so a deployed stack keeps them."""
    harry_id, harry = function_of(stack, doc, names.HARRY_TURN)
    voldemort_id, voldemort = function_of(stack, doc, names.VOLDEMORT_TURN)
    assert harry["Code"] == voldemort["Code"]
    assert (
        names.HARRY_TURN.code_dir == names.VOLDEMORT_TURN.code_dir == ROOT / "lambdas" / "ai_turn"
    )
    assert "HarryTurn" in harry_id and "VoldemortTurn" in voldemort_id


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_the_layers_core_everywhere_anthropic_only_on_the_ai_turns(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    _, fn = function_of(stack, doc, spec)
    core = {"Ref": logical_id(stack, stack.layers.core)}
    llm = {"Ref": logical_id(stack, stack.layers.llm)}
    assert core in fn["Layers"]
    assert (llm in fn["Layers"]) is spec.llm is spec.name.endswith("_turn")


def test_layers_are_for_python313_on_arm64(stack: HorcruxStack, doc: Json) -> None:
    for layer in (stack.layers.core, stack.layers.llm):
        props = doc["Resources"][logical_id(stack, layer)]["Properties"]
        assert props["CompatibleRuntimes"] == ["python3.13"]
        assert props["CompatibleArchitectures"] == ["arm64"]


def test_no_function_reserves_concurrency_by_default(stack: HorcruxStack, doc: Json) -> None:
    """A new account's concurrency quota is low and Lambda keeps 10 of it unreserved: any
    reservation can fail the deploy there. So none by default."""
    assert DEFAULTS.turn_reserved_concurrency == 0
    for spec in names.FUNCTIONS:
        _, fn = function_of(stack, doc, spec)
        assert "ReservedConcurrentExecutions" not in fn, spec.name


def test_reserved_concurrency_is_opt_in_and_caps_only_the_ai_turn_functions() -> None:
    _, stack = build_app({**cdk_json_context(), "horcrux:turnReservedConcurrency": "5"})
    doc = Template.from_stack(stack).to_json()
    for spec in names.FUNCTIONS:
        _, fn = function_of(stack, doc, spec)
        if spec in (names.HARRY_TURN, names.VOLDEMORT_TURN):
            assert fn["ReservedConcurrentExecutions"] == 5
        else:
            assert "ReservedConcurrentExecutions" not in fn
    with pytest.raises(ValueError, match="turnReservedConcurrency"):
        Settings.from_context(App(context={"horcrux:turnReservedConcurrency": "-1"}).node)


# ------------------------------------------------------------------ tracing: off, whole
def test_no_function_and_no_api_stage_traces_with_x_ray(doc: Json) -> None:
    """X-Ray is off (docs/DEPLOY.md, Tracing): no active tracing anywhere, no xray grant."""
    for fn in resources(doc, "AWS::Lambda::Function").values():
        assert fn["Properties"].get("TracingConfig", {}).get("Mode") != "Active"
    for kind in ("AWS::ApiGatewayV2::Stage", "AWS::ApiGateway::Stage"):
        for stage in resources(doc, kind).values():
            assert not stage["Properties"].get("TracingEnabled")
    for policy in resources(doc, "AWS::IAM::Policy").values():
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert not [a for a in as_list(st["Action"]) if a.startswith("xray:")]


def test_no_code_uses_a_tracer_while_tracing_is_off() -> None:
    """No half state: a Tracer (or aws-xray-sdk) would need tracing on and the SDK layered."""
    sources = [*(ROOT / "lambdas").rglob("*.py"), *(ROOT / "shared" / "horcrux").rglob("*.py")]
    users = [
        str(p.relative_to(ROOT))
        for p in sources
        if re.search(
            r"\bTracer\b|aws_xray_sdk|from aws_lambda_powertools import .*Tracer", p.read_text()
        )
    ]
    assert not users, f"tracing is off in the stack (infra/functions.py), yet: {users}"
    assert "aws-xray-sdk" not in (ROOT / "locks" / "core.txt").read_text()


# ------------------------------------------------------------------ least privilege
def _dynamo_grants(statements: list[Json], stack: HorcruxStack) -> dict[str, set[str]]:
    """target (games/events/idempotency/lobby) -> DynamoDB data actions allowed on it."""
    by_ref = {logical_id(stack, t): key for key, t in stack.storage.tables.items()}
    grants: dict[str, set[str]] = {}
    for st in statements:
        actions = {a for a in as_list(st["Action"]) if a.startswith("dynamodb:")}
        actions -= STREAM_ACTIONS | {"dynamodb:ListStreams"}
        if not actions:
            continue
        for resource in as_list(st["Resource"]):
            if "Fn::GetAtt" in resource:
                ref, attribute = resource["Fn::GetAtt"]
                assert attribute == "Arn", st
                target = by_ref[ref]
            else:  # the lobby index: Fn::Join of the games table's Arn and /index/lobby
                parts = resource["Fn::Join"][1]
                assert parts[1] == f"/index/{names.LOBBY_INDEX}", st
                assert by_ref[parts[0]["Fn::GetAtt"][0]] == "games"
                target = "lobby"
            grants.setdefault(target, set()).update(actions)
    return grants


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_each_function_gets_exactly_its_dynamodb_actions_on_its_tables(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    statements = policy_statements(stack, doc, spec)
    assert statements and all(st["Effect"] == "Allow" for st in statements)
    grants = _dynamo_grants(statements, stack)
    wanted = {k: set(v) for k, v in names.DYNAMO_ACTIONS[spec.name].items()}
    assert grants == wanted
    every = {a for st in statements for a in as_list(st["Action"])}
    assert not [a for a in every if a.endswith("*")], "no wildcard action"
    assert "dynamodb:Scan" not in every and "dynamodb:DeleteItem" not in every - set(
        names.DYNAMO_ACTIONS[spec.name].get("idempotency", ())
    )


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_wildcard_resources_only_for_actions_without_resource_scoping(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    for st in policy_statements(stack, doc, spec):
        if st["Resource"] == "*":
            assert set(as_list(st["Action"])) <= {"dynamodb:ListStreams"}


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_stream_queue_and_secret_access_only_where_used(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    statements = policy_statements(stack, doc, spec)
    every = {a for st in statements for a in as_list(st["Action"])}
    consumer = spec.name != "api"
    assert every >= STREAM_ACTIONS if consumer else not (STREAM_ACTIONS & every)
    assert ("sqs:SendMessage" in every) is consumer
    secret = [st for st in statements if "secretsmanager:GetSecretValue" in as_list(st["Action"])]
    wanted = [stack.secret] if spec.reads_secret else []
    if spec is names.API:
        wanted.append(stack.operator_secret)  # the /memory routes' operator digest
    granted = sorted(json.dumps(r) for st in secret for r in as_list(st["Resource"]))
    assert granted == sorted(json.dumps({"Ref": logical_id(stack, s)}) for s in wanted)
    for st in statements:
        if STREAM_ACTIONS & set(as_list(st["Action"])):
            assert st["Resource"] == {
                "Fn::GetAtt": [logical_id(stack, stack.storage.events), "StreamArn"]
            }


def test_the_roles_carry_no_managed_policy(doc: Json) -> None:
    for role in resources(doc, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


# ------------------------------------------------------------------ stream consumers
def _mapping(stack: HorcruxStack, doc: Json, spec: FunctionSpec) -> Json:
    key, _ = function_of(stack, doc, spec)
    (mapping,) = [
        r["Properties"]
        for r in resources(doc, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["FunctionName"] == {"Ref": key}
    ]
    return mapping


@pytest.mark.parametrize("spec", [names.HARRY_TURN, names.VOLDEMORT_TURN, names.COMPACTION])
def test_each_stream_consumer_event_source_settings(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    mapping = _mapping(stack, doc, spec)
    events = logical_id(stack, stack.storage.events)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [events, "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == 10
    assert mapping["BisectBatchOnFunctionError"] is True
    assert 3 <= mapping["MaximumRetryAttempts"] <= 5
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    queue = logical_id(stack, stack.consumers.dead_letter_queues[spec.name])
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}
    }
    assert 1 <= mapping["ParallelizationFactor"] <= 10
    (only,) = mapping["FilterCriteria"]["Filters"]
    pattern = json.loads(only["Pattern"])
    assert pattern["eventName"] == ["INSERT"]  # TTL deletions are REMOVEs: never delivered
    if spec.name == "compaction":
        assert pattern == names.FINAL_EVENT_FILTER
        assert pattern["dynamodb"]["NewImage"] == {"winner": {"S": [{"exists": True}]}}
    else:
        seat = spec.name.removesuffix("_turn")
        assert pattern == filter_pattern(seat)  # type: ignore[arg-type]
        assert pattern["dynamodb"]["NewImage"] == {"next_ai": {"S": [seat]}}


def test_the_failed_record_queues_are_encrypted_tls_only_and_kept_14_days(
    stack: HorcruxStack, doc: Json
) -> None:
    for queue in stack.consumers.dead_letter_queues.values():
        props = doc["Resources"][logical_id(stack, queue)]["Properties"]
        assert props["SqsManagedSseEnabled"] is True
        assert props["MessageRetentionPeriod"] == 14 * 86_400
    for policy in resources(doc, "AWS::SQS::QueuePolicy").values():
        (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


# ------------------------------------------------------------------ HTTP API
def test_the_api_stage_throttles_and_writes_json_access_logs(
    stack: HorcruxStack, doc: Json
) -> None:
    stage = doc["Resources"][logical_id(stack, stack.http.stage)]["Properties"]
    assert stage["StageName"] == "$default"
    assert stage["AutoDeploy"] is True
    assert stage["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": DEFAULTS.api_rate_limit,
        "ThrottlingBurstLimit": DEFAULTS.api_burst_limit,
    }
    access = stage["AccessLogSettings"]
    assert access["DestinationArn"] == {
        "Fn::GetAtt": [logical_id(stack, stack.http.access_logs), "Arn"]
    }
    fields = json.loads(access["Format"])
    assert {"requestId", "status", "routeKey", "ip", "integrationError"} <= set(fields)
    # creating games (each may start AI games) has a tighter limit of its own
    assert stage["RouteSettings"] == {
        "POST /games": {
            "ThrottlingRateLimit": DEFAULTS.create_rate_limit,
            "ThrottlingBurstLimit": DEFAULTS.create_burst_limit,
        }
    }
    assert DEFAULTS.create_rate_limit < DEFAULTS.api_rate_limit
    route_ids = {
        rid
        for rid, res in resources(doc, "AWS::ApiGatewayV2::Route").items()
        if res["Properties"]["RouteKey"] == "POST /games"
    }
    stage_id = logical_id(stack, stack.http.stage)
    assert route_ids and route_ids <= set(doc["Resources"][stage_id].get("DependsOn", []))


def test_the_api_allows_a_browser_client(stack: HorcruxStack, doc: Json) -> None:
    api = doc["Resources"][logical_id(stack, stack.http.api)]["Properties"]
    cors = api["CorsConfiguration"]
    assert cors["AllowOrigins"] == ["*"]
    assert set(cors["AllowMethods"]) == {"GET", "POST", "DELETE", "OPTIONS"}
    assert {
        "authorization",
        "content-type",
        "idempotency-key",
        "if-match",
        "if-none-match",
    } <= set(cors["AllowHeaders"])
    assert set(cors["ExposeHeaders"]) == {"etag", "retry-after"}  # read by a page's script


def _normalised(path: str) -> str:
    return re.sub(r"[<{][^>}]+[>}]", "{}", path)


def test_the_routes_are_exactly_the_apps_routes(doc: Json) -> None:
    api = ROOT / "shared" / "horcrux" / "api"  # the app and its Routers
    source = "".join(p.read_text() for p in sorted(api.glob("*.py")))
    app_routes = {
        (method.upper(), _normalised(path))
        for method, path in re.findall(r'@(?:app|router)\.(get|post|delete)\(\s*"([^"]+)"', source)
        # the memory routes' own decorator: @route("get", "/memory/<agent>", ...)
        + re.findall(r'@route\(\s*"(get|post|delete)",\s*"([^"]+)"', source)
    }
    assert ("POST", "/memory/{}/items/{}/{}") in app_routes  # the second pattern matched
    app_routes |= {("HEAD", path) for method, path in app_routes if method == "GET"}
    routes = {
        tuple(r["Properties"]["RouteKey"].split(" ", 1))
        for r in resources(doc, "AWS::ApiGatewayV2::Route").values()
    }
    assert {(m, _normalised(p)) for m, p in routes} == app_routes
    assert routes == set(names.API_ROUTES)
    (integration,) = resources(doc, "AWS::ApiGatewayV2::Integration").values()
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
    assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"


# ------------------------------------------------------------------ secret
def test_the_anthropic_secret_starts_as_no_key(stack: HorcruxStack, doc: Json) -> None:
    secret = doc["Resources"][logical_id(stack, stack.secret)]["Properties"]
    assert secret["SecretString"] == PLACEHOLDER == "unset"
    assert "GenerateSecretString" not in secret  # a random value would pass for a key


# ------------------------------------------------------------------ alarms
def _alarms(doc: Json) -> list[Json]:
    return [r["Properties"] for r in resources(doc, "AWS::CloudWatch::Alarm").values()]


def _find_alarm(doc: Json, metric: str, dimension: Json | None = None) -> list[Json]:
    found = []
    for alarm in _alarms(doc):
        if alarm.get("MetricName") != metric:
            continue
        if dimension is not None and dimension not in alarm.get("Dimensions", []):
            continue
        found.append(alarm)
    return found


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_each_function_alarms_on_errors_throttles_and_p99_duration(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    key, _ = function_of(stack, doc, spec)
    dimension = {"Name": "FunctionName", "Value": {"Ref": key}}
    (errors,) = _find_alarm(doc, "Errors", dimension)
    (throttles,) = _find_alarm(doc, "Throttles", dimension)
    (duration,) = _find_alarm(doc, "Duration", dimension)
    for alarm in (errors, throttles):
        assert alarm["Namespace"] == "AWS/Lambda"
        assert alarm["Statistic"] == "Sum"
        assert alarm["Threshold"] == 1
    assert duration["ExtendedStatistic"] == "p99"
    assert duration["Threshold"] == spec.timeout_s * 1000 * 0.8
    for alarm in (errors, throttles, duration):
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["Period"] == 300
        assert alarm["AlarmActions"] == [{"Ref": logical_id(stack, stack.monitoring.topic)}]


def test_the_api_5xx_alarm(stack: HorcruxStack, doc: Json) -> None:
    (alarm,) = _find_alarm(doc, "5xx")
    assert alarm["Namespace"] == "AWS/ApiGateway"
    assert alarm["Dimensions"] == [
        {"Name": "ApiId", "Value": {"Ref": logical_id(stack, stack.http.api)}}
    ]
    assert alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] == 1


@pytest.mark.parametrize("key", ["events", "games", "idempotency"])
def test_each_table_alarms_on_throttle_events(key: str, stack: HorcruxStack, doc: Json) -> None:
    table = {"Name": "TableName", "Value": {"Ref": logical_id(stack, stack.storage.tables[key])}}
    matches = []
    for alarm in _alarms(doc):
        queried = {
            m["MetricStat"]["Metric"]["MetricName"]
            for m in alarm.get("Metrics", [])
            if "MetricStat" in m and table in m["MetricStat"]["Metric"].get("Dimensions", [])
        }
        if queried == {"ReadThrottleEvents", "WriteThrottleEvents"}:
            matches.append(alarm)
    (alarm,) = matches
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    assert expression["Expression"] == "reads + writes"
    assert alarm["Threshold"] == 1


@pytest.mark.parametrize("spec", [names.HARRY_TURN, names.VOLDEMORT_TURN, names.COMPACTION])
def test_each_stream_consumer_alarms_on_iterator_age_and_failed_records(
    spec: FunctionSpec, stack: HorcruxStack, doc: Json
) -> None:
    key, _ = function_of(stack, doc, spec)
    (age,) = _find_alarm(doc, "IteratorAge", {"Name": "FunctionName", "Value": {"Ref": key}})
    assert age["Statistic"] == "Maximum"
    assert age["Threshold"] == 60_000
    queue = logical_id(stack, stack.consumers.dead_letter_queues[spec.name])
    dimension = {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}
    (depth,) = _find_alarm(doc, "ApproximateNumberOfMessagesVisible", dimension)
    assert depth["Namespace"] == "AWS/SQS"
    assert depth["Threshold"] == 1


def test_the_replay_mismatch_alarm_watches_the_compactions_metric(doc: Json) -> None:
    (alarm,) = _find_alarm(doc, "ReplayMismatch")
    assert alarm["Namespace"] == "HorcruxHunt"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "compaction"}]
    assert alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] == 1
    handler = (ROOT / "shared" / "horcrux" / "compaction_records.py").read_text()
    assert 'SERVICE = "compaction"' in handler and 'name="ReplayMismatch"' in handler


def test_the_memory_leak_alarm_and_the_memory_start_up_graph(doc: Json) -> None:
    (alarm,) = _find_alarm(doc, "MemoryLeakPrevented")
    assert alarm["Namespace"] == "HorcruxHunt" and alarm["Statistic"] == "Sum"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "compaction"}]
    assert alarm["Threshold"] == 1
    compaction = (ROOT / "shared" / "horcrux" / "compaction_records.py").read_text()
    assert 'name="MemoryLeakPrevented"' in compaction
    for metric in (names.MEMORY_EVICTED_METRIC, names.MEMORY_CONFLICT_METRIC):
        (alarm,) = _find_alarm(doc, metric)
        assert alarm["Threshold"] == 1 and alarm["Statistic"] == "Sum"
        assert alarm["Dimensions"] == [{"Name": "service", "Value": "compaction"}]
        assert f'name="{metric}"' in compaction
    harry = (ROOT / "lambdas" / "ai_turn" / "handler.py").read_text()
    assert f'"harry": "{names.HARRY_TURN_SERVICE}"' in harry
    assert all(f'"{name}"' in harry for name in names.MEMORY_STARTUP_METRICS)
    (dashboard,) = resources(doc, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for name in ("MemoryRebuilt", "MemoryRead", "MemoryLeakPrevented", "horcrux-harry-turn"):
        assert name in body


@pytest.mark.parametrize(
    ("function", "service"),
    [("harry_turn", "horcrux-harry-turn"), ("voldemort_turn", "horcrux-voldemort-turn")],
)
def test_each_turn_function_alarms_on_an_unreadable_memory_pin(
    function: str, service: str, doc: Json
) -> None:
    dimension = {"Name": "service", "Value": service}
    (alarm,) = _find_alarm(doc, "MemoryPinUnreadable", dimension)
    assert alarm["Namespace"] == "HorcruxHunt" and alarm["Statistic"] == "Sum"
    assert alarm["Dimensions"] == [dimension]
    assert alarm["Threshold"] == 1 and alarm["EvaluationPeriods"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    handler = (ROOT / "lambdas" / "ai_turn" / "handler.py").read_text()  # both seats'
    seat = function.removesuffix("_turn")
    assert f'"{seat}": "{service}"' in handler
    assert '"pin-unreadable": "MemoryPinUnreadable"' in handler
    (dashboard,) = resources(doc, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert all(name in body for name in ("MemoryPinUnreadable", "MemoryCopied", service))
    assert '"voldemort": {"copied": "MemoryCopied"' in handler


@pytest.mark.parametrize("service", ["horcrux-harry-turn", "horcrux-voldemort-turn"])
def test_each_turn_function_alarms_on_a_seat_brain_that_no_longer_builds(
    service: str, doc: Json
) -> None:
    from horcrux.api.stream_handler import BRAIN_REPLACED_METRIC

    dimension = {"Name": "service", "Value": service}
    (alarm,) = _find_alarm(doc, BRAIN_REPLACED_METRIC, dimension)
    assert BRAIN_REPLACED_METRIC == "AiBrainReplaced"  # what the turn functions emit
    assert alarm["Namespace"] == "HorcruxHunt" and alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] == 1 and alarm["EvaluationPeriods"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_the_operator_token_lives_in_a_secret_the_stack_owns(
    stack: HorcruxStack, doc: Json
) -> None:
    """A digest the operator stores survives a plain redeploy: the template only ever holds
    the placeholder (CloudFormation leaves a secret value it did not change), and the old
    one-off context keys are refused instead of silently dropped."""
    secret = doc["Resources"][logical_id(stack, stack.operator_secret)]["Properties"]
    assert secret["SecretString"] == OPERATOR_PLACEHOLDER == "unset"
    assert "GenerateSecretString" not in secret
    again = Template.from_stack(build_app(cdk_json_context())[1]).to_json()
    assert again["Resources"][logical_id(stack, stack.operator_secret)]["Properties"] == secret
    assert doc["Outputs"]["OperatorTokenSecretArn"]["Value"] == {
        "Ref": logical_id(stack, stack.operator_secret)
    }
    for spec in names.FUNCTIONS:
        env = function_of(stack, doc, spec)[1]["Environment"]["Variables"]
        assert ("HORCRUX_OPERATOR_SECRET_ARN" in env) is (spec is names.API)
        assert "HORCRUX_OPERATOR_TOKEN_SHA256" not in env
    for key in ("horcrux:operatorTokenSha256", "horcrux:operatorAgents"):
        with pytest.raises(ValueError, match="operator secret"):
            Settings.from_context(App(context={key: "ab" * 32}).node)


def test_every_alarm_notifies_the_topic_and_is_on_the_dashboard(
    stack: HorcruxStack, doc: Json, template: Template
) -> None:
    topic = {"Ref": logical_id(stack, stack.monitoring.topic)}
    alarms = resources(doc, "AWS::CloudWatch::Alarm")
    assert set(alarms) == {logical_id(stack, a) for a in stack.monitoring.alarms.values()}
    assert all(a["Properties"]["AlarmActions"] == [topic] for a in alarms.values())
    (dashboard,) = resources(doc, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for key in alarms:
        assert key in body  # the alarm status widget lists every alarm
    template.has_resource_properties("AWS::SNS::Topic", {"DisplayName": "Horcrux Hunt alarms"})


# ------------------------------------------------------------------ outputs, settings
def test_the_outputs_name_the_api_url_and_the_tables(stack: HorcruxStack, doc: Json) -> None:
    outputs = doc["Outputs"]
    assert set(outputs) >= {"ApiUrl", "GamesTableName", "EventsTableName", "IdempotencyTableName"}
    assert outputs["GamesTableName"]["Value"] == {"Ref": logical_id(stack, stack.storage.games)}
    assert outputs["EventsTableName"]["Value"] == {"Ref": logical_id(stack, stack.storage.events)}
    assert outputs["AnthropicSecretArn"]["Value"] == {"Ref": logical_id(stack, stack.secret)}
    assert outputs["ApiUrl"]["Value"] == Match.any_value() or outputs["ApiUrl"]["Value"]


def test_settings_come_from_the_context() -> None:
    node = App(
        context={
            "horcrux:apiRateLimit": "7",
            "horcrux:apiBurstLimit": 9,
            "horcrux:corsOrigins": "https://a.example, https://b.example",
            "horcrux:turnReservedConcurrency": "0",
            "horcrux:retainData": "false",
            "horcrux:alarmEmail": "ops@example.com",
        }
    ).node
    settings = Settings.from_context(node)
    assert settings.api_rate_limit == 7 and settings.api_burst_limit == 9
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.turn_reserved_concurrency == 0
    assert settings.retain_data is False
    assert settings.alarm_email == "ops@example.com"
    assert Settings.from_context(App().node) == Settings()


# ------------------------------------------------------------------ cdk-nag, cfn-lint
def test_cdk_nag_aws_solutions_has_no_unacknowledged_finding(
    synth: tuple[App, HorcruxStack, Template],
) -> None:
    from infra.nag import REASONS

    app, _, _ = synth
    report = AwsSolutionsChecks().validate_scope(app)
    found = [
        f"{v.rule_name}: {[r.resource_logical_id for r in v.violating_resources]}"
        for v in report.violations
    ]
    assert report.success, found
    assert all(len(reason) > 80 for reason in REASONS.values())  # a reason, not a label


def test_cfn_lint_finds_no_error_in_the_template(doc: Json, tmp_path: Path) -> None:
    path = tmp_path / "HorcruxHunt.template.json"
    path.write_text(json.dumps(doc))
    result = subprocess.run(
        [sys.executable, "-c", CFN_LINT, "--non-zero-exit-code", "error", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------ docs/DEPLOY.md
def test_deploy_md_stands_alone_and_matches_the_stack() -> None:
    text = (ROOT / "docs" / "DEPLOY.md").read_text()
    for citation in ("GAME.md", "BELIEF.md", "the article"):
        assert citation not in text, citation
    source = (ROOT / "infra" / "names.py").read_text()
    keys = set(re.findall(r'get\("(\w+)"', source))
    assert keys >= {"turnReservedConcurrency", "apiRateLimit", "ttlDays"}
    for key in keys:  # every setting is in the table
        assert f"`{key}`" in text, key
    assert "| `turnReservedConcurrency` | 0 (none) |" in text
    # the cost table's units are the store's (docs/STORE.md: 1 RCU + 4 WCU per move)
    assert "4 WRU + 1 RRU" in text and "1 RCU + 4 WCU" in (ROOT / "docs" / "STORE.md").read_text()
    assert "`OperatorTokenSecretArn`" in text and names.OUTPUT_OPERATOR_SECRET in text
