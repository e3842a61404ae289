"""How much of a stored conversation a run sends the model: all of it, the last N messages or tokens,
or older turns compacted into a summary (``chat(..., memory=store, history=...)``).

A window never splits a tool call from its result: it starts at a user message or a system message
(never at a ``tool`` message or an assistant message whose calls' results would be cut off), so every
history a provider receives is paired. Tokens are estimated (4 characters a token,
:mod:`hookstream._estimate`); a window holds at least the last turn whatever its size.

``History.summarize(model, keep_last=N)`` keeps the last N messages (moved back to a turn start) and
replaces what comes before with one system message, ``"Summary of the earlier conversation: ..."``,
written by ``model`` (any model a ``chat()`` takes) in one call when the run starts. The summary is
saved in the thread as a message of its own (``provider_metadata["hookstream"]["summary_of"]``: how
many stored messages it covers), after the originals, which stay stored; a later run reuses it while it
still covers what must be dropped and makes a new one (from the old summary and what follows it) when
it does not. Summaries never reach the model as ordinary history.

Thread safety: a :class:`History` is an immutable value; :meth:`History.apply` keeps no state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs

from .._estimate import estimate_tokens
from .._messages import Message, TextPart

__all__ = ["History", "is_summary"]

_SUMMARY_PREFIX = "Summary of the earlier conversation: "
_SUMMARY_PROMPT = ("Summarize this conversation for an assistant who will continue it: keep names, numbers, "
                   "decisions, open questions and what the user asked for. Answer with the summary only.")


def is_summary(message: Message) -> int | None:
    """How many stored messages ``message`` summarizes when it is a summary :class:`History` wrote,
    else ``None``."""
    for p in message.parts:
        meta = (p.provider_metadata or {}).get("hookstream") if isinstance(p, TextPart) else None
        if isinstance(meta, dict) and isinstance(meta.get("summary_of"), int):
            return int(meta["summary_of"])
    return None


def _turn_start(messages: Sequence[Message], at: int) -> int:
    """The first index at or after ``at`` where a window may start without splitting a tool call from
    its result: a user or system message."""
    while at < len(messages) and messages[at].role not in ("user", "system"):
        at += 1
    return at


def _positive(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise TypeError(f"{attribute.name} must be a positive int, not {value!r}")


@attrs.frozen(slots=True)
class History:
    """A history policy; build one with :meth:`all`, :meth:`last_messages`, :meth:`last_tokens` or
    :meth:`summarize`. Raises :class:`TypeError` at construction for a limit that is not a positive int.
    """

    kind: Literal["all", "messages", "tokens", "summary"] = "all"
    limit: int | None = attrs.field(default=None, validator=_positive)
    model: Any = None

    @classmethod
    def all(cls) -> History:
        """Send the whole stored conversation (the default)."""
        return cls("all")

    @classmethod
    def last_messages(cls, n: int) -> History:
        """Send about the last ``n`` stored messages (fewer when ``n`` would split a tool call from its
        result: the window starts at the next user message)."""
        return cls("messages", n)

    @classmethod
    def last_tokens(cls, n: int) -> History:
        """Send the most recent stored turns that fit in about ``n`` tokens (estimated), at least one."""
        return cls("tokens", n)

    @classmethod
    def summarize(cls, model: Any, keep_last: int = 20) -> History:
        """Keep the last ``keep_last`` messages and compact what comes before into a summary written by
        ``model`` (a ``"provider:model"`` string or a provider object)."""
        return cls("summary", keep_last, model)

    def apply(
        self, stored: Sequence[Message], summarizer: Callable[[list[Message]], str] | None = None
    ) -> tuple[list[Message], Message | None]:
        """(the history to send, a new summary message to save or ``None``) for the ``stored``
        conversation. ``summarizer(messages) -> text`` writes a summary (the engine passes one that
        calls :attr:`model`); it is called only when a new summary is needed."""
        originals = [m for m in stored if is_summary(m) is None]
        if self.kind == "all" or self.limit is None:
            return originals, None
        if self.kind == "messages" or self.kind == "summary":
            cut = _turn_start(originals, max(0, len(originals) - self.limit))
        else:
            total, cut = 0, len(originals)
            while cut > 0 and total + estimate_tokens(originals[cut - 1]) <= self.limit:
                cut -= 1
                total += estimate_tokens(originals[cut])
            cut = _turn_start(originals, cut)
        if cut >= len(originals):  # the last turn alone is over the limit: keep that turn
            cut = max((i for i, m in enumerate(originals) if m.role == "user"), default=0)
        kept = originals[cut:]
        if self.kind != "summary" or cut == 0:
            return kept, None
        summaries = [(is_summary(m) or 0, m) for m in stored if is_summary(m) is not None]
        covering = [(n, m) for n, m in summaries if n >= cut]
        if covering:
            n, summary = min(covering, key=lambda x: x[0])
            # A summary covering more than is dropped now hides nothing: the window starts where it ends.
            return [summary, *originals[n:]], None
        if summarizer is None:
            return kept, None
        older = [m for n, m in summaries if n < cut]
        base = [max(older, key=lambda m: is_summary(m) or 0)] if older else []
        start = (is_summary(base[0]) or 0) if base else 0
        text = summarizer([*base, *originals[start:cut]])
        summary = Message("system", [TextPart(_SUMMARY_PREFIX + text,
                                              provider_metadata={"hookstream": {"summary_of": cut}})])
        return [summary, *kept], summary


def summary_request(messages: list[Message]) -> list[Message]:
    """The conversation asked of the summarizing model: the messages as a transcript, then the ask."""
    lines = []
    for m in messages:
        who = "Summary so far" if is_summary(m) is not None else m.role
        body = m.text or " ".join(f"[{c.name} called]" for c in m.tool_calls) or \
            " ".join(str(r.output)[:500] for r in m.tool_results)
        lines.append(f"{who}: {body}")
    return [Message.system(_SUMMARY_PROMPT), Message.user("\n".join(lines))]
