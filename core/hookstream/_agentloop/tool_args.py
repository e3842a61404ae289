"""Tool arguments: parsed JSON structured back into the parameter annotations with cattrs, before the
tool's function is called (an ``Enum`` parameter gets the member, a dataclass parameter the instance).

The converter is strict about JSON types (``"5"`` is not an ``int``, ``1`` is not a ``bool``), so a union
takes the first arm that really fits, and refuses keys a class does not declare, matching the
``additionalProperties: false`` of the schemas :mod:`hookstream._agentloop.tool_schema` generates. Failures come back
as readable problems with a path (``cattrs.transform_error``), never as an exception.
"""

from __future__ import annotations

import datetime
import pathlib
import types
import typing
import uuid
from typing import Any, get_args, get_origin

import cattrs
import cattrs.errors
from cattrs.v import format_exception

from .tool_schema import json_type, typeddict_keys

__all__ = ["converter", "structure"]

_NONE = type(None)


class ArgumentTypeError(TypeError):
    """A JSON value of the wrong kind for the annotation (raised by the strict primitive hooks)."""


def _kind(value: Any) -> str:
    return json_type(value) or ("array" if isinstance(value, list) else "object" if isinstance(value, dict)
                                 else type(value).__name__)


def _strict(check: Any, name: str) -> Any:
    def hook(value: Any, cls: Any) -> Any:
        if not check(value):
            raise ArgumentTypeError(f"expected {name}, got {_kind(value)}")
        # cls may be a subclass dispatched here by its MRO: IntEnum, StrEnum, (str, Enum) -> the member.
        return cls(value)

    return hook


def _from_string(parse: Any, name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, str):
            raise ArgumentTypeError(f"expected {name} string, got {_kind(value)}")
        try:
            return parse(value)
        except ValueError as exc:
            raise ArgumentTypeError(f"expected {name} string: {exc}") from None

    return hook


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict(lambda v: isinstance(v, str), "a string"))
    conv.register_structure_hook(
        int, _strict(lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"))
    conv.register_structure_hook(
        float, _strict(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"))
    conv.register_structure_hook(bool, _strict(lambda v: isinstance(v, bool), "a boolean"))
    conv.register_structure_hook(datetime.datetime, _from_string(datetime.datetime.fromisoformat, "an ISO 8601"))
    conv.register_structure_hook(datetime.date, _from_string(datetime.date.fromisoformat, "an ISO 8601 date"))
    conv.register_structure_hook(datetime.time, _from_string(datetime.time.fromisoformat, "an ISO 8601 time"))
    conv.register_structure_hook(uuid.UUID, _from_string(uuid.UUID, "a UUID"))
    conv.register_structure_hook(pathlib.Path, _from_string(pathlib.Path, "a path"))

    def union_hook(tp: Any) -> Any:
        # First arm that accepts the value wins, in declaration order: the strict hooks above keep
        # "5" out of int and 1 out of bool, and forbid_extra_keys keeps one class from taking another's dict.
        arms = [a for a in get_args(tp) if a is not _NONE]
        nullable = len(arms) < len(get_args(tp))

        def hook(value: Any, _: Any) -> Any:
            if value is None and nullable:
                return None
            for arm in arms:
                try:
                    return conv.structure(value, arm)
                except Exception:
                    continue
            names = ", ".join("null" if a is _NONE else _type_name(a) for a in get_args(tp))
            raise ArgumentTypeError(f"{_kind(value)} matches none of {names}")

        return hook

    conv.register_structure_hook_factory(_is_union, union_hook)

    def typeddict_hook(tp: Any) -> Any:
        # cattrs reads __required_keys__, wrong on 3.11 under postponed annotations (see _typeddict_keys).
        keys = typeddict_keys(tp, typing.get_type_hints(tp, include_extras=True))

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise ArgumentTypeError(f"expected an object, got {_kind(value)}")
            errors: list[Exception] = []
            extra = set(value) - {name for name, _, _ in keys}
            if extra:
                errors.append(cattrs.errors.ForbiddenExtraKeysError("", tp, extra))
            out = {}
            for name, hint, required in keys:
                try:
                    if name in value:
                        out[name] = conv.structure(value[name], hint)
                    elif required:
                        raise KeyError(name)
                except Exception as exc:
                    exc.__notes__ = [*getattr(exc, "__notes__", []),
                                     cattrs.errors.AttributeValidationNote(f"Structuring {tp.__qualname__} @ {name}",
                                                                           name, hint)]
                    errors.append(exc)
            if errors:
                raise cattrs.errors.ClassValidationError(f"While structuring {tp.__name__}", errors, tp)
            return out

        return hook

    conv.register_structure_hook_factory(typing.is_typeddict, typeddict_hook)
    return conv


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else repr(tp).replace("typing.", "")


converter: cattrs.Converter = _make_converter()
"""The converter :func:`structure` uses (strict JSON types, no extra keys)."""


def _format(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, ArgumentTypeError):
        return str(exc)
    if isinstance(exc, (cattrs.errors.ForbiddenExtraKeysError, KeyError)):
        return format_exception(exc, tp)
    # A class's own __init__/__post_init__ check, an Enum value that is not a member...: its message says why.
    return f"invalid value: {exc}" if tp is None else f"invalid value for {_type_name(tp)}: {exc}"


def structure(value: Any, annotation: Any, name: str) -> tuple[Any, list[str]]:
    """(``value`` structured into ``annotation``, []) or (None, readable problems naming ``name``'s path)."""
    try:
        return converter.structure(value, annotation), []
    except Exception as exc:
        return None, cattrs.transform_error(exc, path=name, format_exception=_format)
