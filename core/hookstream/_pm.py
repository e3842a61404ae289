"""hookstream's pluggy ``PluginManager``: the hook specs of :mod:`hookstream._hookspecs`, and every
``hookstream_*`` attribute of a plugin treated as a hook implementation, so a misspelt hook is an error
instead of a function nobody calls (pytest does the same with ``pytest_*`` names).

Thread safety: a manager is built and its plugins registered on one thread; calling hooks
(``pm.hook.NAME(...)``) is safe from any number of threads.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Sequence
from typing import Any

import pluggy

from . import _hookspecs
from ._errors import PluginError
from ._markers import RUN_HOOKS, hookimpl

__all__ = ["PREFIX", "HookstreamPluginManager", "RunHookSpecs", "hookimpl", "run_manager"]

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
        self.declared_specs: list[Any] = []
        """What :meth:`add_hookspecs` added after the built-in ``specs``: the hooks plugins declared
        (``hookstream_addhooks``), which a run's manager adds too."""
        super().add_hookspecs(specs)

    def add_hookspecs(self, module_or_class: Any) -> None:
        super().add_hookspecs(module_or_class)
        self.declared_specs.append(module_or_class)

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


# Only the run hooks, for a run's manager: adding the specs is part of the cost of each manager built. With
# hookstream_addhooks, so a plugin that declares hooks may implement run hooks too (a run's manager does not
# call it: it is given the hooks plugins declared in the registry instead).
RunHookSpecs = type("RunHookSpecs", (), {name: staticmethod(getattr(_hookspecs, name))
                                         for name in ("hookstream_addhooks", *RUN_HOOKS)})


def run_manager(installed: Sequence[tuple[str, object]], extra: Sequence[tuple[str, object]] = (),
                specs: Sequence[Any] = ()) -> HookstreamPluginManager:
    """One manager holding every plugin of a run: the built-in implementations (``trylast``), the
    ``installed`` plugins (on for every run), then ``extra`` (the run's own plugins), each ``(name,
    plugin)``. pluggy orders them as pytest does: wrappers outermost, then ``tryfirst``, plain, ``trylast``,
    and within one of those the plugin registered last first. So every wrapper, installed or per-run, sees
    every call, whichever plugin answers it or refuses it. ``specs`` are hook specs plugins declared
    (``hookstream_addhooks``), so a run plugin may implement them.

    Raises :class:`~hookstream.errors.PluginError` for a plugin object whose ``hookstream_*`` method matches
    no hook spec or takes an argument its spec does not name."""
    pm = HookstreamPluginManager(RunHookSpecs)
    for source in specs:
        pm.add_hookspecs(source)
    # Imported here: the built-in implementations bring the model call and requests, which a command that
    # only lists plugins never needs.
    from ._agentloop.hooks import BUILTIN

    pm.register(BUILTIN, name="hookstream-builtin-run-hooks")
    for name, plugin in (*installed, *extra):
        _register(pm, name, plugin)
    return pm


def _register(pm: HookstreamPluginManager, name: str, plugin: object) -> None:
    try:
        pm.register(plugin, name=f"{name}#{id(plugin)}")
    except ValueError:
        return  # the same object twice in one run: once is enough
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"run plugin {name!r} is not valid: {exc}") from None
    unknown = pm.unknown_hooks(plugin)
    if unknown:
        pm.unregister(plugin)
        raise PluginError(f"run plugin {name!r} implements {', '.join(unknown)}, which no hook spec names "
                          f"(see docs/hooks.rst)")
