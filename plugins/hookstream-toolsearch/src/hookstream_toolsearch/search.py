"""Tool search: the ``tool-search`` run plugin (:class:`ToolSearch`) and the BM25 ranking it searches with
(:class:`ToolIndex`).

A step that would carry more than ``threshold`` tools carries instead a ``search_tools(query)`` tool, the
tools named in ``keep`` and the tools the model has found so far in this run. ``search_tools`` ranks the
step's tools by BM25 (`bm25s <https://pypi.org/project/bm25s/>`_, Lucene's scoring) over the words of
their names (``get_weather``, ``getWeather``: *get*, *weather*), descriptions, argument names and argument
descriptions, answers with the best matches' names and descriptions (JSON), and adds them to the tools
the next step carries. Built on ``hookstream_step_start`` alone (it assigns ``step.tools``); the engine is
unchanged, so a call to a found tool runs exactly as any tool call does. See ``docs/tool-search.md``.

Thread safety: one :class:`ToolSearch` may serve many runs at once; what it learns is kept per run in
``RunContext.state`` (key :data:`STATE_KEY`) and changed under that run's lock, since the ``search_tools``
calls of one step may run on several threads at once.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from hookstream import Tool
from hookstream.plugin import StepContext, hookimpl

__all__ = ["DEFAULT_THRESHOLD", "STATE_KEY", "ToolIndex", "ToolSearch", "words"]

STATE_KEY = "tool-search"
"""The key of a run's tool-search state in ``RunContext.state``."""

DEFAULT_THRESHOLD = 20
"""Above this many tools in a step, the step carries ``search_tools`` instead of them all."""

_DESCRIPTION = (
    "Search the tools available to you by keywords (what you want to do, names of things, arguments). "
    "Returns the names and descriptions of the best matching tools; they can be called from your next "
    "step on. Search again with other words when none fits."
)
# Identifier boundaries: lower or digit followed by upper (getWeather), and an acronym before a word
# (HTTPServer), so camelCase and snake_case names split into their words.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_DESCRIPTION_CHARS = 500


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def words(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """The lower-cased words of ``text``: runs of letters and digits, identifiers split at ``_``, ``-``,
    ``.`` and camelCase boundaries; words in ``stopwords`` left out."""
    return [w for w in _WORD.findall(_CAMEL.sub(" ", text).lower()) if w not in stopwords]


def _document(tool: Tool) -> str:
    """What a tool is found by: its name, description, and each argument's name and description."""
    parts = [tool.name, tool.description]
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    if isinstance(props, dict):
        for arg, schema in props.items():
            parts.append(str(arg))
            if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                parts.append(schema["description"])
    return " ".join(parts)


class ToolIndex:
    """BM25 over ``tools`` (``{name: Tool}``), built once: :meth:`search` is read-only and may be called
    from several threads at once."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        import bm25s

        # bm25s sets its logger to DEBUG at import, which prints "DEBUG bm25s: Building index from tokens" on
        # every run past the application's WARNING: let it follow the application's level again.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)
        self.tools = dict(tools)
        self._names = list(self.tools)
        self._lower = {name.lower(): name for name in self._names}
        self._stop = _stopwords()
        corpus = [words(_document(t), self._stop) or [t.name.lower()] for t in self.tools.values()]
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)

    def search(self, query: str, limit: int = 5) -> list[Tool]:
        """The tools that best match ``query`` (at most ``limit``, best first; none when no word of the query
        occurs in any tool). A word of the query that is a tool's exact name puts that tool first."""
        exact = [self._lower[w] for w in query.lower().split() if w in self._lower]
        terms = words(query, self._stop)
        ranked: list[str] = list(dict.fromkeys(exact))
        if terms:
            scores = self._bm25.get_scores(terms)
            order = sorted(range(len(self._names)), key=lambda i: -float(scores[i]))  # stable: ties keep order
            ranked += [self._names[i] for i in order if scores[i] > 0]
        return [self.tools[name] for name in dict.fromkeys(ranked)][:limit]


@attrs.define(slots=True, eq=False)
class _RunSearch:
    """One run's tool search: the tools searched (``catalog``), their index, the names found so far (in
    the order found) and the ``search_tools`` tool bound to this state."""

    catalog: dict[str, Tool]
    index: ToolIndex
    limit: int
    found: dict[str, None] = attrs.Factory(dict)
    lock: threading.Lock = attrs.Factory(threading.Lock)
    tool: Tool | None = None

    def search(self, query: str) -> str:
        matches = self.index.search(query, self.limit)
        with self.lock:
            for t in matches:
                self.found[t.name] = None
        return json.dumps({
            "tools": [{"name": t.name, "description": t.description[:_DESCRIPTION_CHARS]} for t in matches],
            "note": ("these tools can be called from your next step on" if matches
                     else "no tool matched; search again with other words"),
        }, ensure_ascii=False)

    def loaded(self) -> list[str]:
        with self.lock:
            return list(self.found)


def _chosen(choice: Any) -> str | None:
    """The tool a ``tool_choice`` forces, if it names one (``"NAME"``, ``{"name": ...}``,
    ``{"function": {"name": ...}}``)."""
    if isinstance(choice, str) and choice not in ("auto", "none", "required", "any"):
        return choice
    if isinstance(choice, dict):
        name = choice.get("name")
        if name is None and isinstance(choice.get("function"), dict):
            name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


class ToolSearch:
    """The ``tool-search`` run plugin: ``chat(..., plugins=["tool-search"])``, ``plugins=[("tool-search",
    {"threshold": 0})]`` or ``plugins=[ToolSearch(...)]``; ``hookstream chat --tool-search``.

    ``threshold``: a step with more tools than this carries ``search_tools`` and the tools found so far
    instead of them all (``0``: always, whenever the step has a tool). ``max_results``: matches per search
    (default 5). ``keep``: names of tools always sent beside ``search_tools``. ``name``: the search tool's
    name (default ``search_tools``). A tool the step's ``tool_choice`` forces is always sent.

    Raises :class:`ValueError` for a negative ``threshold`` or ``max_results`` below 1; a run whose tools
    already hold a tool named ``name`` ends with ``RUN_ERROR`` ``plugin_error``.
    """

    def __init__(self, threshold: int = DEFAULT_THRESHOLD, max_results: int = 5, keep: Iterable[str] = (),
                 name: str = "search_tools") -> None:
        if threshold < 0:
            raise ValueError(f"threshold must be 0 or more, not {threshold}")
        if max_results < 1:
            raise ValueError(f"max_results must be at least 1, not {max_results}")
        self.threshold = threshold
        self.max_results = max_results
        self.keep = tuple(keep)
        self.name = name

    def __repr__(self) -> str:
        return f"ToolSearch(threshold={self.threshold}, max_results={self.max_results}, keep={list(self.keep)!r})"

    @hookimpl
    def hookstream_step_start(self, step: StepContext) -> None:
        tools = step.tools
        if len(tools) <= self.threshold:
            return
        state = self._state(step, tools)
        forced = _chosen(step.tool_choice)
        sent: dict[str, Tool] = {self.name: state.tool} if state.tool is not None else {}
        for name in (*self.keep, *([forced] if forced else []), *state.loaded()):
            if name in tools:
                sent[name] = tools[name]
        step.tools = sent

    def _state(self, step: StepContext, tools: dict[str, Tool]) -> _RunSearch:
        """The run's state, made on its first searching step and remade when the step's tools change
        (``prepare_step`` or a plugin gave other ones); what was found is kept."""
        state: _RunSearch | None = step.run.state.get(STATE_KEY)
        if state is not None and state.catalog.keys() == tools.keys():
            return state
        if self.name in tools:
            raise ValueError(f"the run already has a tool named {self.name!r}; give ToolSearch(name=...)")
        fresh = _RunSearch(dict(tools), ToolIndex(tools), self.max_results)
        if state is not None:
            fresh.found = {n: None for n in state.loaded() if n in tools}
        fresh.tool = Tool(self.name, _DESCRIPTION, {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Keywords describing the tool you need."}},
            "required": ["query"],
        }, fn=fresh.search)
        step.run.state[STATE_KEY] = fresh
        return fresh
