"""The client under test for the MCP conformance suite (``@modelcontextprotocol/conformance``, client
scenarios), written against hookstream-mcp's public API only.

The suite starts a scenario's server, then runs ``python conformance_client.py <server-url>`` with the
scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and, for the pre-registered and client-credentials
scenarios, a JSON ``MCP_CONFORMANCE_CONTEXT`` (``client_id``, ``client_secret``...). It judges what the
client sent; this program exits 0 when the session it was asked for went through, 1 with the error on
stderr otherwise.

The login page is "opened" by following the authorization URL as a browser would (urllib follows the
authorization server's redirect to hookstream's loopback ``/callback``), so the real loopback redirect
receives the code. Tokens go to ``$HOOKSTREAM_USER_DIR/<scenario>`` (the test points it at a temporary
folder): the suite runs every scenario with the same environment, and a scenario must not find another
one's tokens (its servers' ports may be used again later, and the suite's servers take any token shaped
like theirs) and skip the login it is there to check.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

from hookstream_mcp import ClientCredentials, Elicitation, ElicitationAnswer, MCPServer, OAuth

# The client ID metadata document URL the suite's auth/basic-cimd server accepts (SEP-991).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
DONE = "conformance_client: the session went through"


def follow(url: str) -> None:
    """Open the authorization page as a browser would: follow its redirect to the loopback callback."""
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()


def accept_defaults(request: Elicitation) -> ElicitationAnswer:
    """Accept with nothing filled in: hookstream-mcp fills the schema's defaults (SEP-1034)."""
    return ElicitationAnswer.accept({})


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def server_for(scenario: str, url: str) -> MCPServer:
    ctx = context()
    auth: OAuth | ClientCredentials | None = None
    if scenario == "auth/client-credentials-basic":
        auth = ClientCredentials(ctx["client_id"], ctx["client_secret"])
    elif scenario == "auth/client-credentials-jwt":
        auth = ClientCredentials(ctx["client_id"], private_key=ctx["private_key_pem"],
                                 signing_algorithm=ctx.get("signing_algorithm") or "ES256")
    elif scenario.startswith("auth/"):
        auth = OAuth(client_id=ctx.get("client_id"), client_secret=ctx.get("client_secret"), open_url=follow,
                     client_metadata_url=CIMD_URL, login_timeout=120)
    # Generous: the suite runs its scenarios in parallel, on a machine that may be busy.
    return MCPServer.http(url, auth=auth, elicitation=accept_defaults, startup_timeout=150)


def no_second_login(url: str) -> None:
    raise RuntimeError("a second login was asked for: the stored token should have been used")


def run(scenario: str, url: str) -> None:
    session(scenario, url, server_for(scenario, url))
    if scenario == "auth/metadata-default":
        # A second connection, as the next run would make: the token kept in the user directory is used,
        # no login page is opened.
        again = OAuth(open_url=no_second_login, client_metadata_url=CIMD_URL)
        session(scenario, url, MCPServer.http(url, auth=again, startup_timeout=150))


def session(scenario: str, url: str, server: MCPServer) -> None:
    with server:
        names = [tool.name for tool in server.tools()]
        if scenario == "tools_call":
            print(server.call("add_numbers", {"a": 5, "b": 3}))
        elif scenario == "sse-retry":
            print(server.call("test_reconnection", {}))
        elif scenario.startswith("elicitation"):
            print(server.call("test_client_elicitation_defaults", {}))
        elif scenario.startswith("auth/") and names:
            # The auth scenarios' servers guard a tool call too (scope step-up answers it with 403).
            print(server.call(names[0], {}))


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: conformance_client.py SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    if os.environ.get("HOOKSTREAM_USER_DIR"):
        os.environ["HOOKSTREAM_USER_DIR"] = os.path.join(os.environ["HOOKSTREAM_USER_DIR"], scenario.replace("/", "-"))
    try:
        run(scenario, sys.argv[-1])
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(DONE)  # the suite keeps the output, not the exit code: the test looks for this line
    return 0


if __name__ == "__main__":
    sys.exit(main())
