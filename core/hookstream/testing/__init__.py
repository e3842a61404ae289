"""The public testing kit: grammar checker, loopback server, recorded-body replay, conformance runner.

Plugin authors use these in their own test suites; hookstream's own tests use nothing else.
"""

from .grammar import GrammarError, check_events
from .recorded import replay_body
from .server import CapturedRequest, LoopbackServer, Response

__all__ = ["CapturedRequest", "GrammarError", "LoopbackServer", "Response", "check_events", "replay_body"]
