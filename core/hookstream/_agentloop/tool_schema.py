"""Tool parameter types: the JSON Schema of a Python annotation (the arguments go back into the annotated
types in :mod:`hookstream._agentloop.tool_args`).

:func:`schema_for` maps an annotation to JSON Schema (draft 2020-12 keywords) and raises
:class:`Unsupported` for one it cannot map, so a tool never advertises ``{}`` by accident.

Mapping (JSON Schema 2020-12, "Validation" sections 6.1-6.5; objects follow the OpenAI structured-outputs
"supported schemas" rules where that costs nothing: ``additionalProperties: false`` and a ``required``
list on every object generated here):

* ``str``/``int``/``float``/``bool`` -> ``string``/``integer``/``number``/``boolean``; ``None`` -> ``null``;
  ``Any``/``object`` -> ``{}`` (any JSON value).
* ``datetime``/``date``/``time``/``UUID`` -> ``string`` with ``format``; ``pathlib.Path`` -> ``string``.
* ``Enum`` subclass -> ``enum`` of the member values (with ``type`` when they share one); ``Literal[...]``
  likewise (enum members inside a ``Literal`` stand for their values).
* ``X | None`` / ``Optional[X]`` -> ``anyOf [X, null]``; other unions -> ``anyOf``.
* ``list[X]``/``Sequence[X]``/``tuple[X, ...]`` -> array of X; ``tuple[X, Y]`` -> ``prefixItems``;
  ``set[X]``/``frozenset[X]`` -> array with ``uniqueItems``; ``dict[str, X]``/``Mapping[str, X]`` ->
  object with ``additionalProperties`` X; bare ``list``/``tuple``/``set``/``dict`` -> untyped array/object.
* dataclasses, attrs classes and ``TypedDict`` -> object of their (init) fields; a field without a
  default (``TypedDict``: a required key, per ``total``/``Required``/``NotRequired``) is required; field
  descriptions come from the class docstring's ``Args:``/``Attributes:`` section.
* ``Annotated[X, "text"]`` -> X's schema with ``description`` "text" (other metadata is ignored).
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime
import enum
import inspect
import pathlib
import re
import types
import typing
import uuid
from typing import Any, Literal, NotRequired, Required, cast, get_args, get_origin

import attrs

__all__ = ["Unsupported", "describe", "doc_params", "json_default", "json_type", "schema_for", "typeddict_keys"]

_NONE = type(None)
_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_FORMATS: dict[Any, str] = {datetime.datetime: "date-time", datetime.date: "date", datetime.time: "time",
                            uuid.UUID: "uuid"}
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


class Unsupported(Exception):
    """``annotation`` (found at ``path``, field names from the parameter down) has no JSON Schema here."""

    def __init__(self, path: tuple[str, ...], annotation: Any, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.annotation = annotation
        self.reason = reason


def doc_params(doc: str) -> tuple[str, dict[str, str]]:
    """(summary, {name: description}) from a Google-style ``Args:``/``Attributes:`` section or
    ``:param x:`` lines."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    for line in lines:
        stripped = line.strip()
        m = re.match(r":(?:param|ivar)\s+(\w+):\s*(.*)", stripped)
        if m:
            params[m.group(1)] = m.group(2)
            continue
        if stripped in ("Args:", "Arguments:", "Parameters:", "Attributes:", "Fields:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"(\w+)(?:\s*\([^)]*\))?:\s*(.*)", stripped)
            if m and line.startswith((" ", "\t")):
                params[m.group(1)] = m.group(2)
                continue
            if not stripped:
                continue
            in_args = False
        if not params and not in_args and not stripped.startswith(":"):
            summary.append(stripped)
    return " ".join(s for s in summary if s).strip(), params


_FACTORY = object()  # a default made by a factory: required is False, but there is no value to show
_ATTRS_FACTORY = cast(type, attrs.Factory)  # attrs' stubs type Factory as a function; it is a class


def json_default(value: Any) -> tuple[bool, Any]:
    """(True, JSON form) for a default worth showing in the schema (JSON scalars, enum members)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return True, value
    return False, None


def annotated_text(annotation: Any) -> str | None:
    """The first string in ``Annotated[X, ...]`` metadata (the description it gives), else None."""
    if get_origin(annotation) is typing.Annotated:
        return next((m for m in annotation.__metadata__ if isinstance(m, str)), None)
    return None


def describe(schema: dict[str, Any], annotation: Any, doc: str | None) -> None:
    """Put ``doc`` (from a docstring) into ``schema`` unless ``Annotated`` text already says it; a
    docstring about this parameter/field beats the summary of the class it is typed as."""
    if doc and annotated_text(annotation) is None:
        schema["description"] = doc


def schema_for(annotation: Any, path: tuple[str, ...] = (), _seen: frozenset[type] = frozenset()) -> dict[str, Any]:
    """The JSON Schema of ``annotation``; raises :class:`Unsupported` naming the part it cannot map."""
    description = None
    while True:  # Annotated / Required / NotRequired wrap the type that matters
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            texts = [m for m in annotation.__metadata__ if isinstance(m, str)]
            description = description or (texts[0] if texts else None)
            annotation = annotation.__origin__
        elif origin in (Required, NotRequired):
            annotation = get_args(annotation)[0]
        else:
            break
    schema = _schema(annotation, path, _seen)
    if description:
        schema["description"] = description
    return schema


def json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _enum(values: list[Any], path: tuple[str, ...], annotation: Any) -> dict[str, Any]:
    kinds = {json_type(v) for v in values}
    if None in kinds:
        bad = next(v for v in values if json_type(v) is None)
        raise Unsupported(path, annotation, f"value {bad!r} is not a JSON string, number, boolean or null")
    if kinds == {"integer", "number"}:
        kinds = {"number"}
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def _object(props: dict[str, Any], required: list[str], cls: type) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    summary = _class_summary(cls)
    if summary:
        schema["description"] = summary
    return schema


def _class_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    # dataclasses write "Name(field: type, ...)" as the docstring of a class without one.
    return "" if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}(") else doc


def _class_summary(cls: type) -> str:
    return doc_params(_class_doc(cls))[0]


def _hints(cls: type, path: tuple[str, ...]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError for a forward reference that does not resolve, mostly
        raise Unsupported(path, cls, f"its field annotations do not resolve ({type(exc).__name__}: {exc})") from None


def _fields(
    cls: type, path: tuple[str, ...], seen: frozenset[type], fields: list[tuple[str, Any, bool, Any]]
) -> dict[str, Any]:
    """Object schema for ``(name, annotation, has_default, default)`` fields of ``cls``."""
    docs = doc_params(_class_doc(cls))[1]
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, annotation, has_default, default in fields:
        prop = schema_for(annotation, (*path, name), seen | {cls})
        describe(prop, annotation, docs.get(name))
        if has_default:
            show, value = json_default(default)
            if show:
                prop["default"] = value
        else:
            required.append(name)
        props[name] = prop
    return _object(props, required, cls)


def _schema(tp: Any, path: tuple[str, ...], seen: frozenset[type]) -> dict[str, Any]:
    simple = _simple(tp)
    if simple is not None:
        return simple
    if isinstance(tp, typing.NewType):
        return schema_for(tp.__supertype__, path, seen)
    origin, args = get_origin(tp), get_args(tp)
    if origin is not None and not args and origin in (list, tuple, set, frozenset, dict):
        tp = origin  # typing.List and friends without parameters
    if origin is Literal:
        return _enum([a.value if isinstance(a, enum.Enum) else a for a in args], path, tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not list(tp):
            raise Unsupported(path, tp, "the enum has no members")
        return _enum([m.value for m in tp], path, tp)
    if origin in (typing.Union, types.UnionType):
        return _union(args, path, seen)
    container = _container(tp, origin, args, path, seen)
    if container is not None:
        return container
    if isinstance(tp, type) and (typing.is_typeddict(tp) or dataclasses.is_dataclass(tp) or attrs.has(tp)):
        if tp in seen:
            raise Unsupported(path, tp, "recursive classes are not supported")
        return _class_schema(tp, path, seen)
    raise _unsupported(tp, origin, path)


def _simple(tp: Any) -> dict[str, Any] | None:
    """The schema of a type without parameters that maps to one JSON type (a new dict), else ``None``."""
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is _NONE:
        return {"type": "null"}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    if tp in _FORMATS:
        return {"type": "string", "format": _FORMATS[tp]}
    if tp is pathlib.Path:
        return {"type": "string"}
    return None


def _union(args: tuple[Any, ...], path: tuple[str, ...], seen: frozenset[type]) -> dict[str, Any]:
    arms = [schema_for(a, path, seen) for a in args if a is not _NONE]
    if {} in arms:
        return {}  # Any absorbs the rest
    if _NONE in args:
        return {"anyOf": [*arms, {"type": "null"}]}
    return arms[0] if len(arms) == 1 else {"anyOf": arms}


def _container(
    tp: Any, origin: Any, args: tuple[Any, ...], path: tuple[str, ...], seen: frozenset[type]
) -> dict[str, Any] | None:
    """The schema of an array or object type (bare or parameterized), else ``None``."""
    if tp in (list, tuple):
        return {"type": "array"}
    if tp in (set, frozenset):
        return {"type": "array", "uniqueItems": True}
    if tp is dict:
        return {"type": "object"}
    if origin is tuple:
        return _tuple(args, path, seen)
    if origin in _SEQUENCES and args:
        return {"type": "array", "items": schema_for(args[0], (*path, "[]"), seen)}
    if origin in _SETS and args:
        return {"type": "array", "items": schema_for(args[0], (*path, "[]"), seen), "uniqueItems": True}
    if origin in _MAPPINGS and args:
        key, value = args
        if key is not str:
            raise Unsupported(path, tp, "JSON object keys are strings: use dict[str, X]")
        return {"type": "object", "additionalProperties": schema_for(value, (*path, "{}"), seen)}
    return None


def _tuple(args: tuple[Any, ...], path: tuple[str, ...], seen: frozenset[type]) -> dict[str, Any]:
    if len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": schema_for(args[0], (*path, "[]"), seen)}
    if args == ((),) or not args:  # tuple[()]
        return {"type": "array", "maxItems": 0}
    items = [schema_for(a, (*path, f"[{i}]"), seen) for i, a in enumerate(args)]
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


def _unsupported(tp: Any, origin: Any, path: tuple[str, ...]) -> Unsupported:
    """The error for a type with no JSON Schema, saying why."""
    if origin is not None and isinstance(origin, type) and (dataclasses.is_dataclass(origin) or attrs.has(origin)):
        return Unsupported(path, tp, "generic classes are not supported; use a concrete class")
    if isinstance(tp, typing.TypeVar):
        return Unsupported(path, tp, "a type variable has no JSON Schema")
    if origin is not None or tp in (cabc.Callable, type):
        return Unsupported(path, tp, "this generic type has no JSON Schema")
    return Unsupported(path, tp, "not a JSON type, Enum, Literal, dataclass, attrs class or TypedDict")


def typeddict_keys(tp: type, hints: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """(key, annotation, required) of a TypedDict, per ``total`` and ``Required``/``NotRequired``."""
    required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
    out = []
    for name, hint in hints.items():
        outer = get_origin(hint)
        # With postponed annotations Python 3.11 does not see Required/NotRequired in __required_keys__
        # (nor does cattrs, which reads it): look at the resolved hint again.
        required = outer is Required or (outer is not NotRequired and name in required_keys)
        while get_origin(hint) in (Required, NotRequired):
            hint = get_args(hint)[0]
        out.append((name, hint, required))
    return out


def _class_schema(tp: type, path: tuple[str, ...], seen: frozenset[type]) -> dict[str, Any]:
    hints = _hints(tp, path)
    fields: list[tuple[str, Any, bool, Any]] = []
    if typing.is_typeddict(tp):
        fields = [(name, hint, not required, _FACTORY) for name, hint, required in typeddict_keys(tp, hints)]
        schema = _fields(tp, path, seen, fields)
        for prop in schema["properties"].values():
            prop.pop("default", None)
        return schema
    if dataclasses.is_dataclass(tp):
        for f in dataclasses.fields(tp):
            if f.init:
                has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                default = _FACTORY if f.default is dataclasses.MISSING else f.default
                fields.append((f.name, hints.get(f.name, f.type), has_default, default))
        return _fields(tp, path, seen, fields)
    for a in attrs.fields(tp):
        if a.init:
            has_default = a.default is not attrs.NOTHING
            default = _FACTORY if isinstance(a.default, _ATTRS_FACTORY) else a.default
            fields.append((a.name, hints.get(a.name, a.type), has_default, default))
    return _fields(tp, path, seen, fields)
