"""``hookstream.count_tokens``: how many input tokens a request would take, before it is sent.

Thread safety: a call builds its own provider object (closed before returning) unless given one, which
may be shared as any provider is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._agentloop.tools import Tool, as_tools
from ._aliases import resolve_alias
from ._chat import get_model
from ._errors import UnknownModelError
from ._messages import Message, coerce_messages
from ._stream.count import TokenCount, count_request
from ._stream.provider import ModelRequest, Provider

__all__ = ["TokenCount", "count_tokens"]


def count_tokens(
    model: str | Provider,
    messages: str | Message | Sequence[Message | dict[str, Any]],
    *,
    tools: Sequence[Tool | Callable[..., Any] | dict[str, Any]] = (),
    system: str | None = None,
    **model_options: Any,
) -> TokenCount:
    """The input tokens of a request to ``model`` holding ``messages`` (a prompt string, a
    :class:`~hookstream.Message` or a list of messages / ``{"role", "content"}`` dicts), ``tools`` (as
    ``chat(tools=...)`` takes them) and ``system`` (a system prompt put first, as ``chat(system=...)``
    does), as a :class:`~hookstream.TokenCount` (``input_tokens``, ``source``, ``model``).

    ``model`` is ``"PROVIDER:MODEL"``, an alias, or a provider object. ``model_options`` go to
    :func:`~hookstream.get_model` (``base_url``, ``api_key``, ``session``, the provider's own options such
    as ``region``), except ``options``: provider body fields of the request, as ``chat(options=...)``
    (Anthropic ``thinking`` counts).

    The count comes from the provider's count endpoint when its adapter has one (``source="provider"``:
    Anthropic, Gemini and Vertex AI Gemini, OpenAI Responses, Bedrock), else from tiktoken for OpenAI
    models when ``hookstream[tokens]`` is installed and its BPE file loads (``"tokenizer"``), else 4
    characters a token (``"estimate"``). A count endpoint answering 404 or 405 (a compatible server that
    lacks it) is counted locally and the source says so. See ``docs/tokens.md``.

    Raises :class:`~hookstream.errors.UnknownModelError` for a model without a provider prefix that no
    alias names, :class:`~hookstream.errors.UnknownPluginError` for an unknown provider,
    :class:`~hookstream.errors.MissingCredentialsError` before sending, and the provider call's typed
    errors (:class:`~hookstream.errors.ConnectError`, :class:`~hookstream.errors.HTTPStatusError`
    subclasses, :class:`~hookstream.errors.MalformedChunkError`); :class:`ValueError` for messages or
    tools the provider cannot express.
    """
    options = model_options.pop("options", None) or {}
    own = isinstance(model, str)
    if isinstance(model, str) and model != "test" and ":" not in resolve_alias(model):
        raise UnknownModelError(model)
    provider = get_model(model, **model_options)
    try:
        return count_request(provider, _request(provider, messages, tools, system, options))
    finally:
        if own:
            provider.close()


def _request(
    provider: Provider, messages: str | Message | Iterable[Message | dict[str, Any]],
    tools: Sequence[Tool | Callable[..., Any] | dict[str, Any]], system: str | None, options: dict[str, Any],
) -> ModelRequest:
    msgs = coerce_messages(messages)
    if system is not None and not (msgs and msgs[0].role == "system"):
        msgs.insert(0, Message.system(system))
    specs = [t.spec() for t in as_tools(tools).values()]
    return ModelRequest(model=provider.model, messages=msgs, tools=specs, options=dict(options))
