"""The brain registries in a fresh interpreter (the subprocess half of
tests/unit/test_brains_baseline.py): the built-in brains register on the first lookup,
not at import."""

from __future__ import annotations

import subprocess
import sys


def test_built_in_brains_register_on_the_first_lookup_not_at_import() -> None:
    # in a fresh interpreter: importing the package (what the API Lambda does at start-up)
    # brings no brain and no numpy; the first lookup registers every built-in brain, and
    # a name registered before it keeps its own factory
    code = (
        "import sys\n"
        "from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS\n"
        "import horcrux.service\n"
        "assert 'numpy' not in sys.modules and 'horcrux.agents.planner' not in sys.modules\n"
        "HARRY_BRAINS.register('naive')(lambda options: 'mine')\n"
        "assert 'numpy' not in sys.modules\n"
        "names = HARRY_BRAINS.names()\n"
        "assert {'planner', 'planner-window', 'gated', 'oracle'} <= set(names), names\n"
        "assert {'reference', 'shadow', 'passive'} <= set(VOLDEMORT_BRAINS.names())\n"
        "assert 'numpy' in sys.modules\n"
        "from horcrux.rules import CLASSIC\n"
        "assert HARRY_BRAINS.create('naive', CLASSIC) == 'mine'\n"
        "import horcrux.agents as agents\n"
        "assert agents.planner.PlannerHarry.name == 'planner'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
