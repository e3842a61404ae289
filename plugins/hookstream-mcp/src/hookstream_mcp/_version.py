"""The version of hookstream-mcp (the ``version`` of its pyproject.toml), in a module of its own so that the
package's ``__init__`` and the modules it loads lazily both import it without importing each other."""

__version__ = "0.1.0"
