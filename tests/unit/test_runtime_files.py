"""The runtime (shared/horcrux, what the Lambda layer installs from its wheel) holds only
what a Lambda runs: no page file (the stack serves the page from S3, out of the
repository's web/), no tool module, and its package data names no page file either.
tests/infra/test_layer.py checks the same on the built layer."""

from __future__ import annotations

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "shared" / "horcrux"
PAGE_SUFFIXES = (".js", ".html", ".css", ".mjs")
TOOL_ONLY = (
    "echo/baseline.py",  # horcrux_tools.echo.baseline
    "web/static.py",  # horcrux_tools.web.static
    "web/words.py",  # horcrux_tools.web.words
)


def runtime_files() -> list[str]:
    return sorted(
        p.relative_to(RUNTIME).as_posix()
        for p in RUNTIME.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def page_files(files: list[str]) -> list[str]:
    """The files of `files` that belong to the browser page."""
    return [
        f
        for f in files
        if f.endswith(PAGE_SUFFIXES) or f.startswith("web/") or f.endswith("words.json")
    ]


def test_the_check_finds_a_page_file() -> None:
    files = ["engine.py", "web/app.js", "ui/index.html", "x/words.json", "style.css"]
    assert page_files(files) == ["web/app.js", "ui/index.html", "x/words.json", "style.css"]


def test_the_runtime_holds_no_page_and_no_tool_file() -> None:
    files = runtime_files()
    assert "engine.py" in files and "echo/echo.toml" in files  # the walk sees the runtime
    assert page_files(files) == []
    assert [f for f in TOOL_ONLY if f in files] == []
    assert not (RUNTIME / "web").exists()
    assert (ROOT / "web" / "index.html").is_file() and (ROOT / "web" / "app.js").is_file()


def test_the_wheel_packages_no_page_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data: dict[str, list[str]] = config["tool"]["setuptools"]["package-data"]
    patterns = [pattern for globs in data.values() for pattern in globs]
    assert "horcrux.web" not in data
    assert not [p for p in patterns if p.endswith(PAGE_SUFFIXES)]
