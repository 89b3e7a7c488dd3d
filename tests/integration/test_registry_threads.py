"""The brain registries under threads: the first lookups of a fresh process, made at once by
several threads (the local server's request threads), all see every built-in brain."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import json, threading, time
    import horcrux.agents.base as base

    real = base.import_module

    def slow_import(name):  # widen the window in which the built-ins are half loaded
        time.sleep(0.02)
        return real(name)

    base.import_module = slow_import
    barrier = threading.Barrier(8)
    found = []

    def lookup():
        barrier.wait()
        try:
            base.HARRY_BRAINS.entry("planner")
            base.VOLDEMORT_BRAINS.entry("shadow")
            found.append("ok")
        except Exception as exc:
            found.append(type(exc).__name__)

    threads = [threading.Thread(target=lookup) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(found))
    """
)


def test_concurrent_first_lookups_all_find_the_builtin_brains() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "shared"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert json.loads(out.stdout) == ["ok"] * 8, out.stderr
