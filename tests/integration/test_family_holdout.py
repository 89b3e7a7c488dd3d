"""The family's held-out guard opened in a fresh interpreter (its flag is process-wide: a
test that opened it in the test process would leak into every later test)."""

from __future__ import annotations

import subprocess
import sys


def test_open_holdout_opens_it_in_a_fresh_interpreter() -> None:
    code = (
        "from horcrux.agents import VOLDEMORT_BRAINS\n"
        "from horcrux.rules import CLASSIC\n"
        "b = VOLDEMORT_BRAINS.create('family:3', CLASSIC)\n"  # found with no import of family
        "assert b.name == 'family:3', b.name\n"
        "from horcrux.agents.family import draw, holdout_open, open_holdout\n"
        "assert not holdout_open()\n"
        "open_holdout()\n"
        "assert holdout_open() and draw(100000).seed == 100000\n"
        "assert VOLDEMORT_BRAINS.create('family:100001', CLASSIC).name == 'family:100001'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
