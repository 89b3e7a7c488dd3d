"""Modules loaded at their first use, not at import: what keeps a Lambda's cold start short.

`lazy_import("horcrux.echo.ops")` returns a stand-in module that imports the real one at
its first attribute access and then forwards every access to it (in the style of
Powertools' `LazyLoader`). A module whose names only some requests use is bound this way,
typed for mypy by the real import under `TYPE_CHECKING`:

    if TYPE_CHECKING:
        from horcrux.echo import ops
    else:
        ops = lazy_import("horcrux.echo.ops")

A package whose names live in submodules loaded on first use (PEP 562) binds its module
`__getattr__` with `lazy_attributes`, the same mechanism for a package's attributes:

    __getattr__ = lazy_attributes(__name__, {"build_app": "horcrux.api.app:build_app"})

This module is the runtime's one lazy loader: nothing else calls `import_module` for that.
The import graph checks read `lazy_import("...")` calls and `lazy_attributes`' literal
targets as imports (tests/integration/test_imports.py, infra/clean_import.py): a lazy import
still counts for cycles and for what the layer holds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """A stand-in for the module `name`, imported at the first attribute read."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._lazy_target: ModuleType | None = None

    def _lazy_load(self) -> ModuleType:
        target = self._lazy_target
        if target is None:
            target = self._lazy_target = import_module(self.__name__)
        return target

    def __getattr__(self, attribute: str) -> Any:  # only for names this stand-in lacks
        return getattr(self._lazy_load(), attribute)

    def __dir__(self) -> list[str]:
        return dir(self._lazy_load())

    def __repr__(self) -> str:
        state = "loaded" if self._lazy_target is not None else "not loaded yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def lazy_import(name: str) -> ModuleType:
    """The module `name` if it is already imported, else a stand-in that imports it on use."""
    loaded = sys.modules.get(name)
    return loaded if loaded is not None else LazyModule(name)


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` (PEP 562) for `package`: a name of `where` is imported at its
    first use. A target `module:attribute` answers that attribute of the module; a target
    without `:` answers the module itself (a package's submodule). Any other name raises
    AttributeError, as a module without the name would."""
    targets = dict(where)

    def module_getattr(name: str) -> Any:
        target = targets.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        loaded = import_module(module)
        return getattr(loaded, attribute) if attribute else loaded

    return module_getattr


__all__ = ["LazyModule", "lazy_attributes", "lazy_import"]
