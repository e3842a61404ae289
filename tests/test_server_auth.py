"""A server you can put in front of users (issue 24): authentication, per-principal threads, limits, CORS.

Real parts: `hookstream serve --workers 3` (gunicorn) on SQLite and on a real PostgreSQL
(scripts/start-postgres), the simulated OpenAI provider of store_kit, a test OIDC issuer with its own
JWKS on loopback (keys made with cryptography, tokens signed by PyJWT), and plain HTTP clients.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socketserver
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hookstream.server import JWTAuthenticator, Principal, ServerLimits, TokenAuthenticator, make_app
from hookstream.stores import InMemoryStore
from hookstream.testing import run_cli
from hookstream_server.serve import is_loopback

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
jwt = pytest.importorskip("jwt", reason="JWT authentication needs PyJWT: pip install 'hookstream[serve]'")

from store_kit import Client, SimProvider, postgres, serve_workers  # noqa: E402

ALICE, BOB = "tok-alice-" + "a" * 24, "tok-bob-" + "b" * 24


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'threads.db'}"
    else:
        with postgres() as url:
            yield url


@pytest.fixture
def tokens_file(tmp_path: Path) -> str:
    path = tmp_path / "tokens"
    # alice's token is kept hashed at rest; bob's in clear
    import hashlib

    path.write_text(f"# token principal\nsha256:{hashlib.sha256(ALICE.encode()).hexdigest()} alice\n{BOB} bob\n")
    return str(path)


def post(base: str, body: dict[str, Any], token: str | None) -> requests.Response:
    headers = {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}
    resp = requests.post(base + "/", json=body, headers=headers, timeout=60)
    return resp


def run_body(thread_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": f"run-{uuid.uuid4().hex}", "messages": messages, "tools": [],
            "state": None, "context": [], "forwardedProps": None, **extra}


def stored(store_url: str, thread_id: str) -> list[str]:
    from hookstream.stores import open_store

    return [m.id or "" for m in open_store(store_url).load(thread_id)]


def test_two_principals_on_three_workers(store_url: str, tokens_file: str) -> None:
    """B cannot read, append to, resume or approve A's thread (404, nothing stored, no tool run); A can."""
    with SimProvider() as sim, serve_workers(store_url, sim.url, workers=3, extra=("--auth-tokens", tokens_file)) \
            as base:
        alice = Client(base, "A", full=False, token=ALICE)
        alice.say("pay 5")  # whoami runs, transfer waits for approval: the run is interrupted
        assert alice.interrupts
        before, asked = stored(store_url, alice.thread_id), len(sim.requests)

        # B appends a message to A's thread: 404, nothing stored, the model is not asked.
        sneaky = {"id": "user-b", "role": "user", "content": "B| what did A say?"}
        assert post(base, run_body(alice.thread_id, [sneaky]), BOB).status_code == 404
        # B approves A's pending transfer with resume: 404, the tool does not run.
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
                  for i in alice.interrupts]
        answer = post(base, run_body(alice.thread_id, [], resume=resume), BOB)
        assert answer.status_code == 404 and "sent" not in answer.text
        # B answers a (would-be) client tool of A's thread with a tool message: 404.
        call_id = next(c["id"] for m in alice.messages for c in m.get("toolCalls", ()))
        tool_msg = {"id": "tool-b", "role": "tool", "toolCallId": call_id, "content": "hijacked"}
        assert post(base, run_body(alice.thread_id, [tool_msg]), BOB).status_code == 404
        # Nobody: 401 with a challenge.
        anon = post(base, run_body(alice.thread_id, [sneaky]), None)
        assert anon.status_code == 401 and anon.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = post(base, run_body(alice.thread_id, [sneaky]), "tok-nobody")
        assert wrong.status_code == 401
        assert stored(store_url, alice.thread_id) == before and len(sim.requests) == asked

        # A approves: the transfer runs, once.
        events = alice.approve()
        results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert any(r.startswith("sent 5 by pid") for r in results), results
        # B's own thread works.
        bob = Client(base, "B", full=False, token=BOB)
        bob.say("hello")
        assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in bob.events)
        # ... and A cannot reach B's thread either.
        assert post(base, run_body(bob.thread_id, [sneaky]), ALICE).status_code == 404


def test_threads_stored_before_owners_are_reachable_only_without_auth(tmp_path: Path, tokens_file: str) -> None:
    from hookstream import Message
    from hookstream.stores import open_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = open_store(url)
    store.save("old-thread", [Message.user("from before owners were kept")])  # an engine run's save
    assert store.claim("old-thread", "alice") is False  # type: ignore[attr-defined]
    assert store.claim("old-thread", None) is True  # type: ignore[attr-defined]
    memory = InMemoryStore()
    assert memory.claim("t", "alice") and not memory.claim("t", "bob") and memory.claim("t", "alice")


def test_claims_race_one_owner(tmp_path: Path) -> None:
    from hookstream.stores import open_store

    store = open_store(f"sqlite:///{tmp_path / 'race.db'}")
    n = 12
    barrier = threading.Barrier(n)
    won: list[str] = []

    def claim(who: str) -> None:
        barrier.wait()
        if store.claim("contested", who):  # type: ignore[attr-defined]
            won.append(who)

    threads = [threading.Thread(target=claim, args=(f"p{i}",)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1


# -- JWT against a test issuer ---------------------------------------------------------------------------


class _Issuer:
    """An OIDC issuer on loopback: discovery document and JWKS (one RSA key), and a token minter."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwks = json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = jwks if self.path == "/jwks.json" else json.dumps(
                    {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks.json"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def token(self, sub: str = "carol", aud: str = "hookstream-test", exp: float = 300, iss: str | None = None,
              key: Any = None) -> str:
        now = int(time.time())
        claims = {"sub": sub, "aud": aud, "iss": iss or self.url, "iat": now, "exp": now + int(exp)}
        return str(jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": "k1"}))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def issuer() -> Iterator[_Issuer]:
    it = _Issuer()
    yield it
    it.close()


def test_jwt_checks(issuer: _Issuer) -> None:
    auth = JWTAuthenticator(issuer.url, "hookstream-test")

    def who(token: str) -> Principal | None:
        return auth({"HTTP_AUTHORIZATION": f"Bearer {token}"})

    good = who(issuer.token())
    assert good is not None and good.id == "carol" and good.claims["aud"] == "hookstream-test"
    assert who(issuer.token(aud="another-service")) is None
    assert who(issuer.token(exp=-120)) is None  # expired beyond the 30 s leeway
    assert who(issuer.token(key=issuer.other)) is None  # bad signature
    assert who(issuer.token(iss="https://evil.example")) is None
    unsigned = jwt.encode({"sub": "x", "aud": "hookstream-test", "iss": issuer.url, "exp": time.time() + 60},
                          None, algorithm="none")
    assert who(unsigned) is None
    assert who("not.a.jwt") is None and auth({}) is None


def test_serve_with_jwt_answers_401_for_bad_tokens(issuer: _Issuer) -> None:
    with contextlib.ExitStack() as stack:
        from serve_kit import serve_demo_process

        base = stack.enter_context(serve_demo_process("--delay", "0", "--jwt-issuer", issuer.url,
                                                      "--jwt-audience", "hookstream-test"))
        body = run_body("t-jwt", [{"id": "u1", "role": "user", "content": "What's the weather in Paris?"}])
        for bad in (issuer.token(aud="nope"), issuer.token(exp=-120), issuer.token(key=issuer.other)):
            answer = post(base, body, bad)
            assert answer.status_code == 401 and "WWW-Authenticate" in answer.headers
        ok = post(base, body, issuer.token())
        assert ok.status_code == 200 and "RUN_FINISHED" in ok.text


# -- the CLI's refusal, limits, CORS ---------------------------------------------------------------------


def test_non_loopback_without_auth_is_refused() -> None:
    done = run_cli(["serve", "--demo", "--host", "0.0.0.0", "--port", "0"])
    assert done.exit_code == 2 and "without authentication" in done.output and "--no-auth" in done.output
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


def test_a_principal_over_its_concurrent_runs_gets_429_while_another_is_served(tokens_file: str,
                                                                               tmp_path: Path) -> None:
    with SimProvider(delay=0.2) as sim, serve_workers(
            f"sqlite:///{tmp_path / 'limits.db'}", sim.url, workers=1,
            extra=("--auth-tokens", tokens_file, "--max-concurrent-runs", "1")) as base:
        started = threading.Event()
        first: dict[str, Any] = {}

        def long_run() -> None:
            headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {ALICE}"}
            body = run_body("t-a1", [{"id": "u1", "role": "user", "content": "A| look slowly"}])
            with requests.post(base + "/", json=body, headers=headers, stream=True, timeout=60) as resp:
                first["status"] = resp.status_code
                for _ in resp.iter_lines():
                    started.set()  # the run is streaming: it holds alice's only slot

        t = threading.Thread(target=long_run)
        t.start()
        assert started.wait(30)
        second = post(base, run_body("t-a2", [{"id": "u2", "role": "user", "content": "A| hi"}]), ALICE)
        assert second.status_code == 429 and int(second.headers["Retry-After"]) >= 1
        other = post(base, run_body("t-b1", [{"id": "u3", "role": "user", "content": "B| hi"}]), BOB)
        assert other.status_code == 200 and "RUN_FINISHED" in other.text
        t.join(60)
        assert first["status"] == 200


def test_runs_per_minute() -> None:
    auth = TokenAuthenticator({"t1": "p1", "t2": "p2"})
    app = make_app(stream_factory=_instant, authenticate=auth, limits=ServerLimits(runs_per_minute=2))
    statuses = [_call(app, {"HTTP_AUTHORIZATION": "Bearer t1"})[0] for _ in range(3)]
    assert statuses == ["200 OK", "200 OK", "429 Too Many Requests"]
    assert _call(app, {"HTTP_AUTHORIZATION": "Bearer t2"})[0] == "200 OK"  # another principal's own minute


def test_cors_is_exact_and_off_by_default() -> None:
    app = make_app(stream_factory=_instant, cors_origins=["https://app.example"])
    status, headers, _ = _call(app, {"REQUEST_METHOD": "OPTIONS", "HTTP_ORIGIN": "https://app.example"})
    assert status.startswith("204") and headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "Authorization" in headers["Access-Control-Allow-Headers"]
    _, headers, _ = _call(app, {"HTTP_ORIGIN": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in headers
    _, headers, _ = _call(make_app(stream_factory=_instant), {"HTTP_ORIGIN": "https://app.example"})
    assert "Access-Control-Allow-Origin" not in headers


def test_wrong_types_are_refused_at_construction() -> None:
    with pytest.raises(TypeError):
        ServerLimits(max_messages="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Principal("")
    with pytest.raises(TypeError):
        make_app(stream_factory=_instant, authenticate="tokens")  # type: ignore[arg-type]

    class NoOwners:
        def load(self, thread_id: str) -> list[Any]:
            return []

        def save(self, thread_id: str, messages: Any) -> None:
            pass

    with pytest.raises(TypeError, match="owners"):
        make_app(stream_factory=_instant, authenticate=TokenAuthenticator({"t": "p"}), store=NoOwners())
    with pytest.raises(ValueError):
        TokenAuthenticator.parse("only-one-field")
    assert "t1" not in repr(TokenAuthenticator({"t1": "p1"}))


# -- in-process WSGI helpers --------------------------------------------------------------------------


class _Instant:
    def __init__(self, run: Any) -> None:
        self.run = run

    def __iter__(self) -> Iterator[Any]:
        from hookstream.events import RunFinished, RunStarted

        yield RunStarted(self.run.thread_id, self.run.run_id)
        yield RunFinished(self.run.thread_id, self.run.run_id)

    def cancel(self) -> None:
        pass


def _instant(run: Any) -> _Instant:
    return _Instant(run)


def _call(app: Any, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    import io

    body = json.dumps(run_body("t", [{"id": "u", "role": "user", "content": "hi"}])).encode()
    env = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "CONTENT_LENGTH": str(len(body)),
           "wsgi.input": io.BytesIO(body), **environ}
    got: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        got["status"], got["headers"] = status, dict(headers)

    result = app(env, start_response)
    out = b"".join(result)
    close = getattr(result, "close", None)
    if close is not None:
        close()
    return got["status"], got["headers"], out


def test_a_plugin_authenticator_by_name() -> None:
    from hookstream.plugin import Registry, hookimpl, reset_registry

    class Plugin:
        @hookimpl
        def hookstream_register_authenticators(self, register: Any) -> None:
            def factory() -> Any:
                def authenticate(environ: Any) -> Principal | None:
                    return Principal("sso-user") if environ.get("HTTP_X_SSO") == "yes" else None
                return authenticate
            register("sso", factory)

    registry = Registry(autoload=False)
    registry.add_plugin(Plugin(), "sso-plugin")
    reset_registry(registry)
    try:
        from hookstream_server.serve import authenticator

        auth = authenticator(None, None, (), None, ("sso",))
        assert auth is not None and auth({"HTTP_X_SSO": "yes"}) == Principal("sso-user")
        app = make_app(stream_factory=_instant, authenticate=auth)
        assert _call(app, {"HTTP_X_SSO": "yes"})[0] == "200 OK"
        assert _call(app, {})[0] == "401 Unauthorized"
    finally:
        reset_registry(None)


def test_a_run_past_max_run_seconds_is_cancelled() -> None:
    cancelled = threading.Event()

    class Endless:
        def __init__(self, run: Any) -> None:
            self.run = run

        def __iter__(self) -> Iterator[Any]:
            from hookstream.events import RunError, RunStarted

            yield RunStarted(self.run.thread_id, self.run.run_id)
            cancelled.wait()
            yield RunError("cancelled", code="cancelled")

        def cancel(self) -> None:
            cancelled.set()

    app = make_app(stream_factory=Endless, limits=ServerLimits(max_run_seconds=0.05))
    status, _, out = _call(app, {})
    assert status == "200 OK" and b"RUN_ERROR" in out and cancelled.is_set()
