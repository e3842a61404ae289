"""The hook reference (docs/hooks.rst) is generated from the code, so it cannot fall behind it: the hooks come
from ``automodule`` of the hook specs with no list of names (a new hook appears without editing the page), and
``StreamBuilder`` is documented with all its members. autodoc leaves out members without a docstring, so
every hook spec and every public member of ``StreamBuilder`` must have one. (The Sphinx build itself,
``sphinx-build -W docs``, is run by the docs job.)"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import hookstream._hookspecs as hookspecs
from hookstream.plugin import StreamBuilder

HOOKS_RST = (Path(__file__).resolve().parent.parent / "docs" / "hooks.rst").read_text("utf-8")


def directive(name: str) -> str:
    """The directive block (its line and its indented options) that documents ``name``."""
    m = re.search(rf"^\.\. auto\w+:: {re.escape(name)}\n((?:   .*\n)*)", HOOKS_RST, re.M)
    assert m, f"docs/hooks.rst does not document {name}"
    return m.group(1)


def test_every_hook_spec_is_generated_from_the_specs_module() -> None:
    options = directive("hookstream._hookspecs")
    assert re.search(r"^   :members:\s*$", options, re.M), "the hooks must come from :members: with no list"
    specs = [fn for name, fn in vars(hookspecs).items()
             if inspect.isfunction(fn) and getattr(fn, "hookstream_spec", None) is not None]
    assert len(specs) >= 4
    for fn in specs:
        assert inspect.getdoc(fn), f"hook spec {fn.__name__} has no docstring: autodoc would leave it out"


def test_every_stream_builder_member_is_documented() -> None:
    options = directive("hookstream.plugin.StreamBuilder")
    assert re.search(r"^   :members:\s*$", options, re.M), "StreamBuilder must be documented with all its members"
    assert isinstance(StreamBuilder.__slots__, dict)  # so its public attributes carry docstrings
    missing = []
    for name in sorted(set(dir(StreamBuilder)) - set(dir(object))):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(StreamBuilder, name)
        doc = StreamBuilder.__slots__.get(name) if name in StreamBuilder.__slots__ else inspect.getdoc(member)
        if not doc:
            missing.append(name)
    assert not missing, f"StreamBuilder members without a docstring: {missing}"
