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

import base64
import binascii
import json
import mimetypes
import os
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import unquote_to_bytes

import attrs

__all__ = [
    "FilePart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "SourcePart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "coerce_messages",
    "detect_media_type",
    "tool_output_text",
]

Role = Literal["system", "user", "assistant", "tool"]
ProviderMetadata = dict[str, dict[str, Any]]


def _typed(*types: type, optional: bool = False, hint: str = "") -> Any:
    """An attrs validator raising :class:`TypeError` naming the field and the wrong type (never the
    value: it may be megabytes of file data or a secret)."""
    names = " or ".join(t.__name__ for t in types) + (" or None" if optional else "")

    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool) and int in types):
            raise TypeError(f"{type(instance).__name__}.{attribute.name} must be {names}, not "
                            f"{type(value).__name__}{hint}")

    return check


_str = _typed(str)
_opt_str = _typed(str, optional=True)


@attrs.define(slots=True)
class TextPart:
    """Text of a message. Raises :class:`TypeError` at construction for text that is not a ``str``
    (as every message value class does for a field of the wrong type)."""

    text: str = attrs.field(validator=_str)
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["text"] = "text"


@attrs.define(slots=True)
class ReasoningPart:
    """Reasoning text. ``provider_metadata`` carries what the provider needs back (signatures...)."""

    text: str = attrs.field(validator=_str)
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["reasoning"] = "reasoning"


@attrs.define(slots=True)
class ToolCallPart:
    """A tool call the model asked for.

    ``arguments`` is the parsed JSON object, or ``None`` when the arguments were cut off or invalid
    (``arguments_raw`` then keeps the text that arrived). Such a call is never executed.
    """

    id: str = attrs.field(validator=_str)
    name: str = attrs.field(validator=_str)
    arguments: dict[str, Any] | None = attrs.field(validator=_typed(dict, optional=True))
    arguments_raw: str | None = attrs.field(default=None, validator=_opt_str)
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["tool-call"] = "tool-call"


_MEDIA_BY_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
)


def detect_media_type(data: bytes, filename: str | None = None) -> str:
    """The media type (IANA ``type/subtype``) of ``data``: from its first bytes (PNG, JPEG, GIF, WebP,
    PDF, WAV, MP3, FLAC, Ogg), else from ``filename``'s extension, else ``application/octet-stream``."""
    for magic, media_type in _MEDIA_BY_MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if filename:
        guessed, _ = mimetypes.guess_type(filename)
        if guessed:
            return guessed
    return "application/octet-stream"


@attrs.define(slots=True)
class FilePart:
    """A file in a message: an image, an audio clip or a document (PDF, plain text...).

    Exactly one of ``data`` (the bytes) and ``url`` (an ``https://`` URL the provider fetches) is set.
    ``media_type`` is the IANA media type (``image/png``, ``application/pdf``, ``audio/wav``...);
    ``filename`` is optional (some providers send it with documents). Build one with
    :meth:`from_path`, :meth:`from_bytes`, :meth:`from_data_url` or :meth:`from_url`; each provider
    sends it in its own documented form, and raises :class:`ValueError` before sending when it cannot
    take that kind of file. In user messages and tool results (a screenshot tool returns one); in
    assistant messages when the model produced the file (generated images).

    Thread safety: a value; do not mutate it once it is in a conversation.
    """

    media_type: str = attrs.field(validator=_str)
    # bytes, not str: a base64 or data-URL string here would be sent as garbage (use from_data_url)
    data: bytes | None = attrs.field(default=None, validator=_typed(
        bytes, optional=True, hint=" (base64 or a data URL: use FilePart.from_data_url)"))
    url: str | None = attrs.field(default=None, validator=_opt_str)
    filename: str | None = attrs.field(default=None, validator=_opt_str)
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["file"] = "file"

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("a FilePart needs exactly one of data and url")

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> FilePart:
        """Read a file; the media type is detected from its bytes and name unless given. Raises
        :class:`OSError` when it cannot be read."""
        with open(path, "rb") as f:
            data = f.read()
        name = os.path.basename(os.fspath(path))
        return cls(media_type or detect_media_type(data, name), data=data, filename=name)

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None, filename: str | None = None) -> FilePart:
        """Wrap bytes; the media type is detected unless given."""
        return cls(media_type or detect_media_type(data, filename), data=data, filename=filename)

    @classmethod
    def from_data_url(cls, url: str) -> FilePart:
        """A ``data:[<media type>][;base64],<data>`` URL (RFC 2397). Raises :class:`ValueError`."""
        if not url.startswith("data:") or "," not in url:
            raise ValueError(f"not a data URL: {url[:40]!r}")
        header, payload = url[5:].split(",", 1)
        params = header.split(";")
        is_base64 = params[-1] == "base64"
        media_type = params[0] or "text/plain"
        try:
            data = base64.b64decode(payload, validate=True) if is_base64 else unquote_to_bytes(payload)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"data URL payload is not valid base64: {exc}") from None
        return cls(media_type, data=data)

    @classmethod
    def from_url(cls, url: str, media_type: str | None = None) -> FilePart:
        """An ``https://`` URL the provider fetches itself (a ``data:`` URL is decoded instead). The
        media type is guessed from the URL's extension unless given. Raises :class:`ValueError` for
        another scheme."""
        if url.startswith("data:"):
            return cls.from_data_url(url)
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"a file URL must be https:// (or a data: URL), got {url[:40]!r}")
        guessed, _ = mimetypes.guess_type(url.split("?", 1)[0])
        return cls(media_type or guessed or "application/octet-stream", url=url)

    @property
    def category(self) -> Literal["image", "audio", "document"]:
        """``image``, ``audio`` or ``document`` (everything else: PDF, text...), from the media type."""
        major = self.media_type.split("/", 1)[0]
        return "image" if major == "image" else "audio" if major == "audio" else "document"

    def base64(self) -> str:
        """The bytes as standard base64 (``data`` must be set)."""
        if self.data is None:
            raise ValueError("this FilePart is a URL; it has no bytes to encode")
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<media type>;base64,...`` for the bytes, or the URL itself."""
        return self.url if self.url is not None else f"data:{self.media_type};base64,{self.base64()}"

    def __repr__(self) -> str:  # the bytes would flood a log line
        where = f"url={self.url!r}" if self.url is not None else f"{len(self.data or b'')} bytes"
        return f"FilePart({self.media_type}, {where}, filename={self.filename!r})"


@attrs.define(slots=True)
class SourcePart:
    """A source the model cited or grounded its answer on.

    ``source_type`` is ``url`` (a web page: ``url``, ``title``) or ``document`` (a document given in
    the request: ``title``, ``document_index``). ``cited_text`` is the quoted span when the provider
    gives it; ``start_index``/``end_index`` are character offsets into the message's text the source
    supports, when given. ``provider_metadata`` keeps the provider's own citation object.
    """

    id: str
    source_type: Literal["url", "document"] = "url"
    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    document_index: int | None = None
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["source"] = "source"


@attrs.define(slots=True)
class ToolResultPart:
    """A tool's output for ``tool_call_id``. ``output`` is any JSON value; ``is_error`` marks a failure
    (the output is then the error text the model receives). ``files`` are files the tool returned (a
    screenshot), sent back in each provider's form for tool-result images and documents."""

    tool_call_id: str = attrs.field(validator=_str)
    tool_name: str = attrs.field(validator=_str)
    output: Any
    is_error: bool = attrs.field(default=False, validator=_typed(bool))
    provider_metadata: ProviderMetadata | None = None
    kind: Literal["tool-result"] = "tool-result"
    files: list[FilePart] = attrs.Factory(list)


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart | SourcePart


@attrs.define(slots=True)
class Message:
    """One turn of the conversation.

    Roles and their parts: ``system`` holds :class:`TextPart`; ``user`` holds :class:`TextPart` and
    :class:`FilePart` (images, audio, documents); ``assistant`` holds :class:`ReasoningPart`,
    :class:`TextPart`, :class:`ToolCallPart`, :class:`SourcePart` and :class:`FilePart` (generated
    files) in stream order; ``tool`` holds :class:`ToolResultPart` (one message may carry several
    results).

    ``id`` is the message's stable identity when it has one (the AG-UI message id): a conversation
    store merges by it (``docs/agui-server.md``, "Scaling out"). Providers never see it, and it takes
    no part in equality (two messages with the same role and parts are equal).
    """

    role: Role = attrs.field(validator=attrs.validators.in_(("system", "user", "assistant", "tool")))
    parts: list[Part] = attrs.field(factory=list, validator=_typed(list))
    id: str | None = attrs.field(default=None, eq=False, kw_only=True, validator=_opt_str)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", [TextPart(text)])

    @classmethod
    def user(cls, text: str, *files: FilePart) -> Message:
        """A user turn: ``text`` then any ``files`` (images, audio, documents)."""
        return cls("user", [TextPart(text), *files])

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

    @property
    def files(self) -> list[FilePart]:
        return [p for p in self.parts if isinstance(p, FilePart)]

    @property
    def sources(self) -> list[SourcePart]:
        return [p for p in self.parts if isinstance(p, SourcePart)]


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

    ``content`` may also be a list (OpenAI Chat Completions content parts): strings, ``{"type":
    "text", "text"}``, :class:`FilePart` objects, and for ``user`` messages ``{"type": "image_url",
    "image_url": {"url": https or data URL}}``, ``{"type": "input_audio", "input_audio": {"data":
    base64, "format": "wav" | "mp3"}}`` and ``{"type": "file", "file": {"file_data": data URL or
    base64, "filename"}}`` (OpenAI API reference, "Create chat completion", user message content
    parts).

    Raises :class:`ValueError` for a dict with an unknown role, a content part it cannot read, or a
    file in a system or assistant message.
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
        if role not in ("system", "user", "assistant") or not isinstance(content, (str, list)):
            raise ValueError(f"cannot read message {m!r:.200}: need role system/user/assistant and content")
        if isinstance(content, str):
            out.append(Message(role, [TextPart(content)]))
            continue
        parts: list[Part] = [_content_part(item) for item in content]
        if role != "user" and any(isinstance(p, FilePart) for p in parts):
            raise ValueError(f"a {role} message cannot hold files; only user messages (and tool results) can")
        out.append(Message(role, parts))
    return out


_AUDIO_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg"}


def _content_part(item: Any) -> TextPart | FilePart:
    """One OpenAI-style content part (or a FilePart / string) as a part. Raises ValueError."""
    if isinstance(item, FilePart):
        return item
    if isinstance(item, str):
        return TextPart(item)
    kind = item.get("type") if isinstance(item, dict) else None
    try:
        if kind == "text" and isinstance(item.get("text"), str):
            return TextPart(item["text"])
        if kind == "image_url":
            ref = item["image_url"]
            return FilePart.from_url(ref["url"] if isinstance(ref, dict) else ref)
        if kind == "input_audio":
            audio = item["input_audio"]
            fmt = audio.get("format", "wav")
            media_type = _AUDIO_FORMATS.get(fmt, f"audio/{fmt}")
            return FilePart(media_type, data=base64.b64decode(audio["data"], validate=True))
        if kind == "file":
            f = item["file"]
            data, name = f.get("file_data"), f.get("filename")
            if not isinstance(data, str):
                raise ValueError("a file content part needs file_data (file_id needs the provider's file store)")
            if data.startswith("data:"):
                part = FilePart.from_data_url(data)
                part.filename = name
                return part
            return FilePart.from_bytes(base64.b64decode(data, validate=True), filename=name)
    except (KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise ValueError(f"cannot read content part {item!r:.200}: {exc!r}") from None
    raise ValueError(f"cannot read content part {item!r:.200}: need text, image_url, input_audio or file")
