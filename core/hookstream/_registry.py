"""Plugin registry: a pluggy PluginManager fed from the ``hookstream`` entry-point group.

Built-ins register through the same group (``builtins = hookstream._builtins``). A plugin that fails to import or
whose hook raises is recorded in :attr:`Registry.failures` and skipped; it never stops the others.

Environment:

* ``HOOKSTREAM_BLOCK_PLUGINS``: comma-separated entry-point names not to load (``openai,broken``).
* ``HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD``: when set to a non-empty value, no entry point is loaded
  except the built-ins; tests then register what they need with :meth:`Registry.add_plugin`.

Thread safety: :func:`get_registry` builds the registry once under a lock; afterwards lookups only read
dictionaries and may run on any thread. :meth:`Registry.add_plugin` is for set-up, not concurrent use.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from . import _hookspecs as hookspecs
from ._errors import UnknownPluginError

if TYPE_CHECKING:
    from ._agentloop.executors import ToolExecutor
    from ._agentloop.observe import Observer
    from ._agentloop.stop import StopCondition
    from ._prices import ModelCapabilities
    from ._processing.strategies import ChunkStrategy
    from ._server.auth import Authenticator
    from ._stream.provider import Provider

__all__ = ["PluginFailure", "PluginInfo", "Registry", "get_registry", "reset_registry"]

log = logging.getLogger("hookstream.registry")

GROUP = "hookstream"
BLOCK_ENV = "HOOKSTREAM_BLOCK_PLUGINS"
DISABLE_ENV = "HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD"
KINDS = ("providers", "chunk_strategies", "tool_executors", "stop_conditions", "observers", "authenticators",
         "models")
_SINGULAR = {"providers": "provider", "chunk_strategies": "chunk strategy", "tool_executors": "tool executor",
             "stop_conditions": "stop condition", "observers": "observer", "authenticators": "authenticator",
             "models": "model"}
# Which first-party distribution registers each name, so "no provider named 'gemini'" can say what to install.
# Names nobody here ships get no guessed distribution name: a guess like "hookstream-NAME" would send people to
# whatever a stranger uploaded under that name on the package index (and pip no longer has a search command).
FIRST_PARTY: dict[str, dict[str, str]] = {
    "providers": {
        "openai": "hookstream-openai",
        "openai-responses": "hookstream-openai",
        "anthropic": "hookstream-anthropic",
        "gemini": "hookstream-gemini",
        "azure": "hookstream-azure",
        "azure-responses": "hookstream-azure",
        "vertex": "hookstream-vertex",
        "vertex-anthropic": "hookstream-vertex",
        "bedrock": "hookstream-bedrock",
        "ollama": "hookstream-ollama",
    },
    "chunk_strategies": {
        name: "hookstream-strategies"
        for name in ("punctuation", "batch", "word-boundary", "debounce", "throttle", "composite")
    },
}


@attrs.define(slots=True)
class PluginFailure:
    """A plugin that could not be loaded or whose hook raised: ``name`` and the error text."""

    name: str
    error: str


@attrs.define(slots=True)
class PluginInfo:
    """A loaded plugin: entry-point ``name``, its ``distribution`` and ``version`` (``None`` when not
    installed as a distribution), the hooks it implements and what it registered per kind."""

    name: str
    distribution: str | None
    version: str | None
    hooks: list[str]
    registered: dict[str, list[str]] = attrs.Factory(dict)


class Registry:
    """Everything plugins registered, by kind and name."""

    def __init__(self, autoload: bool = True) -> None:
        self.pm = pluggy.PluginManager("hookstream")
        self.pm.add_hookspecs(hookspecs)
        self.failures: list[PluginFailure] = []
        self.plugins: dict[str, PluginInfo] = {}
        self._items: dict[str, dict[str, Any]] = {k: {} for k in KINDS}
        self._owner: dict[tuple[str, str], str] = {}
        if autoload:
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        blocked = {n.strip() for n in os.environ.get(BLOCK_ENV, "").split(",") if n.strip()}
        disabled = bool(os.environ.get(DISABLE_ENV))
        for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name != "builtins"):
            if ep.name in blocked or (disabled and ep.name != "builtins"):
                continue
            if ep.name in self.plugins:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not stop the others
                self.failures.append(PluginFailure(ep.name, f"{type(exc).__name__}: {exc}"))
                log.warning("plugin %s failed to load: %s", ep.name, exc)
                continue
            dist = ep.dist
            self.add_plugin(module, ep.name, dist.name if dist else None, dist.version if dist else None)

    def add_plugin(
        self, plugin: Any, name: str, distribution: str | None = None, version: str | None = None
    ) -> PluginInfo | None:
        """Register ``plugin`` (module or object with ``hookimpl`` functions) and collect its
        registrations. Returns its :class:`PluginInfo`, or ``None`` when it failed (see ``failures``)."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self.failures.append(PluginFailure(name, f"{type(exc).__name__}: {exc}"))
            return None
        hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        info = PluginInfo(name, distribution, version, hooks)
        for kind in KINDS:
            hook = getattr(self.pm.hook, f"hookstream_register_{kind}")
            got: list[str] = []

            def register(item_name: str, item: Any, _kind: str = kind, _got: list[str] = got) -> None:
                key = (_kind, item_name)
                if key in self._owner and self._owner[key] != name:
                    self.failures.append(
                        PluginFailure(name, f"{_kind} {item_name!r} already registered by {self._owner[key]}")
                    )
                    return
                self._owner[key] = name
                self._items[_kind][item_name] = item
                _got.append(item_name)

            try:
                # Call this plugin's own implementation, so each registration is attributed to it.
                for impl in hook.get_hookimpls():
                    if impl.plugin is plugin:
                        impl.function(register)
            except Exception as exc:
                self.failures.append(PluginFailure(name, f"hookstream_register_{kind}: {type(exc).__name__}: {exc}"))
                log.warning("plugin %s failed in hookstream_register_%s: %s", name, kind, exc)
            if got:
                info.registered[kind] = got
        self.plugins[name] = info
        return info

    def names(self, kind: str) -> list[str]:
        return sorted(self._items[kind])

    def get(self, kind: str, name: str) -> Any:
        """The item registered as ``name`` under ``kind``; raises :class:`UnknownPluginError`, whose message
        lists the installed names and says what to do: the first-party distribution to install
        (:data:`FIRST_PARTY`), why an installed one registered nothing, or a close name for a typo."""
        try:
            return self._items[kind][name]
        except KeyError:
            known = ", ".join(self.names(kind)) or "none"
            hint = self._hint(kind, name)
            raise UnknownPluginError(f"no {_SINGULAR[kind]} named {name!r} (installed: {known}); {hint}") from None

    def _hint(self, kind: str, name: str) -> str:
        # What to do about a missing name: install its first-party distribution, fix a typo, or find the
        # plugin that ships it; an installed distribution that registered nothing was blocked or failed.
        first_party = FIRST_PARTY.get(kind, {})
        dist = first_party.get(name)
        if dist is None:
            close = difflib.get_close_matches(name, {*self.names(kind), *first_party}, n=1)
            if not close:
                return ("install the plugin distribution that registers it (hookstream install SPEC), "
                        "then check with: hookstream plugins")
            if close[0] in self._items[kind]:
                return f"did you mean {close[0]!r}?"
            return f"did you mean {close[0]!r}? ({self._hint(kind, close[0])})"
        try:
            installed = importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            return f"install it with: hookstream install {dist}"
        eps = {ep.name for ep in installed.entry_points if ep.group == GROUP}
        why = "did not register it (see: hookstream plugins)"
        blocked = {n.strip() for n in os.environ.get(BLOCK_ENV, "").split(",")}
        failed = [f.error for f in self.failures if f.name in eps]
        if failed:
            why = f"failed to load: {failed[0]}"
        elif eps & blocked:
            why = f"is blocked by {BLOCK_ENV}"
        elif os.environ.get(DISABLE_ENV):
            why = f"is not loaded because {DISABLE_ENV} is set"
        return f"{dist} {installed.version} is installed but {why}"

    def provider(self, name: str) -> type[Provider]:
        """The provider class registered as ``name``; raises :class:`UnknownPluginError`."""
        cls: type[Provider] = self.get("providers", name)
        return cls

    def chunk_strategy(self, name: str) -> Callable[..., ChunkStrategy]:
        """The chunk-strategy factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[..., ChunkStrategy] = self.get("chunk_strategies", name)
        return factory

    def tool_executor(self, name: str) -> Callable[..., ToolExecutor]:
        """The tool-executor factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[..., ToolExecutor] = self.get("tool_executors", name)
        return factory

    def stop_condition(self, name: str) -> Callable[..., StopCondition]:
        """The stop-condition factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[..., StopCondition] = self.get("stop_conditions", name)
        return factory

    def observer(self, name: str) -> Callable[[], Observer | None]:
        """The observer factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[[], Observer | None] = self.get("observers", name)
        return factory

    def authenticator(self, name: str) -> Callable[[], Authenticator]:
        """The authenticator factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[[], Authenticator] = self.get("authenticators", name)
        return factory

    def model(self, name: str) -> ModelCapabilities:
        """The capabilities registered for ``"PROVIDER:MODEL"``; raises :class:`UnknownPluginError`."""
        capabilities: ModelCapabilities = self.get("models", name)
        return capabilities

    def models(self) -> dict[str, ModelCapabilities]:
        """Every registered model, ``"PROVIDER:MODEL"`` -> capabilities."""
        return dict(self._items["models"])

    def observers(self) -> list[Observer]:
        """One observer from each registered factory, for a new run (factories returning ``None`` and
        factories that raise, logged, left out)."""
        out: list[Observer] = []
        for name, factory in sorted(self._items["observers"].items()):
            try:
                made = factory()
            except Exception as exc:  # a broken observer plugin must not stop the run
                log.warning("observer factory %s failed: %s: %s", name, type(exc).__name__, exc)
                continue
            if made is not None:
                out.append(made)
        return out


_lock = threading.Lock()
_registry: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, built on first use."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = Registry()
    return _registry


def reset_registry(registry: Registry | None = None) -> None:
    """Replace the process-wide registry (``None``: rebuild on next use). For tests."""
    global _registry
    with _lock:
        _registry = registry
