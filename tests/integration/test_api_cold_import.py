"""The API Lambda's cold start, pinned by what it imports (the time is the benchmark's:
benchmarks/bench_infra.py, goal <= 250 ms): importing lambdas/api/handler.py in a clean
interpreter loads neither the brains (numpy, the belief and planner code, anthropic) nor
what only some routes need (the memory code, Powertools' OpenAPI models), and those load
when a request needs them (horcrux.lazy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from horcrux.lazy import LazyModule, lazy_import

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"

NOT_AT_COLD_START = (
    "numpy",
    "anthropic",
    "horcrux.belief",
    "horcrux.agents.planner",
    "horcrux.echo",  # the memory routes' code: at the first /memory call
    "aws_lambda_powertools.event_handler.openapi.models",  # for GET /openapi.json only
    "boto3",  # the store's client and the idempotency layer: at first use
)

PROBE = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import handler
unwanted = json.loads(sys.argv[3])
def loaded():
    return sorted(m for m in sys.modules if any(m == u or m.startswith(u + ".") for u in unwanted))
at_import = loaded()
event = json.loads(sys.argv[4])
openapi = handler.app.resolve(event, None)
after_openapi = loaded()
memory = dict(event, rawPath="/memory/planner", rawQueryString="opponent=random",
              queryStringParameters={"opponent": "random"},
              headers=dict(event["headers"], authorization="Bearer not-the-operators"))
memory["requestContext"] = dict(event["requestContext"],
                                http=dict(event["requestContext"]["http"], path="/memory/planner"))
refused = handler.app.resolve(memory, None)
print(json.dumps({
    "at_import": at_import,
    "after_openapi": after_openapi,
    "openapi_status": openapi["statusCode"],
    "openapi_paths": sorted(json.loads(openapi["body"])["paths"]),
    "after_memory": loaded(),
    "memory_status": refused["statusCode"],
    "memory_error": json.loads(refused["body"]),
}))
"""


def run_probe() -> dict[str, object]:
    env = {
        "HORCRUX_GAMES_TABLE": "g",
        "HORCRUX_EVENTS_TABLE": "e",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "POWERTOOLS_METRICS_NAMESPACE": "HorcruxHunt",
    }
    event = (EVENTS / "api_get_openapi.json").read_text()
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            PROBE,
            str(ROOT / "lambdas" / "api"),
            str(ROOT / "shared"),
            json.dumps(NOT_AT_COLD_START),
            event,
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_api_handler_imports_no_brain_and_no_route_only_module() -> None:
    result = run_probe()
    assert result["at_import"] == []


def test_what_the_api_defers_loads_with_the_first_request_that_needs_it() -> None:
    result = run_probe()
    assert result["openapi_status"] == 200
    paths = result["openapi_paths"]
    assert isinstance(paths, list) and "/memory/{agent}" in paths
    assert result["after_openapi"] == ["aws_lambda_powertools.event_handler.openapi.models"]
    # no operator token is configured: refused, by the memory code, which loaded to say so
    assert result["memory_status"] == 403
    assert result["memory_error"] == {
        "error": "forbidden",
        "message": "this token is not the operator's",
    }
    after_memory = result["after_memory"]
    assert isinstance(after_memory, list) and "horcrux.echo.ops" in after_memory
    # still no brain: a memory call reads the store, it plays nothing
    assert not [m for m in after_memory if m.split(".")[0] in ("numpy", "anthropic")]
    assert not [m for m in after_memory if m.startswith("horcrux.agents.planner")]


def test_lazy_import_loads_the_module_at_its_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_probe_module.py").write_text("VALUE = 42\ndef double(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_probe_module", raising=False)
    module = lazy_import("lazy_probe_module")
    assert isinstance(module, LazyModule) and "lazy_probe_module" not in sys.modules
    assert "not loaded yet" in repr(module)
    assert module.VALUE == 42 and module.double(4) == 8
    assert "lazy_probe_module" in sys.modules and "(loaded)" in repr(module)
    assert "double" in dir(module)
    with pytest.raises(AttributeError):
        _ = module.missing_name
    # once imported, the module itself is returned
    assert lazy_import("lazy_probe_module") is sys.modules["lazy_probe_module"]
    monkeypatch.delitem(sys.modules, "lazy_probe_module")


def test_lazy_import_of_a_missing_module_fails_at_first_use_naming_it() -> None:
    module = lazy_import("horcrux.no_such_module_xyz")
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        _ = module.anything
