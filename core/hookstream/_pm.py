"""hookstream's pluggy ``PluginManager``: the hook specs of :mod:`hookstream._hookspecs`, and every
``hookstream_*`` attribute of a plugin treated as a hook implementation, so a misspelt hook is an error
instead of a function nobody calls (pytest does the same with ``pytest_*`` names).

Thread safety: a manager is built and its plugins registered on one thread; calling hooks
(``pm.hook.NAME(...)``) is safe from any number of threads.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import pluggy

from . import _hookspecs
from ._hookspecs import hookimpl

__all__ = ["PREFIX", "HookstreamPluginManager", "hookimpl"]

PREFIX = "hookstream_"


_MARK = "hookstream_impl"


def _marked(plugin: Any, name: str) -> bool:
    """Whether ``plugin.name`` carries a ``@hookimpl`` mark, read from the namespaces without running a
    descriptor (a property of a plugin object is not called)."""
    if isinstance(plugin, types.ModuleType):
        value = vars(plugin).get(name)
    else:
        value = getattr(plugin, "__dict__", {}).get(name)
        for klass in type(plugin).__mro__:
            if value is not None:
                break
            value = vars(klass).get(name)
    value = getattr(value, "__func__", value)  # staticmethod / classmethod objects
    return callable(value) and getattr(value, _MARK, None) is not None


class HookstreamPluginManager(pluggy.PluginManager):
    """A ``PluginManager("hookstream")`` with the hook specs added (``specs``: all of
    :mod:`hookstream._hookspecs`, or a class holding some of them, as a run's own manager does)."""

    def __init__(self, specs: Any = _hookspecs) -> None:
        super().__init__("hookstream")
        self.add_hookspecs(specs)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        if not name.startswith(PREFIX) and not _marked(plugin, name):
            # Hooks are named hookstream_*, or marked with another name and a specname: nothing else of a
            # plugin (a module's imports, an object's dunder methods) goes through pluggy's inspection,
            # which makes registering a run's plugins cheap.
            return None
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(PREFIX):
            # An unmarked hookstream_* function is still meant as a hook: take it, so check() can refuse a
            # name that matches no spec. Only functions: a module's constants are not hooks.
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                        "trylast": False, "specname": None}
        return opts

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        if not name.startswith(PREFIX):
            return None
        return super().parse_hookspec_opts(module_or_class, name)

    def unknown_hooks(self, plugin: Any) -> list[str]:
        """Names of ``plugin``'s hook implementations that match no hook spec."""
        return sorted(caller.name for caller in self.get_hookcallers(plugin) or [] if not caller.has_spec())
