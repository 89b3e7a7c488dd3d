"""The optional extras the `horcrux` tools need, and a clear refusal when one is missing.

The runtime package (what the Lambda functions import) needs only pydantic, Powertools and
numpy; the tools need more (tools/pyproject.toml's optional dependencies, all installed by
`make venv`):

- `local`: `horcrux serve` and `horcrux play --local` start an embedded moto DynamoDB and
  talk to it with boto3 (the Lambda runtime ships boto3, a laptop does not);
- `eval`: `horcrux evaluate` and `horcrux season` draw their plots with matplotlib;
- `llm`: the LLM brains' Anthropic SDK (the brains fall back locally without it);
- `ray`: `--engine ray` of the batch commands (`horcrux_tools.batch.ray_engine`, which
  refuses with exit 2 and the install command when Ray is missing).

A command calls `require_extra(extra, command)` first: with a module missing it exits with
a message naming the `pip install 'horcrux-tools[extra]'` that brings it, instead of a
traceback from deep inside (`ModuleNotFoundError: No module named 'moto'`).
"""

from __future__ import annotations

import importlib.util

DISTRIBUTION = "horcrux-tools"
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "local": ("moto", "boto3"),
    "eval": ("matplotlib",),
    "llm": ("anthropic",),
    "ray": ("ray",),
}
"""The top-level modules each extra of tools/pyproject.toml brings (tests/infra/test_layer.py)."""


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The names in `modules` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require_extra(extra: str, command: str, *, modules: tuple[str, ...] | None = None) -> None:
    """Return if `extra`'s modules are installed; else exit (status 1) naming the install."""
    missing = missing_modules(EXTRA_MODULES[extra] if modules is None else modules)
    if missing:
        raise SystemExit(
            f"horcrux {command} needs {', '.join(missing)}, which the [{extra}] extra "
            f"installs: pip install '{DISTRIBUTION}[{extra}]'"
        )
