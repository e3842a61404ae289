"""A deterministic JSON value that matches a JSON Schema: the arguments :class:`~hookstream.testing.TestModel`
calls tools with, and the structured output it answers with.

:func:`schema_example` covers what tool and output schemas use: ``type`` (one or a list; ``null`` only
when nothing else is allowed), ``enum`` and ``const`` (the first value), ``string`` (``minLength`` /
``maxLength``, the ``format``\\ s ``date-time``, ``date``, ``time``, ``email``, ``uri``, ``uuid``),
``integer`` and ``number`` (``minimum``, ``maximum``, their exclusive forms, ``multipleOf``),
``boolean``, ``array`` (``items``, ``prefixItems``, ``minItems``, ``maxItems``, distinct items for
``uniqueItems``), ``object`` (every listed property, required or not; ``additionalProperties`` only to
reach ``minProperties``), nesting, ``anyOf`` / ``oneOf`` (the first branch that is not ``null``),
``allOf`` (merged) and local ``$ref`` (``#/$defs/...``, ``#/definitions/...``). ``pattern`` is not
honoured; a schema using one gets a value that may not match it.

Thread safety: pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["schema_example"]

_FORMATS = {
    "date-time": "2024-01-02T03:04:05+00:00",
    "date": "2024-01-02",
    "time": "03:04:05",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
}
_MAX_DEPTH = 32  # a recursive schema ($ref to itself) stops here with the smallest value it allows


def schema_example(schema: dict[str, Any] | bool, variant: int = 0) -> Any:
    """A JSON value valid against ``schema``, the same for the same schema. ``variant`` picks another
    value of the same shape (distinct strings and numbers for array items that must be unique)."""
    root = schema if isinstance(schema, dict) else {}
    return _value(schema, root, variant, 0)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(ref := schema.get("$ref"), str) and seen < _MAX_DEPTH:
        seen += 1
        if not ref.startswith("#/"):
            raise ValueError(f"schema_example resolves local references only, not {ref!r}")
        target: Any = root
        for key in ref[2:].split("/"):
            target = target[key.replace("~1", "/").replace("~0", "~")]
        schema = {**{k: v for k, v in schema.items() if k != "$ref"}, **target}
    return schema


def _merge(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``allOf`` folded into one schema (properties and required lists joined)."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema.get("allOf", ()):
        part = _resolve(part, root) if isinstance(part, dict) else {}
        if "allOf" in part:
            part = _merge(part, root)
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = [*out.get("required", []), *value]
            else:
                out.setdefault(key, value)
    return out


def _value(schema: Any, root: dict[str, Any], variant: int, depth: int) -> Any:
    if schema is True or schema is None or schema == {}:
        return f"value{variant}" if variant else "value"
    if schema is False:
        raise ValueError("no value matches the schema false")
    schema = _resolve(schema, root)
    if "allOf" in schema:
        schema = _merge(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        values = schema["enum"]
        return values[variant % len(values)]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _value(_branch(schema, root, key), root, variant, depth + 1)
    kind = _kind(schema)
    make = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if make is None:
        raise ValueError(f"schema_example does not know the type {kind!r}")
    return make(schema, root, variant, depth)


def _branch(schema: dict[str, Any], root: dict[str, Any], key: str) -> Any:
    """The ``anyOf``/``oneOf`` branch to follow (the first that is not null), with the schema's other
    keywords."""
    branches = [_resolve(b, root) if isinstance(b, dict) else b for b in schema[key]]
    usable = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")] or branches
    extra = {k: v for k, v in schema.items() if k not in (key, "description", "title", "default")}
    branch = usable[0]
    return {**extra, **branch} if isinstance(branch, dict) else branch


def _kind(schema: dict[str, Any]) -> Any:
    """The schema's JSON type: its ``type`` (the first not null of a list), else guessed from its keywords."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = ("object" if "properties" in schema or "additionalProperties" in schema
                else "array" if "items" in schema or "prefixItems" in schema
                else "string")
    return kind


def _string(schema: dict[str, Any], variant: int) -> str:
    fmt = schema.get("format")
    if fmt in _FORMATS and not variant:
        return _FORMATS[fmt]
    if fmt == "uuid":
        return f"00000000-0000-4000-8000-{variant:012x}"
    letters = "abcdefghijklmnopqrstuvwxyz"
    text = letters[variant % 26] + (str(variant // 26) if variant >= 26 else "")
    low, high = int(schema.get("minLength", 1)), schema.get("maxLength")
    if len(text) < low:
        text += "x" * (low - len(text))
    if high is not None and len(text) > int(high):
        text = text[: int(high)]
    return text


def _number(schema: dict[str, Any], variant: int, *, integer: bool) -> int | float:
    lo, xlo = schema.get("minimum"), schema.get("exclusiveMinimum")
    hi, xhi = schema.get("maximum"), schema.get("exclusiveMaximum")
    if isinstance(xlo, bool):  # draft 4: a flag on ``minimum``
        xlo, lo = (lo, None) if xlo else (None, lo)
    if isinstance(xhi, bool):
        xhi, hi = (hi, None) if xhi else (None, hi)
    step = schema.get("multipleOf")

    def ok(x: float) -> bool:
        if step is not None:
            quotient = x / step
            if quotient != int(quotient):  # as jsonschema checks it
                return False
        return ((lo is None or x >= lo) and (xlo is None or x > xlo) and (hi is None or x <= hi)
                and (xhi is None or x < xhi))

    low = max((b for b in (lo, xlo) if b is not None), default=None)
    high = min((b for b in (hi, xhi) if b is not None), default=None)
    candidates: list[float] = [1 + variant if integer else 1.5 + variant]
    if step:
        if low is not None:
            k = math.ceil(low / step)
            candidates += [k * step, (k + 1) * step, (k + 2) * step]
        if high is not None:
            k = math.floor(high / step)
            candidates += [k * step, (k - 1) * step, (k - 2) * step]
        candidates += [step, 0]
    else:
        if low is not None and high is not None:
            candidates.append((low + high) / 2)
        if low is not None:
            candidates += [low, math.floor(low) + 1]
        if high is not None:
            candidates += [high, math.ceil(high) - 1]
    for candidate in candidates:
        value: int | float = round(candidate) if integer else float(candidate)
        if ok(value):
            return value
    raise ValueError(f"schema_example found no number for {schema!r}")


def _array(schema: dict[str, Any], root: dict[str, Any], variant: int, depth: int) -> list[Any]:
    prefix = list(schema.get("prefixItems", ()))
    items = schema.get("items", {} if not prefix else False)
    low = int(schema.get("minItems", 0))
    high = schema.get("maxItems")
    count = max(low, len(prefix), 1 if depth < _MAX_DEPTH and items is not False else 0)
    if high is not None:
        count = min(count, int(high))
    out = []
    for i in range(count):
        sub = prefix[i] if i < len(prefix) else items
        out.append(_value(sub, root, variant + i, depth + 1))
    return out


def _object(schema: dict[str, Any], root: dict[str, Any], variant: int, depth: int) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties", {})
    required = list(schema.get("required", ()))
    names = required if depth >= _MAX_DEPTH else [*required, *(p for p in props if p not in required)]
    out: dict[str, Any] = {}
    for name in names:
        out[name] = _value(props.get(name, {}), root, variant, depth + 1)
    extra = schema.get("additionalProperties", True)
    n = 0
    while len(out) < int(schema.get("minProperties", 0)) and extra is not False:
        n += 1
        out[f"key{n}"] = _value(extra if isinstance(extra, dict) else {}, root, variant + n, depth + 1)
    return out


# JSON type -> its example: (schema, root, variant, depth) -> value.
_BY_TYPE: dict[str, Callable[[dict[str, Any], dict[str, Any], int, int], Any]] = {
    "string": lambda schema, root, variant, depth: _string(schema, variant),
    "integer": lambda schema, root, variant, depth: _number(schema, variant, integer=True),
    "number": lambda schema, root, variant, depth: _number(schema, variant, integer=False),
    "boolean": lambda schema, root, variant, depth: variant % 2 == 0,
    "null": lambda schema, root, variant, depth: None,
    "array": _array,
    "object": _object,
}
