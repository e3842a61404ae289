"""Entry point of the ``hookstream`` group: registers nothing (this plugin adds tool sources, not
providers, strategies or executors), so that ``hookstream plugins`` lists it. Importing it does not
import the MCP SDK."""
