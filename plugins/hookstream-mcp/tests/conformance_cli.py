"""The command line under test for one OAuth scenario of the MCP conformance suite: ``hookstream chat
--mcp <server-url> --mcp-auth oauth``, as a user types it.

The model is a loopback server playing one scripted answer (engine_kit's OpenAI Chat body); the browser
is ``$BROWSER``, which the test points at ``conformance_browser.py`` (it follows the login page's
redirect to hookstream's loopback callback, as a browser would). Exits with the command's exit code.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hookstream.testing import LoopbackServer, Response, run_cli
from mcp_kit import MODEL, text_body


def main() -> int:
    with LoopbackServer([Response(text_body("Logged in."))]) as model:
        result = run_cli(["chat", "hi", "--model", MODEL, "--base-url", model.url + "/v1", "--no-log",
                          "--mcp", sys.argv[-1], "--mcp-auth", "oauth"], env={"OPENAI_API_KEY": "sk-test"})
    print(result.output)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
