"""Structured output: what ``chat(..., output=SPEC)`` asks the model for, and how the answer becomes a
typed value.

``SPEC`` is a JSON Schema dict, a dataclass, a ``TypedDict``, an attrs class, or a pydantic model (only
when pydantic is installed; it is never imported otherwise), optionally wrapped in :class:`Output` to
set the schema's name, strictness or the provider form. :func:`resolve_output` turns it into a
:class:`ResolvedOutput`: the provider-neutral :class:`~hookstream.plugin.OutputFormat` sent with each
model call, and :meth:`ResolvedOutput.finish`, which validates the final text and structures it.

Schemas of classes come from :func:`hookstream._agentloop.tool_schema.schema_for` (the tool-parameter mapping), and
values are structured with the tools' strict cattrs converter (:mod:`hookstream._agentloop.tool_args`); a pydantic
model uses its own ``model_json_schema()`` and ``model_validate``. Validation against the JSON Schema
uses ``jsonschema`` (the schema's own draft).

``strict`` follows OpenAI's structured-outputs rule ("Supported schemas": every object lists all its
properties in ``required`` and sets ``additionalProperties: false``): :func:`strict_allowed` checks it,
and without an explicit choice the format is strict exactly when the schema allows it.

Thread safety: values and pure functions.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any, Literal, is_typeddict

import attrs
import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from .._errors import OutputValidationError
from .._stream.provider import OutputFormat
from .tool_args import structure
from .tool_schema import Unsupported, schema_for

__all__ = ["Output", "OutputMode", "ResolvedOutput", "resolve_output", "strict_allowed"]

OutputMode = Literal["auto", "native", "tool"]

_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]+")
_MAX_PROBLEMS = 10  # a wildly wrong answer can fail everywhere; the first few say enough


@attrs.define(slots=True, frozen=True)
class Output:
    """A structured-output ``spec`` with options, for ``chat(..., output=Output(spec, ...))``.

    ``name``: the schema's name (default: the class name, a dict schema's ``title``, else ``output``;
    made of ``[A-Za-z0-9_-]``, at most 64 characters). ``strict``: ask the provider for strict
    (constrained) decoding; ``None`` (default) means "where the schema allows it" (:func:`strict_allowed`),
    ``True`` on a schema that does not allow it raises :class:`ValueError`. ``mode``: ``"auto"`` (each
    provider's native structured output where the model has it), ``"native"`` or ``"tool"`` (a forced
    tool whose input is the output; Anthropic only, the other providers have one form).
    """

    spec: Any
    name: str | None = None
    strict: bool | None = None
    mode: OutputMode = "auto"


def _pydantic_model(spec: Any) -> bool:
    # Only look if pydantic is already imported: a pydantic model's module imported it, so an
    # installation without pydantic never pays for (or needs) the import.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(spec, type) and issubclass(spec, pydantic.BaseModel)


def _clean_name(name: str) -> str:
    return _NAME_BAD.sub("_", name).strip("_")[:64] or "output"


def _subschemas(schema: Any) -> list[Any]:
    out: list[Any] = []
    if not isinstance(schema, dict):
        return out
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        value = schema.get(key)
        if isinstance(value, dict):
            out.extend(value.values())
    for key in ("items", "additionalProperties", "not", "contains"):
        value = schema.get(key)
        if isinstance(value, dict):
            out.append(value)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        value = schema.get(key)
        if isinstance(value, list):
            out.extend(value)
    return out


def strict_allowed(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` meets OpenAI's strict structured-outputs rule: every object schema (one with
    ``type: object`` or ``properties``) has ``additionalProperties: false`` and lists every property
    in ``required``; the root is an object. Walks ``properties``, ``items``, ``anyOf``/``oneOf``/
    ``allOf``, ``prefixItems`` and ``$defs``/``definitions``."""
    if schema.get("type") != "object":
        return False
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node
        if is_object:
            props = node.get("properties") or {}
            if node.get("additionalProperties") is not False:
                return False
            if set(node.get("required") or ()) != set(props):
                return False
        stack.extend(_subschemas(node))
    return True


@attrs.define(slots=True, frozen=True)
class ResolvedOutput:
    """A structured-output spec made ready: ``format`` goes with each model call; ``target`` is the class
    the value is structured into (``None`` for a JSON Schema dict: the value stays plain JSON);
    ``kind`` is ``schema``, ``class`` or ``pydantic``."""

    format: OutputFormat
    target: Any
    kind: Literal["schema", "class", "pydantic"]

    def problems(self, text: str) -> tuple[Any, list[str]]:
        """(the typed value, []) for a valid answer ``text``, else (None, readable problems)."""
        try:
            value = json.loads(text)
        except ValueError as exc:
            return None, [f"the output is not JSON: {exc}"]
        if self.kind == "pydantic":
            try:
                return self.target.model_validate(value), []
            except Exception as exc:  # pydantic.ValidationError; its text lists each field
                errors = getattr(exc, "errors", None)
                if callable(errors):
                    found = [f"{e.get('msg')} (at {'/'.join(str(p) for p in e.get('loc', ()))})" for e in errors()]
                    return None, found[:_MAX_PROBLEMS]
                return None, [str(exc)]
        found = _schema_problems(self.format.schema, value)
        if found:
            return None, found
        if self.target is None:
            return value, []
        typed, errs = structure(value, self.target, self.format.name)
        return typed, errs

    def finish(self, text: str, attempts: int = 1) -> Any:
        """The typed value of the answer ``text``; raises :class:`~hookstream.errors.OutputValidationError`
        (``raw_text`` = ``text``) when it is not JSON, does not match the schema or cannot be
        structured."""
        value, found = self.problems(text)
        if found:
            raise OutputValidationError(
                f"the structured output does not match {self.format.name!r}: " + "; ".join(found), text, found,
                attempts,
            )
        return value


def _schema_problems(schema: dict[str, Any], value: Any) -> list[str]:
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        errors = sorted(cls(schema).iter_errors(value), key=jsonschema.exceptions.relevance)
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the output schema itself is invalid: {exc.message}"]
    out = []
    for error in errors[:_MAX_PROBLEMS]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{error.message} (at {where})" if where else error.message)
    return out


def resolve_output(spec: Any) -> ResolvedOutput:
    """The :class:`ResolvedOutput` of an ``output=`` value (a spec or an :class:`Output`).

    Raises :class:`TypeError` for a spec that is none of the supported kinds or whose field types have
    no JSON Schema, and :class:`ValueError` for ``strict=True`` on a schema that does not allow it or an
    unknown ``mode``.
    """
    opts = spec if isinstance(spec, Output) else Output(spec)
    if opts.mode not in ("auto", "native", "tool"):
        raise ValueError(f"output mode must be 'auto', 'native' or 'tool', got {opts.mode!r}")
    target: Any = opts.spec
    kind: Literal["schema", "class", "pydantic"]
    if isinstance(target, dict):
        schema, kind, default_name = dict(target), "schema", str(target.get("title") or "output")
        target = None
    elif _pydantic_model(target):
        schema, kind, default_name = target.model_json_schema(), "pydantic", target.__name__
    elif isinstance(target, type) and (
        dataclasses.is_dataclass(target) or attrs.has(target) or is_typeddict(target)
    ):
        try:
            schema = schema_for(target)
        except Unsupported as exc:
            where = ".".join(exc.path) or target.__name__
            raise TypeError(f"output type {target.__name__}: {where}: {exc.reason}") from None
        kind, default_name = "class", target.__name__
    else:
        raise TypeError(
            "output= takes a JSON Schema dict, a dataclass, a TypedDict, an attrs class or a pydantic model, "
            f"got {target!r:.100}"
        )
    allowed = strict_allowed(schema)
    if opts.strict and not allowed:
        raise ValueError(
            "strict=True needs every object of the schema to list all its properties in 'required' and set "
            "'additionalProperties': false"
        )
    strict = allowed if opts.strict is None else opts.strict
    fmt = OutputFormat(_clean_name(opts.name or default_name), schema, strict, opts.mode)
    return ResolvedOutput(fmt, target, kind)
