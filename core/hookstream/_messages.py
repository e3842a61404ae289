"""Model messages: the provider-neutral conversation that adapters turn into request bodies.

A :class:`Message` has a role and an ordered list of parts. Assistant messages keep their parts in the
order the model produced them (reasoning, text, tool calls), because some providers need that order
back (Anthropic thinking blocks before ``tool_use``). Provider metadata that must survive a round trip
(Anthropic thinking ``signature``, Gemini ``thoughtSignature``, OpenAI Responses reasoning item ids and
encrypted content) lives in each part's ``provider_metadata``, keyed by provider name; an adapter sends
back only its own key.

Thread safety: messages are plain values; the engine never mutates a message after appending it to the
conversation, so a list of them may be read from any thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

import attrs

__all__ = [
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "coerce_messages",
    "tool_output_text",
]

Role = Literal["system", "user", "assistant", "tool"]
ProviderMetadata = dict[str, dict[str, Any]]


@attrs.define(slots=True)
class TextPart:
    text: str
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["text"] = "text"


@attrs.define(slots=True)
class ReasoningPart:
    """Reasoning text. ``provider_metadata`` carries what the provider needs back (signatures...)."""

    text: str
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["reasoning"] = "reasoning"


@attrs.define(slots=True)
class ToolCallPart:
    """A tool call the model asked for.

    ``arguments`` is the parsed JSON object, or ``None`` when the arguments were cut off or invalid
    (``arguments_raw`` then keeps the text that arrived). Such a call is never executed.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    arguments_raw: str | None = None
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["tool-call"] = "tool-call"


@attrs.define(slots=True)
class ToolResultPart:
    """A tool's output for ``tool_call_id``. ``output`` is any JSON value; ``is_error`` marks a failure
    (the output is then the error text the model receives)."""

    tool_call_id: str
    tool_name: str
    output: Any
    is_error: bool = False
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["tool-result"] = "tool-result"


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart


@attrs.define(slots=True)
class Message:
    """One turn of the conversation.

    Roles and their parts: ``system``/``user`` hold :class:`TextPart`; ``assistant`` holds
    :class:`ReasoningPart`, :class:`TextPart` and :class:`ToolCallPart` in stream order; ``tool``
    holds :class:`ToolResultPart` (one message may carry several results).
    """

    role: Role
    parts: list[Part] = attrs.Factory(list)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", [TextPart(text)])

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", [TextPart(text)])

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", [TextPart(text)])

    @property
    def text(self) -> str:
        """All text parts joined (no separator)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, ReasoningPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]


def tool_output_text(output: Any) -> str:
    """The text a provider receives for a tool output: strings as they are, anything else as JSON.

    Raises :class:`TypeError` when ``output`` is not JSON serialisable.
    """
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False)


def coerce_messages(messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]]) -> list[Message]:
    """Accept a prompt string, one :class:`Message`, or a list of messages / OpenAI-style dicts
    (``{"role": "user", "content": "..."}``) and return a new list of :class:`Message`.

    Raises :class:`ValueError` for a dict with an unknown role or non-text content.
    """
    if isinstance(messages_or_prompt, str):
        return [Message.user(messages_or_prompt)]
    if isinstance(messages_or_prompt, Message):
        return [messages_or_prompt]
    out: list[Message] = []
    for m in messages_or_prompt:
        if isinstance(m, Message):
            out.append(m)
            continue
        role = m.get("role")
        content = m.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ValueError(f"cannot read message {m!r}: need role system/user/assistant and text content")
        out.append(Message(role, [TextPart(content)]))
    return out
