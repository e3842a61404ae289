"""The public testing kit: loopback server, fault server, grammar checker, recorded-body replay,
conformance runner, the provider contract suite (:class:`ProviderContract`), the offline demo's server,
tools and AG-UI backend, an in-process runner for the ``hookstream`` command line, and fake models
(``FunctionModel``, ``TestModel``; ``TestProvider`` is the ``test`` model of ``get_model("test")``)
that stand in for a provider without HTTP.

Plugin authors use these in their own test suites; hookstream's own tests use nothing else. Everything
is importable from here; the submodules (``server``, ``faults``, ``grammar``, ``conformance``...) hold
the implementation and their docstrings.
"""

from .._fake_models import FunctionModel, ModelError, Reply, RequestInfo, TestModel, TestProvider, ToolCall, reply_of
from .._schema_example import schema_example
from .cli import run_cli
from .conformance import Recording, check_recording, corpus_recordings, find_corpus, recordings, require_corpus
from .contract import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract
from .demo import DEMO_MODEL, DEMO_PROMPT, DEMO_STEPS, demo_check, demo_factory, demo_server, demo_tools
from .faults import FAULTS, FaultServer
from .grammar import GrammarError, check_events
from .recorded import replay_body
from .server import CapturedRequest, LoopbackServer, Response

__all__ = [
    "CONTRACT_CHECKS",
    "DEMO_MODEL",
    "DEMO_PROMPT",
    "DEMO_STEPS",
    "FAULTS",
    "CapturedRequest",
    "FaultServer",
    "FunctionModel",
    "GrammarError",
    "HTTPErrorCase",
    "LoopbackServer",
    "ModelError",
    "ProviderContract",
    "Recording",
    "Reply",
    "RequestInfo",
    "Response",
    "TestModel",
    "TestProvider",
    "ToolCall",
    "check_events",
    "check_recording",
    "corpus_recordings",
    "demo_check",
    "demo_factory",
    "demo_server",
    "demo_tools",
    "find_corpus",
    "recordings",
    "replay_body",
    "reply_of",
    "require_corpus",
    "run_cli",
    "schema_example",
]
