"""The unit tier's collection check (tests/conftest.py, tier_rules.py) finds a
forbidden import in every form, and no file of the tier has one."""

from __future__ import annotations

import re
from pathlib import Path

from tier_rules import forbidden_imports

UNIT = Path(__file__).resolve().parent


def test_the_check_finds_every_form_of_a_forbidden_import() -> None:
    source = "\n".join(
        [
            "import json",
            "import subprocess",
            "from socket import socket",
            "def f():",
            "    from moto import mock_aws",
            "import moto.server as server",
            "from .subprocess import x",  # a relative module of that name is not the stdlib's
        ]
    )
    assert forbidden_imports(source) == [
        "2: subprocess (starts a process)",
        "3: socket (opens a network connection)",
        "5: moto (mocks AWS (boto3 over moto))",
        "6: moto.server (mocks AWS (boto3 over moto))",
    ]


def test_no_unit_test_file_imports_one() -> None:
    files = sorted(UNIT.glob("test_*.py"))
    assert len(files) > 20
    assert {f.name: found for f in files if (found := forbidden_imports(f.read_text()))} == {}


def test_the_readme_table_lists_every_test_file_in_its_tier() -> None:
    tests = UNIT.parent
    listed = dict(
        re.findall(r"^\| `(test_\w+\.py)` \| (\w+) \|$", (tests / "README.md").read_text(), re.M)
    )
    on_disk = {p.name: p.parent.name for p in tests.glob("*/test_*.py")}
    assert listed == on_disk
