"""Fallback models: one step tried on the next model when the previous one could not answer.

:class:`FallbackModel` is a :class:`~hookstream.plugin.Provider`, so it goes wherever a model goes
(``chat()``, ``get_model()``, ``make_app``/``chat_factory``, ``batch``). The engine recognises it and runs
each step's model call on its entries in turn (``hookstream._agentloop.engine``, ``Engine._step``): an entry
that ends in a :func:`fallible` failure **before any content of the step reached the caller** (after
the call's own retries, ``LoopSettings.max_retries``) hands the same provider-neutral request, with
that entry's model name, to the next entry. Once content has streamed nothing falls back: the run ends
with the error, keeping the text, and the error message says that no fallback happens after content.

Entries given as ``"PROVIDER:MODEL"`` strings are built once, on first use (``chat()`` resolves them
when the run is created, with :func:`~hookstream.get_model`), then shared by every run that uses the
``FallbackModel``; :meth:`FallbackModel.close` closes their connection pools. Provider objects given
by the caller keep theirs (their owner closes them).

Thread safety: a FallbackModel may serve runs on many threads, like any provider from ``get_model``;
resolving the entries happens once, under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from .._aliases import resolve_alias
from .._errors import ProviderError, StreamTimeoutError
from .._events import BaseEvent
from .provider import CallContext, HTTPRequest, ModelRequest, Provider
from .retry import retryable

__all__ = ["FallbackModel", "fallible"]


def fallible(exc: BaseException | None, code: str | None, message: str) -> bool:
    """Whether a model call that ended with ``RUN_ERROR`` (``code``, ``message``) and the typed ``exc``
    (``ModelCall.exception``; ``None`` for an error the provider reported inside the stream) may go to
    the next model: what :func:`hookstream._stream.retry.retryable` retries (connect errors and connect
    timeouts, HTTP 408/409/429/5xx, in-stream overload and rate-limit errors), plus a first-event
    timeout (``first_event``, or ``idle`` before the first event)."""
    if exc is None:
        exc = ProviderError(message, error_type=code)
    if isinstance(exc, StreamTimeoutError) and exc.limit in ("first_event", "idle"):
        return True
    return retryable(exc)


class FallbackModel(Provider):
    """Models tried in order for each step: ``FallbackModel("openai:gpt-4o-mini", get_model(...), ...)``.

    Each entry is a ``"PROVIDER:MODEL"`` string or a provider object (from :func:`~hookstream.get_model`,
    with its own base URL and key); a FallbackModel entry contributes its own entries. ``model`` is the
    first entry's model name (what ``StepStart.model`` shows); :attr:`labels` are the entries as
    ``"PROVIDER:MODEL"``. Which entry answered a step is ``StepResult.provider`` and the step's
    ``STEP_FINISHED`` ``metadata["hookstream"]["provider"]``; the model calls of every entry tried are
    observed (OpenTelemetry ``chat`` spans) under their own provider and model.

    A string entry may be an alias (``hookstream aliases set fast openai:gpt-4o-mini``).
    Raises :class:`ValueError` for no entry or a string without ``PROVIDER:`` and :class:`TypeError` for
    an entry that is neither a string nor a provider. An unknown provider name raises
    :class:`~hookstream.errors.UnknownPluginError` when the entries are resolved (``chat()``).

    Thread safety: share it between runs and threads like any provider object.
    """

    name: ClassVar[str] = "fallback"
    _specs: list[str | Provider]

    def __init__(self, *models: str | Provider) -> None:
        specs: list[str | Provider] = []
        for m in models:
            if isinstance(m, FallbackModel):
                specs.extend(m._specs)
            elif isinstance(m, Provider):
                specs.append(m)
            elif isinstance(m, str):
                m = resolve_alias(m)  # an alias of the user's (hookstream aliases set NAME MODEL)
                pname, sep, mname = m.partition(":")
                if not (pname and sep and mname):
                    raise ValueError(f"a fallback model is 'PROVIDER:MODEL' (e.g. 'openai:gpt-4o-mini'), got {m!r}")
                specs.append(m)
            else:
                raise TypeError(f"a fallback model is a 'PROVIDER:MODEL' string or a provider, not {type(m).__name__}")
        if not specs:
            raise ValueError("FallbackModel needs at least one model")
        first = specs[0]
        super().__init__(first.model if isinstance(first, Provider) else first.partition(":")[2])
        self._specs = specs
        self._entries: tuple[Provider, ...] | None = None
        self._owned: list[Provider] = []
        self._lock = threading.Lock()

    @property
    def labels(self) -> tuple[str, ...]:
        """The entries as ``"PROVIDER:MODEL"``, in order."""
        return tuple(s.label() if isinstance(s, Provider) else s for s in self._specs)

    def resolve(self, resolver: Callable[[str], Provider] | None) -> tuple[Provider, ...]:
        """The entries as provider objects, building the ``"PROVIDER:MODEL"`` ones with ``resolver``
        (:func:`~hookstream.get_model`) the first time; later calls return the same objects. Raises
        :class:`ValueError` when a string entry must be built and ``resolver`` is ``None``, and what the
        resolver raises (:class:`~hookstream.errors.UnknownPluginError`)."""
        entries = self._entries
        if entries is not None:
            return entries
        with self._lock:
            if self._entries is None:
                built: list[Provider] = []
                owned: list[Provider] = []
                try:
                    for spec in self._specs:
                        if isinstance(spec, Provider):
                            built.append(spec)
                            continue
                        if resolver is None:
                            raise ValueError(f"cannot build fallback model {spec!r}: no resolver (use chat())")
                        provider = resolver(spec)
                        owned.append(provider)
                        built.append(provider)
                except BaseException:
                    for p in owned:
                        p.close()
                    raise
                self._owned = owned
                self._entries = tuple(built)
            return self._entries

    def close(self) -> None:
        """Close the connection pools of the entries built from strings (they stay usable: the next
        call opens a new pool); provider objects given by the caller are left to their owner."""
        with self._lock:
            owned = list(self._owned)
        for p in owned:
            p.close()

    def redact(self, text: str) -> str:
        for p in self._entries or ():
            text = p.redact(text)
        return text

    def check_api_key(self) -> None:
        """Nothing to check here: each entry checks its own key when its call is made."""
        return None

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        raise TypeError("a FallbackModel is not called directly: the engine (chat()) calls its models in turn")

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        raise TypeError("a FallbackModel is not called directly: the engine (chat()) calls its models in turn")

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(repr(s) for s in self.labels)})"
