"""The ``bedrock`` provider: Amazon Bedrock ``ConverseStream``
(``POST {base_url}/model/{modelId}/converse-stream``; Bedrock API Reference, "ConverseStream").

``get_model("bedrock:MODEL_ID", region=..., profile=...)``: ``MODEL_ID`` is a model id, an inference
profile id or an ARN (``anthropic.claude-3-haiku-20240307-v1:0``, ``us.amazon.nova-lite-v1:0``),
percent-encoded into the path as the AWS SDKs do. ``base_url`` defaults to
``https://bedrock-runtime.{region}.amazonaws.com``; the region is ``region=``, else ``AWS_REGION``,
else ``AWS_DEFAULT_REGION``, else the region of the botocore profile (``profile=``, else
``AWS_PROFILE``, else ``default``).

Authorisation, per attempt (:meth:`BedrockProvider.sign` sees the exact body bytes):

* an API key (``api_key=``, else ``AWS_BEARER_TOKEN_BEDROCK``: a Bedrock API key) is sent as
  ``Authorization: Bearer KEY``;
* otherwise the request is signed with AWS Signature Version 4 (service ``bedrock``, the region) by
  botocore's ``SigV4Auth``, with credentials from botocore's chain for the profile: environment
  (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), shared credentials and
  config files, SSO, assume-role, container and instance roles. Refreshable credentials are frozen
  once per signature, so a long-lived provider picks up rotated keys. No credentials at all ends the
  call with ``RUN_ERROR missing_credentials`` before anything is sent, naming ``AWS_BEARER_TOKEN_BEDROCK``
  first (and, for a loopback ``base_url``, that any value will do there).

The secret access key and session token last used are masked in every message the core shows
(:meth:`BedrockProvider.redact`), as is the API key.

Thread safety: a :class:`BedrockProvider` may be shared between threads: the botocore session and
credentials are created once under a lock (botocore credentials refresh under their own lock);
per-call state lives in the generator :meth:`BedrockProvider.parse_stream` returns.
"""

from __future__ import annotations

import ipaddress
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

import requests
from hookstream.errors import MalformedChunkError, MissingCredentialsError
from hookstream.events import BaseEvent
from hookstream.plugin import CallContext, Framing, HTTPRequest, ModelRequest, Provider, Secret

from .framing import EVENT_STREAM, MEDIA_TYPE
from .request import build_body
from .stream import STOP_REASONS, ConverseStreamParser

__all__ = ["CREDENTIALS_HINT", "DEFAULT_BASE_URL", "BedrockProvider"]

DEFAULT_BASE_URL = "https://bedrock-runtime.{region}.amazonaws.com"
"""The Bedrock runtime endpoint; ``{region}`` is filled with the provider's region."""

CREDENTIALS_HINT = ("set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run on an instance role)")
"""What :class:`~hookstream.errors.MissingCredentialsError` tells the user to set."""

LOOPBACK_HINT = ("; this base URL is a local server, which checks nothing: any value will do "
                 "(AWS_BEARER_TOKEN_BEDROCK=test)")
"""Added to :data:`CREDENTIALS_HINT` when the base URL is on this machine (a test server, a replay)."""

SIGNING_NAME = "bedrock"
"""The SigV4 service name of ``bedrock-runtime`` (its endpoint rules sign as ``bedrock``)."""

_SIGNATURE_HEADERS = ("authorization", "x-amz-date", "x-amz-security-token")
# The Converse fields CountTokens takes (API reference, ``ConverseTokensRequest``).
_COUNT_FIELDS = ("messages", "system", "toolConfig", "additionalModelRequestFields")


class BedrockProvider(Provider):
    """Adapter for Bedrock ``ConverseStream``; see :mod:`hookstream_bedrock.request` for the body,
    :mod:`hookstream_bedrock.stream` for the event mapping and :mod:`hookstream_bedrock.framing` for
    the binary framing.

    Raises :class:`ValueError` from :meth:`build_request` when no region can be found and no
    ``base_url`` was given."""

    name: ClassVar[str] = "bedrock"
    finish_reasons: ClassVar[Mapping[str, str]] = STOP_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = "stop"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    api_key_env: ClassVar[tuple[str, ...]] = ("AWS_BEARER_TOKEN_BEDROCK",)
    framing: ClassVar[Framing] = EVENT_STREAM
    distribution: ClassVar[str] = "hookstream-bedrock"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
        region: str | None = None,
        profile: str | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, session=session)
        self.profile = profile
        self._custom_base_url = base_url is not None
        self._region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
        self._botocore: Any = None  # botocore.session.Session, made on first use
        self._credentials: Any = None  # botocore Credentials (refreshable ones refresh themselves)
        self._lock = threading.Lock()
        self._seen: tuple[Secret, ...] = ()  # the secret key and session token last signed with
        if not self._custom_base_url and self._region is not None:
            self.base_url = DEFAULT_BASE_URL.format(region=self._region)

    def __repr__(self) -> str:
        return f"BedrockProvider(model={self.model!r}, region={self._region!r}, profile={self.profile!r})"

    # -- configuration --------------------------------------------------------------------------
    def _aws_session(self) -> Any:
        with self._lock:
            if self._botocore is None:
                import botocore.session

                self._botocore = botocore.session.Session(profile=self.profile)
            return self._botocore

    @property
    def region(self) -> str | None:
        """The AWS region requests go to and are signed for (see the module docstring), or ``None``
        when none is configured anywhere."""
        if self._region is None:
            configured = self._aws_session().get_config_variable("region")
            if configured:
                self._region = str(configured)
                if not self._custom_base_url:
                    self.base_url = DEFAULT_BASE_URL.format(region=self._region)
        return self._region

    def _aws_credentials(self) -> Any:
        """botocore's credentials for the profile; raises MissingCredentialsError when the chain finds
        none (botocore's own profile errors pass through)."""
        if self._credentials is None:
            credentials = self._aws_session().get_credentials()
            if credentials is None:
                local = self._custom_base_url and _is_loopback(self.base_url)
                raise MissingCredentialsError(self.name, CREDENTIALS_HINT + (LOOPBACK_HINT if local else ""))
            with self._lock:
                self._credentials = credentials
        return self._credentials

    # -- Provider contract ----------------------------------------------------------------------
    def check_api_key(self) -> None:
        """Raise :class:`~hookstream.errors.MissingCredentialsError` when there is neither an API key
        nor AWS credentials (whatever the ``base_url``: a Bedrock endpoint always authorises)."""
        if self.api_key:
            return
        self._aws_credentials()

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/model/{modelId}/converse-stream`` with the JSON body of
        :func:`hookstream_bedrock.request.build_body`; ``Authorization: Bearer`` when there is an API
        key, else the SigV4 headers are added by :meth:`sign`.

        Raises :class:`ValueError` when the request cannot be expressed or there is no region."""
        if self.region is None and not self._custom_base_url:
            raise ValueError("no AWS region for the bedrock provider: pass region=..., set AWS_REGION, "
                             "or set a region in the AWS profile")
        headers = {"content-type": "application/json", "accept": MEDIA_TYPE}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key.reveal()}"
        url = f"{self.base_url}/model/{quote(self.model, safe='')}/converse-stream"
        return HTTPRequest(url, build_body(request), headers)

    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """``POST {base_url}/model/{modelId}/count-tokens`` (Bedrock API reference, ``CountTokens``): the
        Converse body :meth:`build_request` sends, as ``{"input": {"converse": {messages, system,
        toolConfig, additionalModelRequestFields}}}``; signed like every call (:meth:`sign`). The answer
        is ``{"inputTokens": N}``. Only some models count (others answer ``ValidationException``)."""
        http = self.build_request(request)
        converse = {k: http.json[k] for k in _COUNT_FIELDS if k in http.json}
        url = http.url.rsplit("/", 1)[0] + "/count-tokens"
        headers = {**http.headers, "accept": "application/json"}
        return HTTPRequest(url, {"input": {"converse": converse}}, headers)

    def read_token_count(self, answer: Any) -> int:
        """``inputTokens`` of a ``CountTokens`` answer. Raises :class:`~hookstream.errors.MalformedChunkError`
        when it is missing."""
        value = answer.get("inputTokens") if isinstance(answer, dict) else None
        if isinstance(value, bool) or not isinstance(value, int):
            raise MalformedChunkError("CountTokens answer without an integer inputTokens", repr(answer))
        return value

    def sign(self, request: HTTPRequest, body: bytes) -> None:
        """Sign ``request`` for ``body`` with SigV4 (botocore ``SigV4Auth``, service ``bedrock``):
        sets ``Authorization``, ``X-Amz-Date`` and, with temporary credentials,
        ``X-Amz-Security-Token``, replacing those of an earlier attempt. Nothing with an API key.
        Raises :class:`~hookstream.errors.MissingCredentialsError` when there are no credentials."""
        if self.api_key:
            return
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = self._aws_credentials().get_frozen_credentials()
        secrets = tuple(Secret(s) for s in (frozen.secret_key, frozen.token) if s)
        if secrets != self._seen:
            self._seen = secrets
        for key in [k for k in request.headers if k.lower() in _SIGNATURE_HEADERS]:
            del request.headers[key]
        aws = AWSRequest(method=request.method, url=request.url, data=body, headers=dict(request.headers))
        SigV4Auth(frozen, SIGNING_NAME, self.region or "us-east-1").add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value

    def redact(self, text: str) -> str:
        """``text`` with the API key, the AWS secret access key and the session token masked."""
        text = super().redact(text)
        for secret in self._seen:
            text = secret.redact(text)
        return text

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """AG-UI events of one streamed Converse response (see :class:`ConverseStreamParser`)."""
        return ConverseStreamParser(context).run(events)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of a Bedrock error body: ``{"message": ...}`` (REST-JSON; the type
        lives in the ``x-amzn-ErrorType`` header, which this hook does not see), or ``{"__type",
        "message"}`` / ``{"Message"}``; the type is the ``__type`` or ``code`` when the body has one
        (``"com.amazonaws...#ThrottlingException"`` -> ``ThrottlingException``), else ``None``, so the
        status decides the code."""
        text = body.decode("utf-8", "replace").strip()
        try:
            doc = json.loads(text)
        except ValueError:
            return (text[:500] or f"HTTP {status}", None)
        if not isinstance(doc, dict):
            return (text[:500], None)
        message = doc.get("message") or doc.get("Message") or text[:500]
        etype = doc.get("__type") or doc.get("code") or doc.get("Code")
        if isinstance(etype, str) and etype:
            etype = etype.rsplit("#", 1)[-1].split(":", 1)[0]
            return (str(message), etype)
        return (str(message), None)


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
