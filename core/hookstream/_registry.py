"""Plugin registry: a pluggy PluginManager fed from the ``hookstream`` entry-point group.

Built-ins register through the same group (``builtins = hookstream._builtins``). Every hook is called
through pluggy: the ``hookstream_register_*`` hooks are historic, called once here before any plugin
loads, so pluggy runs each plugin's implementation as the plugin registers and every name is credited to
its plugin. A plugin is refused, recorded in :attr:`Registry.failures` and unregistered (nothing it
registered is kept) when it fails to import, when a hook raises, when pluggy's validation refuses a hook
(an argument its spec does not name, a wrapper of a historic hook) or when it has a ``hookstream_*``
function that matches no spec (a misspelt hook). It never stops the others.

A registered thing may be a ``"module:attribute"`` string: it is imported when first asked for
(:meth:`Registry.get`), so a plugin's heavy modules load on first use. Plugins that implement run hooks
(:mod:`hookstream._agentloop.hooks`) are on for every run; :meth:`Registry.run_hooks` gives a run its hooks.

Environment:

* ``HOOKSTREAM_BLOCK_PLUGINS``: comma-separated entry-point names not to load (``openai,broken``).
* ``HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD``: when set to a non-empty value, no entry point is loaded
  except the built-ins; tests then register what they need with :meth:`Registry.add_plugin`.

Thread safety: :func:`get_registry` builds the registry once under a lock; afterwards lookups only read
dictionaries and may run on any thread. :meth:`Registry.add_plugin` is for set-up, not concurrent use.
"""

from __future__ import annotations

import collections
import contextlib
import difflib
import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._errors import PluginError, UnknownPluginError
from ._lazy import resolve_ref
from ._markers import RUN_HOOKS
from ._pm import HookstreamPluginManager, run_manager

if TYPE_CHECKING:
    from ._agentloop.executors import ToolExecutor
    from ._agentloop.hooks import RunHooks
    from ._agentloop.observe import Observer
    from ._agentloop.stop import StopCondition
    from ._capabilities import ModelCapabilities
    from ._principal import Authenticator
    from ._processing.strategies import ChunkStrategy
    from ._stream.provider import Provider

__all__ = ["PluginFailure", "PluginInfo", "Registry", "get_registry", "reset_registry"]

log = logging.getLogger("hookstream.registry")

GROUP = "hookstream"
_RUN_MANAGERS = 64  # run plugin sets whose managers are kept (least recently used dropped)
BLOCK_ENV = "HOOKSTREAM_BLOCK_PLUGINS"
DISABLE_ENV = "HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD"
KINDS = ("providers", "chunk_strategies", "tool_executors", "stop_conditions", "observers", "authenticators",
         "models", "run_plugins")
_SINGULAR = {"providers": "provider", "chunk_strategies": "chunk strategy", "tool_executors": "tool executor",
             "stop_conditions": "stop condition", "observers": "observer", "authenticators": "authenticator",
             "models": "model", "run_plugins": "run plugin"}
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
        "agui": "hookstream-server",
        "replay": "hookstream-replay",
    },
    "chunk_strategies": {
        name: "hookstream-strategies"
        for name in ("punctuation", "batch", "word-boundary", "debounce", "throttle", "composite")
    },
    "run_plugins": {"budget": "hookstream-budget"},
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
    run_hooks: list[str] = attrs.Factory(list)


class Registry:
    """Everything plugins registered, by kind and name."""

    def __init__(self, autoload: bool = True) -> None:
        self.pm = HookstreamPluginManager()
        self.failures: list[PluginFailure] = []
        self.plugins: dict[str, PluginInfo] = {}
        self._items: dict[str, dict[str, Any]] = {k: {} for k in KINDS}
        self._owner: dict[tuple[str, str], str] = {}
        self._loading: list[tuple[str, PluginInfo]] = []  # the plugin pm.register is registering now
        self._run_plugins: list[tuple[str, object]] = []
        # A run's own plugin objects -> their manager: a server or a CLI command that gives every run the same
        # objects (RunSettings.plugins) builds it once. The objects are kept with it, so an id is not reused.
        self._run_managers: collections.OrderedDict[tuple[Any, ...], tuple[HookstreamPluginManager, list[object]]] = (
            collections.OrderedDict())
        self._managers_lock = threading.Lock()
        self._batches = 0  # open loading() blocks: their plugins' hook names are checked when the last closes
        self._pending: list[tuple[str, object, PluginInfo]] = []
        # Historic, as pytest's pytest_addhooks: a plugin declares its hook specs as it registers.
        self.pm.hook.hookstream_addhooks.call_historic(kwargs={"pluginmanager": self.pm})
        for kind in KINDS:
            # Historic: pluggy calls every plugin's implementation as the plugin registers (below).
            hook = getattr(self.pm.hook, f"hookstream_register_{kind}")
            hook.call_historic(kwargs={"register": self._registrar(kind)})
        if autoload:
            self._load_entry_points()

    def _registrar(self, kind: str) -> Callable[[str, Any], None]:
        def register(item_name: str, item: Any) -> None:
            if not self._loading:
                raise PluginError(f"register({item_name!r}) called outside a plugin's registration")
            name, info = self._loading[-1]
            key = (kind, item_name)
            if key in self._owner and self._owner[key] != name:
                self.failures.append(PluginFailure(name, f"{kind} {item_name!r} already registered by "
                                                         f"{self._owner[key]}"))
                return
            self._owner[key] = name
            self._items[kind][item_name] = item
            info.registered.setdefault(kind, []).append(item_name)

        return register

    @contextlib.contextmanager
    def loading(self) -> Iterator[None]:
        """Add several plugins (:meth:`add_plugin` inside the block) and check their hook names once all are
        in, as pytest's ``check_pending``: a plugin may implement a hook another plugin of the block declares
        (``hookstream_addhooks``), in either order. A ``hookstream_*`` function still matching no spec when
        the outermost block ends refuses its plugin then (see ``failures``). Entry points load in one block."""
        self._batches += 1
        try:
            yield
        finally:
            self._batches -= 1
            if not self._batches:
                self.check_pending()

    def check_pending(self) -> None:
        """Refuse every plugin added since the last check with a ``hookstream_*`` function that matches no
        hook spec (misspelt, or naming a hook no loaded plugin declared)."""
        pending, self._pending = self._pending, []
        for name, plugin, info in pending:
            unknown = self.pm.unknown_hooks(plugin) if self.pm.is_registered(plugin) else []
            if unknown:
                self._refuse(plugin, name, info, _no_such_hook(unknown))
                self.plugins.pop(name, None)
                self._run_plugins = [(n, p) for n, p in self._run_plugins if p is not plugin]
                self._run_managers.clear()

    def _load_entry_points(self) -> None:
        with self.loading():
            self._load_entry_points_now()

    def _load_entry_points_now(self) -> None:
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
        """Register ``plugin`` (module or object with ``hookimpl`` functions) through pluggy and collect
        its registrations. Returns its :class:`PluginInfo`, or ``None`` when it was refused (see
        ``failures``; nothing it registered is kept). Inside :meth:`loading`, a hook name matching no spec
        is refused when the block ends instead of here."""
        info = PluginInfo(name, distribution, version, [])
        self._loading.append((name, info))
        try:
            self.pm.register(plugin, name=name)
            unknown = self.pm.unknown_hooks(plugin)
            if unknown and not self._batches:
                raise _no_such_hook(unknown)
            if unknown:
                self._pending.append((name, plugin, info))
        except Exception as exc:
            self._refuse(plugin, name, info, exc)
            return None
        finally:
            self._loading.pop()
        info.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        info.run_hooks = sorted(c.name for c in self.pm.get_hookcallers(plugin) or [] if c.name in RUN_HOOKS)
        if info.run_hooks:
            self._run_plugins.append((name, plugin))
            self._run_managers.clear()
        self.plugins[name] = info
        return info

    def _refuse(self, plugin: Any, name: str, info: PluginInfo, exc: BaseException) -> None:
        """Record why ``plugin`` is refused, unregister it and forget what it registered."""
        text = exc.message if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
        text = " ".join(text.split())  # pluggy's validation messages span lines; a failure is one line
        self.failures.append(PluginFailure(name, text))
        log.warning("plugin %s refused: %s", name, text)
        if self.pm.is_registered(plugin):
            self.pm.unregister(plugin)
        for kind, names in info.registered.items():
            for item_name in names:
                if self._owner.get((kind, item_name)) == name:
                    del self._owner[(kind, item_name)]
                    self._items[kind].pop(item_name, None)

    def names(self, kind: str) -> list[str]:
        return sorted(self._items[kind])

    def get(self, kind: str, name: str) -> Any:
        """The item registered as ``name`` under ``kind``; raises :class:`UnknownPluginError`, whose message
        lists the installed names and says what to do: the first-party distribution to install
        (:data:`FIRST_PARTY`), why an installed one registered nothing, or a close name for a typo."""
        try:
            item = self._items[kind][name]
        except KeyError:
            known = ", ".join(self.names(kind)) or "none"
            hint = self._hint(kind, name)
            raise UnknownPluginError(f"no {_SINGULAR[kind]} named {name!r} (installed: {known}); {hint}") from None
        if isinstance(item, str) and kind != "models":
            owner = self._owner.get((kind, name), "?")
            try:
                item = resolve_ref(item)
            except Exception as exc:
                raise PluginError(f"{_SINGULAR[kind]} {name!r} of plugin {owner} cannot be loaded: "
                                  f"{type(exc).__name__}: {exc}") from exc
            self._items[kind][name] = item  # imported once; a dict store is atomic, so threads may race here
        return item

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
            from ._install_hint import install_command

            return f"install it with: {install_command(dist)}"
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
        for name in sorted(self._items["observers"]):
            try:
                made = self.get("observers", name)()
            except Exception as exc:  # a broken observer plugin must not stop the run
                log.warning("observer factory %s failed: %s: %s", name, type(exc).__name__, exc)
                continue
            if made is not None:
                out.append(made)
        return out

    def run_plugin(self, name: str) -> Callable[..., object]:
        """The run-plugin factory registered as ``name``; raises :class:`UnknownPluginError`."""
        factory: Callable[..., object] = self.get("run_plugins", name)
        return factory

    def run_hooks(self, plugins: Sequence[object] = (), observers: Sequence[Any] = ()) -> RunHooks | None:
        """The hooks of a new run: one pluggy manager holding the run plugins installed plugins keep on,
        then ``plugins`` (names, ``(name, {options})`` or objects, as ``RunSettings.plugins`` holds them),
        then one plugin driving ``observers`` and the registered observer factories, ordered as pytest orders
        hooks (wrappers outermost, ``tryfirst`` first), so an installed wrapper sees a call a run's plugin
        answers. ``None`` when nothing implements a run hook (the engine then adds nothing to the run).
        Raises :class:`UnknownPluginError` for an unknown name and :class:`PluginError` for an invalid
        plugin object."""
        # Imported here: the run-hook machinery brings the model call and requests, which a command that only
        # lists plugins or replays a body never needs at start.
        from ._agentloop.hooks import RunHooks, options_of
        from ._agentloop.observe import STATE_KEY, ObserverPlugin

        extra: list[tuple[str, object]] = []
        for spec in plugins:
            named = options_of(spec)
            if named is None:
                extra.append((type(spec).__name__, spec))
            else:
                extra.append((named[0], self.run_plugin(named[0])(**named[1])))
        watching = [*self.observers(), *observers]
        if not extra and not watching and not self._run_plugins:
            return None
        state = {STATE_KEY: ObserverPlugin(watching)} if watching else None
        return RunHooks(self._run_manager(bool(watching), extra), state)

    def _run_manager(self, observed: bool, extra: list[tuple[str, object]]) -> HookstreamPluginManager:
        # Kept per set of a run's own plugin objects: a run with only the installed plugins, or a server that
        # gives every run the same objects, builds its manager once (the objects are kept with it, so an id is
        # not reused while its manager is).
        from ._agentloop.observe import OBSERVERS

        key = (observed, *(id(plugin) for _, plugin in extra))
        with self._managers_lock:
            found = self._run_managers.get(key)
            if found is not None:
                self._run_managers.move_to_end(key)
                return found[0]
        installed = [*self._run_plugins, *([("observers", OBSERVERS)] if observed else [])]
        pm = run_manager(installed, extra, self.pm.declared_specs)
        with self._managers_lock:
            self._run_managers[key] = (pm, [plugin for _, plugin in extra])
            while len(self._run_managers) > _RUN_MANAGERS:
                self._run_managers.popitem(last=False)
        return pm



def _no_such_hook(names: Sequence[str]) -> PluginError:
    return PluginError(f"{', '.join(names)}: no such hook (misspelt? see docs/hooks.rst)")


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
