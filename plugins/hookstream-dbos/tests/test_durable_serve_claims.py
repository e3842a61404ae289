"""A recovered served run sees the principal it had: ``hookstream serve --durable`` under JWT auth (the core's
loopback OIDC issuer), a tool that reports its run's principal's claims, the worker SIGKILLed while that tool
runs: in the live worker that recovers the run, the tool's second attempt sees the same claims. The DBOS
system database holds the claims, never the bearer token. And :func:`hookstream_dbos.claims.kept_claims`,
the rule that keeps credentials out of the journal."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
if sys.platform == "win32":
    pytest.skip("gunicorn runs on Unix only", allow_module_level=True)

import jwt
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import final_stream, provider_stream
from hookstream_dbos.claims import kept_claims, kept_json
from test_durable_serve import WAIT, _frames, _wait_for, serve
from test_server_auth import _Issuer  # the core's loopback OIDC issuer (discovery, JWKS)

AUDIENCE = "hookstream-test"


def _token(issuer: _Issuer, **claims: Any) -> str:
    now = int(time.time())
    return str(jwt.encode({"sub": "carol", "aud": AUDIENCE, "iss": issuer.url, "iat": now, "exp": now + 600,
                           **claims}, issuer.key, algorithm="RS256", headers={"kid": "k1"}))


def _journal_text(db: str) -> str:
    """Every served workflow's input and output and every step's output, as DBOS decodes them, in one text."""
    from dbos import DBOSClient
    from hookstream_dbos.journal import recorded_steps

    client = DBOSClient(system_database_url=db)
    try:
        out = []
        for status in client.list_workflows():
            out += [repr(status.input), repr(status.output)]
            out += [repr(row) for row in recorded_steps(status.workflow_id, client)]
        return "\n".join(out)
    finally:
        client.destroy()


def test_a_recovered_run_sees_its_principals_claims_and_the_journal_no_token(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    thread_id, run_id = "thread-claims", f"run-{uuid.uuid4().hex}"
    call = [e.replace(b"call_fault1", b"call_who") for e in
            provider_stream("openai", text="", reasoning="", tool_name="whoami", tool_args={}).events]
    responses = [Response(pieces=call), Response(pieces=final_stream("openai", text="You are carol.").events)]
    issuer = _Issuer()
    token = _token(issuer, roles=["refunds", "viewer"], tenant="acme")
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
    body = {"threadId": thread_id, "runId": run_id, "tools": [], "context": [], "state": None,
            "forwardedProps": None, "messages": [{"id": "u1", "role": "user", "content": "Who am I?"}]}
    try:
        with LoopbackServer(responses) as model, \
                serve(model.url, f"sqlite:///{tmp_path / 'threads.db'}", folder, "--tool", "durable_claims:whoami",
                      "--jwt-issuer", issuer.url, "--jwt-audience", AUDIENCE, "--durable", "--durable-db", db,
                      "--durable-name", "claims", hold=False) as base:
            before: list[tuple[str, dict[str, Any]]] = []
            with requests.post(base + "/", json=body, headers=headers, stream=True, timeout=WAIT) as resp:
                assert resp.status_code == 200, resp.text
                _wait_for(folder / "whoami-running", "whoami's first run")
                os.kill(int((folder / "whoami-running").read_text("utf-8")), signal.SIGKILL)
                _frames(resp, before)
            assert before and before[-1][1]["type"] != "RUN_FINISHED"
            # The client reconnects: the recovered run goes on to its end.
            after: list[tuple[str, dict[str, Any]]] = []
            url = f"{base}/agui/threads/{thread_id}/runs/{run_id}/events"
            with requests.get(url, headers={**headers, "Last-Event-ID": before[-1][0]}, stream=True,
                              timeout=WAIT) as again:
                assert again.status_code == 200, again.text
                _frames(again, after)
            assert after and after[-1][1]["type"] == "RUN_FINISHED", after[-3:]
    finally:
        issuer.close()
    first, recovered = (json.loads((folder / f"claims-{n}.json").read_text("utf-8")) for n in (1, 2))
    assert first["tenant"] == "acme" and first["roles"] == ["refunds", "viewer"] and first["sub"] == "carol"
    assert recovered == first  # the recovered run's principal is the one that started it
    results = [e["content"] for _, e in before + after if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["carol of acme"]

    journal = _journal_text(db)
    assert "acme" in journal and "refunds" in journal  # the claims are there, decoded...
    signature = token.rsplit(".", 1)[1]
    assert token not in journal and signature not in journal  # ...the bearer token is not
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("durable.sqlite*"))
    assert token.encode() not in raw and signature.encode() not in raw


def test_the_journal_keeps_claims_but_no_credential() -> None:
    jws = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    jwe_dir = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..MTIzNDU2Nzg5MDEy.Y2lwaGVydGV4dA.MDEyMzQ1Njc4OWFiY2RlZg"
    claims = {"sub": "carol", "iss": "https://id.example", "aud": ["a", "b"], "exp": 1, "auth_time": 2,
              "roles": ["admin"], "tenant": {"id": "acme", "plan": "gold"}, "email": "first.lastname.x@acme.example",
              "access_token": "opaque", "idToken": "opaque", "client-secret": "s", "api_key": "k", "jwt": "j",
              "passphrase": "p", "ssh_privkey": "k", "signingKey": "k",
              "nested": {"refresh_token": "r"}, "upstream": [jws], "wrapped": f"Bearer {jws}", "sealed": jwe_dir,
              "blob": b"\x00", "when": object()}
    assert kept_claims(claims) == {"sub": "carol", "iss": "https://id.example", "aud": ["a", "b"], "exp": 1,
                                   "auth_time": 2, "roles": ["admin"], "tenant": {"id": "acme", "plan": "gold"},
                                   "email": "first.lastname.x@acme.example"}


def _rows_text(path: Path) -> bytes:
    """Every cell of every table of the SQLite file ``path``, as stored and, where a cell is base64 (DBOS's
    pickles), decoded too: what a reader of the database file could get without DBOS."""
    import base64
    import binascii
    import sqlite3

    out: list[bytes] = []
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # the names come from the file itself
                for cell in row:
                    raw = cell if isinstance(cell, bytes) else str(cell).encode()
                    out.append(raw)
                    try:
                        out.append(base64.b64decode(raw, validate=True))
                    except (binascii.Error, ValueError):
                        pass
    return b"\n".join(out)


def test_the_journal_keeps_no_credential_a_client_sent_in_state_or_forwarded_props(tmp_path: Path) -> None:
    """A front end that sends an API key or a bearer token in ``forwardedProps`` or ``state`` (some do): a
    served durable run that waits for an approval and its answer journal the rest of both, never those."""
    folder = tmp_path / "run"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    jws = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjYXJvbCJ9.c2lnbmF0dXJlLW9mLWNhcm9s"
    secrets = {"key": "sk-proj-k3y0fTheCl1entN0tT0BeJ0urnaled", "bearer": "opaque-b3arer-t0ken-value",
               "session": "s3ss10n-t0ken-of-carol", "jws": jws, "answer_key": "sk-ant-an0therK3yInTheAnsw3rPost",
               "password": "hunter2-in-state"}
    state = {"cart": "cart-77", "session": {"accessToken": secrets["session"], "user": "carol"},
             "usage": {"max_tokens": 512}, "login": {"password": secrets["password"]}, "upstream": [secrets["jws"]]}
    props = {"apiKey": secrets["key"], "headers": {"Authorization": f"Bearer {secrets['bearer']}",
                                                  "X-Request-Id": "req-1"}, "locale": "fr-FR"}
    bodies = [
        provider_stream("openai", text="First a. ", reasoning="", tool_name="tool_a", tool_args={"n": 1}).events,
        provider_stream("openai", text="Now pay. ", reasoning="", tool_name="pay", tool_args={"amount": 5}).events,
        final_stream("openai", text="Paid.").events,
    ]
    bodies[0] = [e.replace(b"call_fault1", b"call_a") for e in bodies[0]]
    bodies[1] = [e.replace(b"call_fault1", b"call_p") for e in bodies[1]]
    thread_id, run_1, run_2 = "thread-props", f"run-{uuid.uuid4().hex}", f"run-{uuid.uuid4().hex}"
    first_body = {"threadId": thread_id, "runId": run_1, "tools": [], "context": [], "state": state,
                  "forwardedProps": props, "messages": [{"id": "u1", "role": "user", "content": "Run a, then pay 5."}]}
    headers = {"Accept": "text/event-stream"}
    with LoopbackServer([Response(pieces=b) for b in bodies]) as model, \
            serve(model.url, f"sqlite:///{tmp_path / 'threads.db'}", folder, "--tool", "durable_served:pay",
                  "--durable", "--durable-db", db, "--durable-name", "props", hold=False) as base:
        got: list[tuple[str, dict[str, Any]]] = []
        with requests.post(base + "/", json=first_body, headers=headers, stream=True, timeout=WAIT) as resp:
            assert resp.status_code == 200, resp.text
            _frames(resp, got)
        end = got[-1][1]
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
        [interrupt] = end["outcome"]["interrupts"]
        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
        answer_body = {**first_body, "runId": run_2, "messages": [], "resume": resume,
                       "forwardedProps": {**props, "apiKey": secrets["answer_key"]}}
        answered: list[tuple[str, dict[str, Any]]] = []
        with requests.post(base + "/", json=answer_body, headers=headers, stream=True, timeout=WAIT) as resp:
            assert resp.status_code == 200, resp.text
            _frames(resp, answered)
        assert answered[-1][1]["type"] == "RUN_FINISHED" and answered[-1][1]["outcome"]["type"] == "success"
        assert len(model.requests) == 3

    journal = _journal_text(db)
    # The run's input and its answer's, decoded: the client's data is there...
    assert "cart-77" in journal and "req-1" in journal and "fr-FR" in journal and "'max_tokens': 512" in journal
    assert "'user': 'carol'" in journal
    rows = _rows_text(tmp_path / "durable.sqlite")
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("durable.sqlite*"))
    assert b"cart-77" in rows and b"req-1" in rows
    for name, secret in secrets.items():  # ...its credentials are not, decoded, in the rows or in the file
        assert secret not in journal, name
        assert secret.encode() not in rows and secret.encode() not in raw, name


def test_one_rule_keeps_a_clients_data_but_no_credential() -> None:
    from hookstream.plugin import SECRET_HEADERS
    from hookstream.server import RunInput
    from hookstream_dbos.serve_wait import decode_run, encode_run, live_input

    jws = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    props = {"apiKey": "k", "openaiKey": "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "cart": [1, {"sku": "a"}],
             "headers": {**{name: "v" for name in SECRET_HEADERS}, "X-Request-Id": "r1"},
             "usage": {"max_tokens": 9, "total_tokens": 5, "token_count": 3, "tokenizer": "o200k"},
             "auth": "Bearer abcdefghijk", "note": "Bearer of bad news", "ids": ["ok", jws, 3],
             "aws": "AKIAABCDEFGHIJKLMNOP",
             "google": "AIza" + "x" * 35, "deep": {"deeper": {"refresh_token": "r", "kept": True}}, "when": object()}
    assert kept_json(props) == {"cart": [1, {"sku": "a"}], "headers": {"X-Request-Id": "r1"},
                                "usage": {"max_tokens": 9, "total_tokens": 5, "token_count": 3, "tokenizer": "o200k"},
                                "note": "Bearer of bad news", "ids": ["ok", 3], "deep": {"deeper": {"kept": True}}}
    clean = {"cart": [1, {"sku": "a"}], "n": None}
    assert kept_json(clean) is clean and kept_json(None) is None and kept_json(jws) is None
    assert props["apiKey"] == "k"  # the value given is never changed
    # The claims keep a claim whole or not at all.
    assert kept_claims({"sub": "carol", "deep": {"deeper": {"refresh_token": "r", "kept": True}}}) == {"sub": "carol"}

    # Not too eager: what a recovered run may need and no credential is (a flag or null under a credential's
    # name, a token budget, Cognito's token_use claim, an OAuth token_type); not too lax: more key shapes.
    data = {"has_password": True, "password_set": False, "authToken": None, "token_budget": 100,
            "token_use": "access", "tokenType": "Bearer", "password": 1234, "passcode": "9876"}
    assert kept_json(data) == {"has_password": True, "password_set": False, "authToken": None,
                               "token_budget": 100, "token_use": "access", "tokenType": "Bearer"}
    assert kept_claims({"sub": "carol", "token_use": "access", "mfa_secret_set": True}) == {
        "sub": "carol", "token_use": "access", "mfa_secret_set": True}
    for key in ("sk_live_" + "a1" * 12, "rk_test_" + "b2" * 12, "hf_" + "c" * 34, "glpat-" + "d" * 20,
                "npm_" + "e" * 36):
        assert kept_json({"k": key, "n": 1}) == {"n": 1}, key

    # A served run's kept input holds the rest; the answering run started in the POST's own worker gets
    # the client's values whole, as any live run does.
    run = RunInput("t", "r", [], [], state={"s": 1, "sessionToken": "x"}, forwarded_props=props)
    doc = encode_run(run)
    assert doc["state"] == {"s": 1} and "apiKey" not in doc["forwarded_props"]
    rebuilt, _ = decode_run(doc)
    assert rebuilt.state == {"s": 1}
    live = live_input(rebuilt, run)
    assert live.state == run.state and live.forwarded_props is props and live.thread_id == "t"
    assert live_input(rebuilt, None) is rebuilt
