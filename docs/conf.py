"""Sphinx configuration: Markdown pages (MyST) plus API pages generated from the code (autodoc)."""

project = "hookstream"
author = "hookstream developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
myst_heading_anchors = 3
html_theme = "alabaster"
nitpicky = False
suppress_warnings = ["myst.header"]
