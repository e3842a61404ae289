"""Tool schemas from annotations (Enum, Literal, unions, containers, dataclasses, attrs classes, TypedDict)
and arguments structured back into those types before the function runs.

Every generated schema is checked against the JSON Schema 2020-12 metaschema; the round trip runs through
a real engine against a loopback OpenAI server. Postponed annotations (the ``__future__`` import) are on
purpose: that is how most tool modules are written, and the harder case for ``TypedDict`` on 3.11.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import pathlib
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NewType, NotRequired, Required, TypedDict, TypeVar

import attrs
import jsonschema
import pytest
from hookstream import CancellationToken, HookstreamError, Tool, ToolCallPart, ToolContext, ToolResultPart, tool
from hookstream._agentloop.tools import as_tools, run_tool, schema_from_function
from hookstream.errors import ToolDefinitionError


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Size(str, enum.Enum):  # noqa: UP042 -- the pre-3.11 spelling must work too
    S = "s"
    M = "m"


class Mode(enum.StrEnum):
    ON = "on"


class Mixed(enum.Enum):
    ONE = 1
    TWO = "two"


@dataclasses.dataclass
class Point:
    """A point on the map.

    Attributes:
        x: metres east.
        y: metres north.
    """

    x: float
    y: float = 0.0


@dataclasses.dataclass
class Route:
    name: str
    stops: list[Point]
    color: Color = Color.RED
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Range:
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")


@attrs.define
class Filter:
    """Which rows to keep.

    Args:
        field: the column.
    """

    field: str
    values: list[str] = attrs.Factory(list)
    negate: bool = False


class Options(TypedDict, total=False):
    limit: Required[int]
    order: Literal["asc", "desc"]


class Person(TypedDict):
    name: str
    nickname: NotRequired[str]


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node]


class Plain:
    pass


UserId = NewType("UserId", int)
T = TypeVar("T")


def _ctx() -> ToolContext:
    return ToolContext("c1", [], CancellationToken())


def _run(t: Tool, arguments: dict[str, Any]) -> ToolResultPart:
    return run_tool(t, ToolCallPart("c1", t.name, arguments), _ctx())


def _params(fn: Callable[..., Any]) -> dict[str, Any]:
    _description, parameters, _ctx_param = schema_from_function(fn)
    jsonschema.Draft202012Validator.check_schema(parameters)
    return parameters


def _prop(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    return dict(_params(fn)["properties"][name])


# --- schemas -------------------------------------------------------------------------------------------


def test_primitives_and_the_top_level_object() -> None:
    def f(s: str, i: int, n: float, b: bool, anything: Any, untyped, flag: bool = False) -> None:  # type: ignore[no-untyped-def]
        """Summary line.

        Args:
            s: some text.
        """

    params = _params(f)
    assert params == {
        "type": "object",
        "properties": {
            "s": {"type": "string", "description": "some text."}, "i": {"type": "integer"},
            "n": {"type": "number"}, "b": {"type": "boolean"}, "anything": {}, "untyped": {},
            "flag": {"type": "boolean", "default": False},
        },
        "required": ["s", "i", "n", "b", "anything", "untyped"],
        "additionalProperties": False,
    }


def test_kwargs_leave_the_top_level_object_open() -> None:
    def f(a: int, **rest: Any) -> None: ...

    assert "additionalProperties" not in _params(f)


def test_enum_schemas_list_member_values_with_their_type() -> None:
    def f(color: Color, level: Level, mixed: Mixed, default: Color = Color.BLUE) -> None: ...

    assert _prop(f, "color") == {"type": "string", "enum": ["red", "blue"]}
    assert _prop(f, "level") == {"type": "integer", "enum": [1, 2]}
    assert _prop(f, "mixed") == {"enum": [1, "two"]}
    assert _prop(f, "default") == {"type": "string", "enum": ["red", "blue"], "default": "blue"}


def test_literal_schemas() -> None:
    def f(mode: Literal["fast", "slow"], n: Literal[1, 2.5], pick: Literal[Color.RED],  # type: ignore[valid-type]
          x: Literal["a", 1]) -> None: ...

    assert _prop(f, "mode") == {"type": "string", "enum": ["fast", "slow"]}
    assert _prop(f, "n") == {"type": "number", "enum": [1, 2.5]}
    assert _prop(f, "pick") == {"type": "string", "enum": ["red"]}
    assert _prop(f, "x") == {"enum": ["a", 1]}


def test_optional_and_unions() -> None:
    def f(a: int | None, b: int | str, c: Color | None = None, d: Any | None = None, u: UserId = UserId(1)) -> None: ...

    assert _prop(f, "a") == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert _prop(f, "b") == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert _prop(f, "c") == {"anyOf": [{"type": "string", "enum": ["red", "blue"]}, {"type": "null"}], "default": None}
    assert _prop(f, "d") == {"default": None}
    assert _prop(f, "u") == {"type": "integer", "default": 1}


def test_containers() -> None:
    def f(a: list[int], b: tuple[str, ...], c: tuple[int, str], d: set[Color], e: dict[str, float],
          g: Sequence[Point], h: list, i: dict, j: frozenset[int]) -> None: ...

    assert _prop(f, "a") == {"type": "array", "items": {"type": "integer"}}
    assert _prop(f, "b") == {"type": "array", "items": {"type": "string"}}
    assert _prop(f, "c") == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                             "items": False, "minItems": 2, "maxItems": 2}
    assert _prop(f, "d") == {"type": "array", "items": {"type": "string", "enum": ["red", "blue"]},
                             "uniqueItems": True}
    assert _prop(f, "e") == {"type": "object", "additionalProperties": {"type": "number"}}
    assert _prop(f, "g")["items"]["required"] == ["x"]
    assert _prop(f, "h") == {"type": "array"}
    assert _prop(f, "i") == {"type": "object"}
    assert _prop(f, "j") == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}


def test_string_formats() -> None:
    def f(when: datetime.datetime, day: datetime.date, at: datetime.time, id: uuid.UUID,
          path: pathlib.Path) -> None: ...

    assert _prop(f, "when") == {"type": "string", "format": "date-time"}
    assert _prop(f, "day") == {"type": "string", "format": "date"}
    assert _prop(f, "at") == {"type": "string", "format": "time"}
    assert _prop(f, "id") == {"type": "string", "format": "uuid"}
    assert _prop(f, "path") == {"type": "string"}


def test_nested_dataclasses_with_docstring_descriptions() -> None:
    def f(route: Route) -> None:
        """Draw a route.

        Args:
            route: the route to draw.
        """

    point = {"type": "object", "description": "A point on the map.", "additionalProperties": False,
             "properties": {"x": {"type": "number", "description": "metres east."},
                            "y": {"type": "number", "description": "metres north.", "default": 0.0}},
             "required": ["x"]}
    assert _prop(f, "route") == {
        "type": "object",
        "description": "the route to draw.",
        "properties": {
            "name": {"type": "string"},
            "stops": {"type": "array", "items": point},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "tags": {"type": "array", "items": {"type": "string"}},  # a factory default is not shown
        },
        "required": ["name", "stops"],
        "additionalProperties": False,
    }


def test_a_parameter_description_beats_the_class_summary() -> None:
    def f(p: Point, q: Point) -> None:
        """Two points.

        Args:
            p: where to start.
        """

    assert _prop(f, "p")["description"] == "where to start."
    assert _prop(f, "q")["description"] == "A point on the map."


def test_attrs_class_fields_with_defaults_are_not_required() -> None:
    def f(flt: Filter) -> None: ...

    assert _prop(f, "flt") == {
        "type": "object", "description": "Which rows to keep.", "additionalProperties": False,
        "properties": {"field": {"type": "string", "description": "the column."},
                       "values": {"type": "array", "items": {"type": "string"}},
                       "negate": {"type": "boolean", "default": False}},
        "required": ["field"],
    }


def test_typeddict_required_keys_follow_total_required_and_notrequired() -> None:
    def f(opts: Options, who: Person) -> None: ...

    assert _prop(f, "opts") == {
        "type": "object", "additionalProperties": False, "required": ["limit"],
        "properties": {"limit": {"type": "integer"}, "order": {"type": "string", "enum": ["asc", "desc"]}},
    }
    assert _prop(f, "who")["required"] == ["name"]


def test_annotated_text_is_the_description_and_the_docstring_does_not_override_it() -> None:
    def f(city: Annotated[str, "the city, in English"], n: Annotated[int, 3, "how many"] = 1) -> None:
        """Look up.

        Args:
            city: overridden.
        """

    assert _prop(f, "city") == {"type": "string", "description": "the city, in English"}
    assert _prop(f, "n") == {"type": "integer", "description": "how many", "default": 1}


def test_every_generated_object_is_closed_and_lists_required_names_it_has() -> None:
    def f(route: Route, flt: Filter, opts: Options, ranges: dict[str, Range] | None = None) -> None: ...

    def walk(schema: Any) -> int:
        if isinstance(schema, list):
            return sum(walk(s) for s in schema)
        if not isinstance(schema, dict):
            return 0
        found = 0
        if "properties" in schema:
            assert schema["additionalProperties"] is False
            assert set(schema.get("required", [])) <= set(schema["properties"])
            found = 1
        return found + sum(walk(v) for v in schema.values())

    assert walk(_params(f)) == 6


# --- definition errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotation", "where", "words"), [
    ("Plain", "thing", "Plain is not supported"),
    ("Callable[[int], int]", "thing", "no JSON Schema"),
    ("dict[int, str]", "thing", "JSON object keys are strings"),
    ("Node", "thing.children.[]", "recursive"),
    ("list[Plain]", "thing.[]", "Plain"),
    ("Route | Plain", "thing", "Plain"),
    ("T", "thing", "type variable"),
    ("Undefined", "thing", "does not resolve"),
    ("Literal[1.5j]", "thing", "not a JSON string"),
])
def test_an_annotation_without_a_schema_fails_at_definition_time(annotation: str, where: str, words: str) -> None:
    def broken(thing) -> None:  # type: ignore[no-untyped-def]
        ...

    broken.__annotations__["thing"] = annotation  # as `from __future__ import annotations` leaves it
    with pytest.raises(ToolDefinitionError) as info:
        tool(broken)
    err = info.value
    assert err.parameter == "thing" and err.function.endswith("broken")
    assert words in str(err) and "'thing'" in str(err) and "broken" in str(err)
    if where != "thing":
        assert f"(at {where})" in str(err)
    assert isinstance(err, HookstreamError) and isinstance(err, TypeError) and err.code == "tool_definition_error"
    with pytest.raises(ToolDefinitionError):
        as_tools([broken])


def broken_tool(thing: Plain) -> str:
    """Loaded by the CLI test below."""
    return "never"


def test_the_cli_reports_a_tool_it_cannot_define_as_a_usage_error() -> None:
    from hookstream.testing import run_cli

    res = run_cli(["chat", "hi", "--model", "openai:gpt-4o-mini", "--tool",
                                       "test_tool_schemas:broken_tool"])
    assert res.exit_code == 2 and res.exception is not None and isinstance(res.exception, SystemExit)
    assert "Invalid value for --tool" in res.output and "parameter 'thing'" in res.output
    assert "Plain is not supported" in res.output


def test_an_explicit_schema_skips_unsupported_annotations_and_still_structures_the_others() -> None:
    seen: list[Any] = []

    def f(thing: Plain, color: Color) -> str:
        seen.extend([thing, color])
        return "ok"

    t = tool(f, parameters={"type": "object", "properties": {"thing": {}, "color": {"enum": ["red", "blue"]}}})
    assert _run(t, {"thing": {"raw": 1}, "color": "blue"}).output == "ok"
    assert seen == [{"raw": 1}, Color.BLUE]


class CallableTool:
    def __call__(self, color: Color) -> str:
        return color.name


def test_partials_and_callable_objects_resolve_postponed_annotations_in_their_module() -> None:
    def f(color: Color, level: Level) -> str:
        return f"{color.name} {level.name}"

    t = tool(functools.partial(f, level=Level.LOW), name="f")
    assert t.parameters["properties"]["color"]["enum"] == ["red", "blue"]
    assert _run(t, {"color": "red"}).output == "RED LOW"
    t2 = tool(CallableTool(), name="c")
    assert _run(t2, {"color": "blue"}).output == "BLUE"


def test_an_optional_toolcontext_is_the_context_parameter() -> None:
    def f(a: int, ctx: ToolContext | None = None) -> str:
        return "ctx" if ctx is not None else "none"

    t = tool(f)
    assert t.context_param == "ctx" and list(t.parameters["properties"]) == ["a"]
    assert _run(t, {"a": 1}).output == "ctx"


# --- structuring ---------------------------------------------------------------------------------------


def test_arguments_are_structured_into_the_annotated_types() -> None:
    got: dict[str, Any] = {}

    def f(  # type: ignore[no-untyped-def]
        color: Color, level: Level, route: Route, flt: Filter, opts: Options, maybe: Point | None,
        pair: tuple[int, str], ids: set[int], by_name: dict[str, Point], when: datetime.datetime,
        id: uuid.UUID, either: int | str, ratio: float, untyped,
    ) -> str:
        got.update(locals())
        return "ok"

    t = tool(f)
    args = {"color": "blue", "level": 2, "route": {"name": "r", "stops": [{"x": 1, "y": 2}, {"x": 3}], "color": "blue"},
            "flt": {"field": "a", "values": ["x"]}, "opts": {"limit": 3}, "maybe": None, "pair": [1, "a"],
            "ids": [1, 2], "by_name": {"home": {"x": 0}}, "when": "2026-11-23T01:00:00+00:00",
            "id": "12345678-1234-5678-1234-567812345678", "either": "5", "ratio": 1, "untyped": {"as": "is"}}
    assert _run(t, args) == ToolResultPart("c1", "f", "ok")
    assert got["color"] is Color.BLUE and got["level"] is Level.HIGH
    assert got["route"] == Route("r", [Point(1.0, 2.0), Point(3.0)], Color.BLUE)
    assert got["flt"] == Filter("a", ["x"]) and got["opts"] == {"limit": 3} and got["maybe"] is None
    assert got["pair"] == (1, "a") and got["ids"] == {1, 2} and got["by_name"] == {"home": Point(0.0)}
    assert got["when"] == datetime.datetime(2026, 11, 23, 1, tzinfo=datetime.UTC)
    assert got["id"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert got["either"] == "5"  # a string stays a string: int is strict, so the str arm takes it
    assert got["ratio"] == 1.0 and isinstance(got["ratio"], float)
    assert got["untyped"] == {"as": "is"}


def test_enums_with_a_builtin_base_are_members_too() -> None:
    def f(size: Size, mode: Mode, mixed: Mixed, level: Level, user: UserId) -> str:
        return repr((size, mode, mixed, level, user))

    assert _run(tool(f), {"size": "m", "mode": "on", "mixed": "two", "level": 1, "user": 7}).output == \
        "(<Size.M: 'm'>, <Mode.ON: 'on'>, <Mixed.TWO: 'two'>, <Level.LOW: 1>, 7)"


def test_omitted_arguments_keep_the_python_defaults() -> None:
    def f(route: Route | None = None, color: Color = Color.RED) -> str:
        return f"{route} {color.name}"

    assert _run(tool(f), {}).output == "None RED"


@pytest.mark.parametrize(("arguments", "words"), [
    # Arguments the schema refuses (a direct run_tool call; the engine refuses them before it).
    ({"r": {"low": 1, "high": 2}, "when": "2026-01-01", "color": "green"},
     "'green' is not one of ['red', 'blue'] (at color)"),
    ({"r": {"low": 1, "high": 2, "extra": 1}, "when": "2026-01-01"}, "Additional properties are not allowed"),
    ({"r": {"low": "1", "high": 2}, "when": "2026-01-01"}, "'1' is not of type 'integer' (at r/low)"),
    # Arguments the schema lets through and structuring refuses: the class's own check, a bad date.
    ({"r": {"low": 3, "high": 2}, "when": "2026-01-01"}, "invalid value: low 3 is above high 2 @ r"),
    ({"r": {"low": 1, "high": 2}, "when": "yesterday"},
     "expected an ISO 8601 date string: Invalid isoformat string: 'yesterday' @ when"),
])
def test_arguments_that_do_not_fit_become_an_error_result(arguments: dict[str, Any], words: str) -> None:
    ran: list[Any] = []

    def f(r: Range, when: datetime.date, color: Color = Color.RED) -> str:
        ran.append(r)
        return "ran"

    result = _run(tool(f), arguments)
    assert result.is_error and result.output.startswith("Error: invalid input for 'f': ")
    assert words in result.output
    assert ran == []


def test_a_tool_made_by_hand_passes_arguments_as_parsed() -> None:
    t = Tool("f", parameters={"type": "object"}, fn=lambda color: repr(color))
    assert _run(t, {"color": "red"}).output == "'red'"


# --- through the engine --------------------------------------------------------------------------------


def test_round_trip_through_the_engine_and_a_structuring_failure_goes_to_the_model() -> None:
    engine_kit = pytest.importorskip("engine_kit")
    from hookstream.testing import LoopbackServer, Response

    got: list[Any] = []

    def plan(route: Route, window: Range, color: Color = Color.RED) -> dict[str, Any]:
        """Plan a route.

        Args:
            route: where to go.
            window: the hours.
        """
        got.append((route, window, color))
        return {"stops": len(route.stops), "color": color.value}

    good = {"route": {"name": "loop", "stops": [{"x": 1}, {"x": 2, "y": 3}]}, "window": {"low": 8, "high": 9},
            "color": "blue"}
    bad = {"route": {"name": "loop", "stops": []}, "window": {"low": 9, "high": 8}}
    responses = [Response(engine_kit.tool_body(("c1", "plan", good), ("c2", "plan", bad))),
                 Response(engine_kit.text_body("Planned."))]
    with LoopbackServer(responses) as srv:
        events, stream = engine_kit.run(srv.url, tools=[plan])
    assert stream.result().outcome == "success" and stream.result().text == "Planned."
    assert got == [(Route("loop", [Point(1.0), Point(2.0, 3.0)]), Range(8, 9), Color.BLUE)]
    sent_tools = srv.requests[0].json()["tools"]
    assert sent_tools[0]["function"]["parameters"] == tool(plan).parameters
    assert sent_tools[0]["function"]["parameters"]["properties"]["route"]["description"] == "where to go."
    tool_msgs = [m for m in engine_kit.body_messages(srv.requests[1]) if m["role"] == "tool"]
    assert tool_msgs[0] == {"role": "tool", "tool_call_id": "c1", "content": '{"stops": 2, "color": "blue"}'}
    assert tool_msgs[1]["content"] == ("Error: invalid input for 'plan': "
                                       "invalid value: low 9 is above high 8 @ window")
    results = [e for e in events if e.type == "TOOL_CALL_RESULT"]
    assert results[0].error is None and results[1].error == tool_msgs[1]["content"]
