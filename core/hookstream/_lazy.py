"""Module attributes loaded on first use (PEP 562), for faces whose names would otherwise import heavy
modules at start-up: ``hookstream``, ``hookstream.plugin`` and plugins' own packages.

Thread safety: a look-up that races another imports the same module twice at worst (the import system
serialises it) and stores the same value.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes", "resolve_ref"]


def lazy_attributes(
    module_name: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``module_name``: each name of ``names`` (attribute ->
    absolute module name, e.g. ``{"batch": "hookstream._batch"}``) is imported from its module on first
    access and then stored in the module, so later look-ups do not come back here. Assign the pair at
    module level: ``__getattr__, __dir__ = lazy_attributes(__name__, {...})``. An unknown name raises
    :class:`AttributeError`, as for any module."""

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[module_name], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module_name])) | set(names))

    return __getattr__, __dir__


def resolve_ref(ref: str) -> Any:
    """The object a ``"package.module:attribute"`` reference names (``attribute`` may be dotted,
    ``"pkg.mod:Class.factory"``), importing its module. Raises :class:`ValueError` for a string without
    exactly one ``:``, :class:`ImportError` and :class:`AttributeError` as importing and looking up do."""
    module_name, sep, qualname = ref.partition(":")
    if not sep or not module_name or not qualname or ":" in qualname:
        raise ValueError(f"a lazy reference is 'module:attribute', not {ref!r}")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value
