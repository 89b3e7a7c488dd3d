"""docs/ARCHITECTURE.md's diagram of the runtime's layers is the import test's `LAYERS`
(tests/integration/test_imports.py), read from both files: the same layers, top down, each
with the same modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
IMPORT_TEST = ROOT / "tests" / "integration" / "test_imports.py"
HEADING = "## The runtime's layers, top down"


def layers_of_the_test() -> list[tuple[str, list[str]]]:
    """`LAYERS` as the import test defines it (its literal, not an import of the file)."""
    for node in ast.parse(IMPORT_TEST.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "LAYERS" and node.value:
                layers = ast.literal_eval(node.value)
                return [(name, [m.removeprefix("horcrux.") for m in mods]) for name, mods in layers]
    raise AssertionError("no LAYERS in the import test")


def layers_of_the_diagram(text: str) -> list[tuple[str, list[str]]]:
    """The diagram's rows, bottom up: (layer, modules). A row begins with one space, the
    layer's name, then its modules (comma-separated); the lines below it that begin with
    more spaces are its description."""
    block = text.split(HEADING, 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines():
        if re.match(r"^ \S", line):
            name, modules = re.split(r"\s{2,}", line.strip())[:2]
            rows.append((name, [m.strip() for m in modules.split(",") if m.strip()]))
    return rows[::-1]


def test_the_diagram_reader_reads_rows_and_skips_descriptions() -> None:
    rows = [" top         a, b.c       what", "                          more", " low  d  x"]
    text = f"{HEADING}\n\n```\n" + "\n".join(rows) + "\n```\n"
    assert layers_of_the_diagram(text) == [("low", ["d"]), ("top", ["a", "b.c"])]


def test_the_diagram_is_the_import_tests_layers() -> None:
    expected = [(name, sorted(mods)) for name, mods in layers_of_the_test()]
    drawn = [(name, sorted(mods)) for name, mods in layers_of_the_diagram(DOC.read_text())]
    assert drawn == expected
