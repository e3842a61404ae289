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
from hookstream_dbos.claims import kept_claims
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
