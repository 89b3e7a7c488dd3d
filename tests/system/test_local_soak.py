"""A short soak (benchmarks/soak.py) against a real `horcrux serve`: no errors, no resets,
bounded memory, a prompt SIGTERM. The full one (10,000 requests) is `make soak`."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _soak_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak", ROOT / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_has_no_errors_no_resets_and_bounded_memory() -> None:
    report = _soak_module().soak(requests=1000, concurrency=16, window=500)
    assert report["requests"] == 1000
    assert report["errors"] == {}, report["error_examples"]
    assert report["resets"] == 0
    assert report["rss_mb"]["growth"] <= 100, report["rss_mb"]
    assert report["sigterm_exit_code"] == 0 and report["sigterm_s"] <= 5.0
    kinds = report["by_kind"]
    assert kinds["create"] and kinds["move"] and kinds["view"] and kinds["events"]
