"""The public testing kit: loopback server, fault server, grammar checker, recorded-body replay,
conformance runner and the offline demo's server and tools.

Plugin authors use these in their own test suites; hookstream's own tests use nothing else. Everything
is importable from here; the submodules (``server``, ``faults``, ``grammar``, ``conformance``...) hold
the implementation and their docstrings.
"""

from .conformance import Recording, check_recording, find_corpus, recordings
from .demo import DEMO_MODEL, DEMO_PROMPT, DEMO_STEPS, demo_server, demo_tools
from .faults import FAULTS, FaultServer
from .grammar import GrammarError, check_events
from .recorded import replay_body
from .server import CapturedRequest, LoopbackServer, Response

__all__ = [
    "DEMO_MODEL",
    "DEMO_PROMPT",
    "DEMO_STEPS",
    "FAULTS",
    "CapturedRequest",
    "FaultServer",
    "GrammarError",
    "LoopbackServer",
    "Recording",
    "Response",
    "check_events",
    "check_recording",
    "demo_server",
    "demo_tools",
    "find_corpus",
    "recordings",
    "replay_body",
]
