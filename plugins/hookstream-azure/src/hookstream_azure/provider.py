"""The ``azure`` and ``azure-responses`` providers: Azure OpenAI in Azure AI Foundry.

The request bodies and the stream parsing are hookstream-openai's (:class:`OpenAIChatProvider`,
:class:`OpenAIResponsesProvider`); Azure differs only in where the request goes and how it is
authorised (Microsoft Learn, "Azure OpenAI in Azure AI Foundry Models REST API reference" and "Azure
OpenAI API version lifecycle", the v1 API):

* **v1 API** (no ``api_version``, or ``"v1"``): ``{endpoint}/openai/v1/chat/completions`` and
  ``{endpoint}/openai/v1/responses``, the deployment name as the body's ``model``.
* **Dated API** (``api_version="2024-10-21"``...): ``{endpoint}/openai/deployments/{deployment}/chat/
  completions?api-version=V`` and ``{endpoint}/openai/responses?api-version=V``.

``endpoint`` is ``get_model(..., base_url=)`` or ``$AZURE_OPENAI_ENDPOINT``
(``https://RESOURCE.openai.azure.com``; a value that already ends in ``/openai/v1`` or ``/openai`` is
accepted). ``api_version`` is the keyword or ``$AZURE_OPENAI_API_VERSION`` / ``$OPENAI_API_VERSION``.

Authorisation, first that applies: ``api_key`` or ``$AZURE_OPENAI_API_KEY`` in the ``api-key``
header; ``azure_ad_token_provider`` (a callable returning a token, as the openai SDK takes) or
``credential`` (an ``azure.core`` ``TokenCredential``), else ``azure.identity.DefaultAzureCredential``
when ``azure-identity`` is installed (``pip install hookstream-azure[entra]``): a Microsoft Entra ID
token for ``https://cognitiveservices.azure.com/.default`` in ``Authorization: Bearer``, fetched once
and refreshed five minutes before it expires (:class:`~hookstream.plugin.RefreshingToken`). With none
of them, a call ends with ``RUN_ERROR`` ``missing_credentials`` saying what to set; a loopback
``base_url`` needs none. Keys and tokens are masked in every repr, error and log line.

Azure's ``prompt_filter_results`` (first chunk) and ``content_filter_results`` (each choice) are kept
on ``RUN_FINISHED`` metadata ``{"azure": {...}}`` (the last of each, plus every result that filtered
something, under ``"filtered"``); an answer cut by the content filter ends with finish reason
``content_filter`` (raw ``content_filter``), as the OpenAI mapping already says.

Thread safety: instances hold configuration, a connection pool and a token cache, and may be shared
between threads; a token refresh happens once, under a lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

import requests
from hookstream.errors import MissingCredentialsError
from hookstream.plugin import HTTPRequest, ModelRequest, Provider, RefreshingToken, Secret
from hookstream_openai.chat import OpenAIChatProvider, chat_body
from hookstream_openai.responses import OpenAIResponsesProvider, responses_body

__all__ = ["ENTRA_SCOPE", "AzureChatProvider", "AzureResponsesProvider", "AzureSettings"]

ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
"""The Microsoft Entra ID scope of Azure OpenAI tokens."""

_WHAT_TO_SET = ("set AZURE_OPENAI_API_KEY (or pass api_key=), or install hookstream-azure[entra] and sign in "
                "for Microsoft Entra ID (az login, AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, or a "
                "managed identity), or pass credential= / azure_ad_token_provider=")


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


class AzureSettings:
    """What both Azure providers add to the OpenAI ones: the resource endpoint, the API version and
    the credential. Built by their constructors; see the module docstring for the rules.

    Raises :class:`TypeError` at construction for a ``credential`` without ``get_token`` or an
    ``azure_ad_token_provider`` that is not callable.
    """

    __slots__ = ("_token", "api_version", "endpoint", "token_provider")

    def __init__(
        self,
        endpoint: str,
        api_version: str | None,
        credential: Any,
        azure_ad_token_provider: Callable[[], str] | None,
        has_key: bool,
    ) -> None:
        self.endpoint = _resource_root(endpoint)
        self.api_version = api_version or os.environ.get("AZURE_OPENAI_API_VERSION") or os.environ.get(
            "OPENAI_API_VERSION") or None
        if azure_ad_token_provider is not None and not callable(azure_ad_token_provider):
            raise TypeError("azure_ad_token_provider must be a callable returning a token string")
        if credential is not None and not callable(getattr(credential, "get_token", None)):
            raise TypeError(f"credential must be an azure.core TokenCredential (with get_token), not "
                            f"{type(credential).__name__}")
        self.token_provider = azure_ad_token_provider
        self._token: RefreshingToken | None = None
        if not has_key and azure_ad_token_provider is None:
            if credential is None and not _is_loopback(self.endpoint):
                credential = _default_credential()
            if credential is not None:
                cred = credential

                def fetch() -> tuple[str, float | None]:
                    token = cred.get_token(ENTRA_SCOPE)
                    return token.token, float(token.expires_on)

                self._token = RefreshingToken(fetch)

    @property
    def v1(self) -> bool:
        """Whether requests use the v1 API (no dated ``api-version``)."""
        return self.api_version in (None, "v1")

    def auth_headers(self, api_key: Secret) -> dict[str, str]:
        """The authorisation header: ``api-key``, or ``Authorization: Bearer`` with an Entra ID token,
        or none (a loopback endpoint). Raises :class:`MissingCredentialsError` when the endpoint needs
        one and nothing can give it."""
        if api_key:
            return {"api-key": api_key.reveal()}
        if self.token_provider is not None:
            return {"Authorization": f"Bearer {self.token_provider()}"}
        if self._token is not None:
            try:
                return {"Authorization": f"Bearer {self._token.get().reveal()}"}
            except Exception as exc:  # azure-identity's ClientAuthenticationError, CredentialUnavailableError
                raise MissingCredentialsError("azure", f"Microsoft Entra ID gave no token "
                                                       f"({type(exc).__name__}); {_WHAT_TO_SET}") from None
        if _is_loopback(self.endpoint):
            return {}
        raise MissingCredentialsError("azure", _WHAT_TO_SET)

    def check(self) -> None:
        """Raise :class:`MissingCredentialsError` when there is no endpoint to call."""
        if not self.endpoint:
            raise MissingCredentialsError(
                "azure", "set AZURE_OPENAI_ENDPOINT (https://RESOURCE.openai.azure.com) or pass base_url=")

    def redact(self, text: str) -> str:
        """``text`` with the current Entra ID token masked."""
        return self._token.redact(text) if self._token is not None else text


def _resource_root(endpoint: str) -> str:
    root = (endpoint or "").rstrip("/")
    for suffix in ("/openai/v1", "/openai"):
        if root.endswith(suffix):
            return root[: -len(suffix)]
    return root


def _default_credential() -> Any:
    """``DefaultAzureCredential()`` when azure-identity is installed, else ``None``."""
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        return None
    return DefaultAzureCredential()


class _Azure(Provider):
    """Shared construction of the two Azure providers."""

    default_base_url: ClassVar[str] = ""
    api_key_env: ClassVar[tuple[str, ...]] = ("AZURE_OPENAI_API_KEY",)
    key_name: ClassVar[str] = "azure"  # hookstream keys set azure: one key for azure and azure-responses
    distribution: ClassVar[str] = "hookstream-azure"
    azure: AzureSettings

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
        api_version: str | None = None,
        credential: Any = None,
        azure_ad_token_provider: Callable[[], str] | None = None,
    ) -> None:
        endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT", "")
        super().__init__(model, base_url=endpoint, api_key=api_key, session=session)
        self.azure = AzureSettings(self.base_url, api_version, credential, azure_ad_token_provider,
                                   bool(self.api_key))

    def check_api_key(self) -> None:
        """Raise :class:`~hookstream.errors.MissingCredentialsError` without an endpoint; the
        credential is checked when the request is built (an Entra ID token is fetched then)."""
        self.azure.check()

    def redact(self, text: str) -> str:
        return self.azure.redact(super().redact(text))

    def _url(self, v1_path: str, dated_path: str) -> str:
        az = self.azure
        if az.v1:
            return f"{az.endpoint}/openai/v1/{v1_path}"
        return f"{az.endpoint}/openai/{dated_path}?api-version={quote(az.api_version or '', safe='-')}"

    def _headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Accept": "text/event-stream",
                **self.azure.auth_headers(self.api_key)}


class AzureChatProvider(_Azure, OpenAIChatProvider):
    """``azure:DEPLOYMENT``: Chat Completions on an Azure OpenAI deployment, parsed by
    :class:`~hookstream_openai.chat.OpenAIChatProvider`."""

    name: ClassVar[str] = "azure"
    kept_fields: ClassVar[tuple[str, ...]] = ("prompt_filter_results", "content_filter_results")

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The streamed Chat Completions request (body: :func:`hookstream_openai.chat.chat_body`).
        Raises :class:`ValueError` for a request Chat Completions cannot express and
        :class:`~hookstream.errors.MissingCredentialsError` without a credential."""
        deployment = quote(request.model or self.model, safe="-._~")
        url = self._url("chat/completions", f"deployments/{deployment}/chat/completions")
        return HTTPRequest(url, chat_body(request), self._headers())


class AzureResponsesProvider(_Azure, OpenAIResponsesProvider):
    """``azure-responses:DEPLOYMENT``: the Responses API on Azure OpenAI, parsed by
    :class:`~hookstream_openai.responses.OpenAIResponsesProvider`."""

    name: ClassVar[str] = "azure-responses"

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The streamed Responses request (body: :func:`hookstream_openai.responses.responses_body`,
        the deployment as ``model``). Raises as :meth:`AzureChatProvider.build_request`."""
        return HTTPRequest(self._url("responses", "responses"), responses_body(request), self._headers())
