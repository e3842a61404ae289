"""What the two Vertex AI providers share: Google credentials, project, location and the endpoint URL.

Vertex AI serves every publisher's models under one URL scheme (Vertex AI REST reference,
``projects.locations.publishers.models``)::

    https://{HOST}/{VERSION}/projects/{PROJECT}/locations/{LOCATION}/publishers/{PUBLISHER}/models/{MODEL}:{METHOD}

``HOST`` is ``{LOCATION}-aiplatform.googleapis.com`` for a region (``us-central1``), ``aiplatform.googleapis.com``
for ``global`` and ``aiplatform.{us|eu}.rep.googleapis.com`` for the multi-region locations ``us`` and
``eu`` (Vertex AI docs, "Locations"; both official SDKs pick hosts the same way). A ``base_url``
replaces scheme and host and keeps the rest of the path (a proxy, a Private Service Connect endpoint,
a loopback test server); a ``base_url`` whose path already ends in an API version (``/v1``,
``/v1beta1``) is used as it is, which is the form ``anthropic.AnthropicVertex(base_url=...)`` takes.

Authorisation (Vertex AI docs, "Authenticate to Vertex AI"; google-auth user guide):

* ``credentials=`` a :class:`google.auth.credentials.Credentials`, else ``credentials_file=`` a
  service-account / authorized-user / external-account JSON file, else Application Default
  Credentials (``google.auth.default``: ``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth
  application-default login``, the GCE / Cloud Run metadata server), all with the
  ``cloud-platform`` scope. The access token (an OAuth 2.0 bearer token, about one hour) is kept in a
  :class:`hookstream.plugin.RefreshingToken`, refreshed through ``google.auth.transport.requests``
  when fewer than five minutes are left, once for every thread, never per request, and sent as
  ``Authorization: Bearer``; the credentials' quota project, if any, as ``x-goog-user-project``.
* An explicit ``api_key`` (a Vertex AI API key: express mode, or a key bound to a service account) is
  sent as ``x-goog-api-key`` instead and no Google credentials are looked up.
* With a custom ``base_url`` (not ``*.googleapis.com``) and no credentials anywhere, requests go out
  without authorisation, as the core lets a custom ``base_url`` go without an API key: replays and
  loopback tests need none.

Thread safety: a provider resolves its credentials once, under a lock, on the first call; afterwards
every thread only reads them and asks the shared :class:`RefreshingToken` for the token.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote, urlsplit

import requests

if TYPE_CHECKING:
    # google-auth is imported where credentials are made, not when the plugin registers: every
    # hookstream command loads every provider plugin, and google-auth costs some 60 ms to import.
    import google.auth
    import google.auth.credentials
    import google.auth.transport
from hookstream.errors import ConnectError, MissingCredentialsError
from hookstream.plugin import HTTPRequest, Provider, RefreshingToken, Secret

__all__ = ["CLOUD_PLATFORM_SCOPE", "NO_CREDENTIALS", "VertexBase", "vertex_host"]

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth 2.0 scope Vertex AI needs (what both official SDKs ask ``google.auth.default`` for)."""

NO_CREDENTIALS = (
    "set GOOGLE_APPLICATION_CREDENTIALS to a service-account file, run "
    "`gcloud auth application-default login`, or pass credentials="
)
"""What a :class:`MissingCredentialsError` tells the user to do when no Google credentials exist."""

_MULTI_REGIONS = frozenset({"us", "eu"})
_VERSIONED = re.compile(r"/v1(beta1)?$")
_GOOGLE_HOST = ".googleapis.com"


def vertex_host(location: str) -> str:
    """The Vertex AI host serving ``location``: ``aiplatform.googleapis.com`` for ``global``,
    ``aiplatform.{location}.rep.googleapis.com`` for ``us`` / ``eu``, else
    ``{location}-aiplatform.googleapis.com``."""
    if location == "global":
        return "aiplatform.googleapis.com"
    if location in _MULTI_REGIONS:
        return f"aiplatform.{location}.rep.googleapis.com"
    return f"{location}-aiplatform.googleapis.com"


def _service_account_from_info(info: dict[str, Any], scopes: list[str]) -> google.auth.credentials.Credentials:
    import google.oauth2.service_account

    # google-auth leaves it unannotated; it returns the credentials it builds.
    build: Callable[..., google.auth.credentials.Credentials] = (
        google.oauth2.service_account.Credentials.from_service_account_info)
    return build(info, scopes=scopes)


def _authorized_user_from_info(info: dict[str, Any], scopes: list[str]) -> google.auth.credentials.Credentials:
    import google.oauth2.credentials

    build: Callable[..., google.auth.credentials.Credentials] = (
        google.oauth2.credentials.Credentials.from_authorized_user_info)
    return build(info, scopes=scopes)


def _first_env(names: tuple[str, ...]) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _unix_expiry(credentials: google.auth.credentials.Credentials) -> float | None:
    """The credentials' token expiry as a Unix time in seconds, ``None`` when it has none.

    google-auth keeps ``expiry`` as a *naive* UTC datetime (``google.auth._helpers.utcnow``); an aware
    one is taken as it is, so a future google-auth that switches to aware datetimes still works."""
    expiry = getattr(credentials, "expiry", None)
    if not isinstance(expiry, datetime.datetime):
        return None
    if expiry.tzinfo is None:
        expiry = expiry.replace(tzinfo=datetime.UTC)
    return expiry.timestamp()


class _Auth:
    """The resolved authorisation of one provider: Google credentials (with their token source and
    project), or nothing (an API key or an unauthenticated custom endpoint)."""

    __slots__ = ("credentials", "project", "token")

    def __init__(
        self,
        credentials: google.auth.credentials.Credentials | None,
        project: str | None,
        token: RefreshingToken | None,
    ) -> None:
        self.credentials = credentials
        self.project = project
        self.token = token


class VertexBase(Provider):
    """Credentials, project, location and URL for a Vertex AI publisher model; a concrete provider
    also inherits the publisher's adapter (``class VertexProvider(VertexBase, GeminiProvider)``), whose
    body builder and stream parser it reuses.

    Constructor keywords (``get_model("vertex:MODEL", project=..., ...)``):

    * ``project``: the Google Cloud project id; default :attr:`project_env` (first set), then the
      project of the credentials (``google.auth.default`` / the credentials file).
    * ``location``: the region (``us-central1``), ``global``, ``us`` or ``eu``; default
      :attr:`location_env` (first set), then :attr:`default_location`.
    * ``credentials``: a :class:`google.auth.credentials.Credentials` (refreshed as needed).
    * ``credentials_file``: path of a credentials JSON file (``google.auth.load_credentials_from_file``).
    * ``api_version``: the URL's API version, default :attr:`api_version` (``v1``).

    Raises :class:`TypeError` at construction for ``credentials`` that are not google-auth credentials
    or both ``credentials`` and ``credentials_file``. Missing credentials, project or location surface
    as :class:`~hookstream.errors.MissingCredentialsError` from :meth:`check_api_key`, before anything
    is sent, so a run ends with ``RUN_ERROR missing_credentials`` instead of a traceback.
    """

    default_base_url: ClassVar[str] = "https://aiplatform.googleapis.com"
    api_key_env: ClassVar[tuple[str, ...]] = ()
    # Never read from the environment: GOOGLE_API_KEY usually holds a Gemini API (AI Studio) key, which
    # Vertex AI rejects, and google-genai itself lets GOOGLE_CLOUD_PROJECT win over it.
    distribution: ClassVar[str] = "hookstream-vertex"
    api_version: ClassVar[str] = "v1"
    """The API version in the URL (``v1``: Vertex AI's stable surface; google-genai uses ``v1beta1``)."""
    publisher: ClassVar[str] = ""
    """``google`` or ``anthropic``: the ``publishers/{publisher}`` segment."""
    method: ClassVar[str] = ""
    """The streaming method after the colon, with its query (``streamGenerateContent?alt=sse``)."""
    project_env: ClassVar[tuple[str, ...]] = ("GOOGLE_CLOUD_PROJECT",)
    """Environment variables read, in order, for the project."""
    location_env: ClassVar[tuple[str, ...]] = ("GOOGLE_CLOUD_LOCATION",)
    """Environment variables read, in order, for the location."""
    default_location: ClassVar[str | None] = "global"
    """The location when none is given or set; ``None``: one must be set."""
    express_mode: ClassVar[bool] = False
    """Whether an API key alone addresses the model (Vertex AI express mode: no project, no location,
    ``publishers/...`` directly under the version on ``aiplatform.googleapis.com``)."""
    refresh_margin: ClassVar[float] = 300.0
    """Seconds before expiry at which the access token is refreshed."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
        project: str | None = None,
        location: str | None = None,
        credentials: google.auth.credentials.Credentials | None = None,
        credentials_file: str | os.PathLike[str] | None = None,
        api_version: str | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, session=session)
        if credentials is not None:
            import google.auth.credentials
        if credentials is not None and not isinstance(credentials, google.auth.credentials.Credentials):
            raise TypeError(
                f"credentials must be google.auth.credentials.Credentials, not {type(credentials).__name__}"
            )
        if credentials is not None and credentials_file is not None:
            raise TypeError("pass credentials or credentials_file, not both")
        # An API key with a project given here addresses the project (a key bound to a service
        # account); with a project only from the environment, express mode wins, as in google-genai.
        self._project_given = bool(project)
        self.project = project or _first_env(self.project_env)
        """The project id given or from the environment; when ``None``, the credentials' project (known
        after the first call) is used."""
        self.location = location or _first_env(self.location_env) or self.default_location
        """The location given, from the environment or the default; ``None`` when there is none."""
        self.url_version = api_version or type(self).api_version
        """The API version this provider puts in its URLs."""
        self._credentials = credentials
        self._credentials_file = os.fspath(credentials_file) if credentials_file is not None else None
        # Whether requests go to Google (then credentials, project and location are required) or to a
        # proxy / test server (then any of them may be missing), decided the way google-genai does.
        self._custom_base_url = base_url is not None and not (urlsplit(self.base_url).hostname or "").endswith(
            _GOOGLE_HOST
        )
        if base_url is None:
            host = vertex_host("global" if self._express() or not self.location else self.location)
            self.base_url = f"https://{host}"
        self._auth: _Auth | None = None
        self._auth_lock = threading.Lock()

    # -- credentials --------------------------------------------------------------------------------

    def _express(self) -> bool:
        return self.express_mode and bool(self.api_key) and not self._project_given

    def check_api_key(self) -> None:
        """Resolve credentials (once) and check project and location; called before each request.

        Raises :class:`~hookstream.errors.MissingCredentialsError` naming what to set when no Google
        credentials exist (and the endpoint is Google's), when ``credentials_file`` cannot be loaded,
        or when the project or location is unknown."""
        auth = self._resolve_auth()
        if self._custom_base_url or self._express():
            return  # a proxy's path may omit project and location; express mode has none
        if not (self.project or auth.project):
            raise MissingCredentialsError(
                self.name, "set GOOGLE_CLOUD_PROJECT" + self._also(self.project_env) + " or pass project="
            )
        if not self.location:
            raise MissingCredentialsError(
                self.name, "set " + " or ".join(self.location_env) + " (e.g. global, us-east5) or pass location="
            )

    @staticmethod
    def _also(names: tuple[str, ...]) -> str:
        others = [n for n in names if n != "GOOGLE_CLOUD_PROJECT"]
        return "".join(f" or {n}" for n in others)

    def _resolve_auth(self) -> _Auth:
        auth = self._auth
        if auth is not None:
            return auth
        with self._auth_lock:
            if self._auth is None:
                self._auth = self._load_auth()
            return self._auth

    def _load_auth(self) -> _Auth:
        """Find the credentials (nothing is cached when this raises, so fixing the environment helps
        the next call)."""
        if self._credentials is not None:
            return self._with_token(self._credentials, getattr(self._credentials, "project_id", None))
        if self._credentials_file is not None:
            creds, project = self._load_file(self._credentials_file)
            return self._with_token(creds, project)
        if self.api_key:
            return _Auth(None, None, None)
        import google.auth
        import google.auth.exceptions

        try:
            creds, project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        except google.auth.exceptions.DefaultCredentialsError:
            if self._custom_base_url:
                return _Auth(None, None, None)
            raise MissingCredentialsError(self.name, NO_CREDENTIALS) from None
        return self._with_token(creds, project)

    def _load_file(self, path: str) -> tuple[google.auth.credentials.Credentials, str | None]:
        """Credentials from a JSON file of type ``service_account`` (its ``project_id`` is the project)
        or ``authorized_user`` (``gcloud auth application-default login`` writes one), loaded with the
        type-specific loaders google-auth recommends over the deprecated generic
        ``load_credentials_from_file``. Other types (workload identity federation's
        ``external_account``, ``impersonated_service_account``) are for Application Default
        Credentials, which load every type: point ``GOOGLE_APPLICATION_CREDENTIALS`` at the file.

        Raises :class:`MissingCredentialsError` saying what is wrong with the file (never its content)."""
        try:
            with open(path, encoding="utf-8") as f:
                info = json.load(f)
        except (OSError, ValueError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) else "it is not JSON"
            raise MissingCredentialsError(
                self.name, f"credentials_file {path} could not be loaded: {problem}"
            ) from None
        kind = info.get("type") if isinstance(info, dict) else None
        try:
            if kind == "service_account":
                project = info.get("project_id")
                return _service_account_from_info(info, scopes=[CLOUD_PLATFORM_SCOPE]), project
            if kind == "authorized_user":
                return _authorized_user_from_info(info, scopes=[CLOUD_PLATFORM_SCOPE]), None
        except (ValueError, KeyError) as exc:
            raise MissingCredentialsError(
                self.name, f"credentials_file {path} is not a valid {kind} file: {exc}"
            ) from None
        raise MissingCredentialsError(
            self.name,
            f"credentials_file {path} has type {kind!r}; for service_account and authorized_user files pass "
            "credentials_file=, for other types set GOOGLE_APPLICATION_CREDENTIALS to the file",
        )

    def _with_token(self, creds: google.auth.credentials.Credentials, project: Any) -> _Auth:
        def fetch() -> tuple[str, float | None]:
            return self._fetch_token(creds)

        token = RefreshingToken(fetch, refresh_margin=self.refresh_margin)
        return _Auth(creds, project if isinstance(project, str) and project else None, token)

    def _fetch_token(self, creds: google.auth.credentials.Credentials) -> tuple[str, float | None]:
        """``(token, expiry as Unix seconds)`` for :class:`RefreshingToken`: the credentials' current
        token while it has more than :attr:`refresh_margin` seconds left (credentials made from a
        token, or minted moments ago by ``google.auth.default``), else a freshly refreshed one.

        Raises :class:`MissingCredentialsError` when Google refuses the refresh (revoked grant,
        reauthentication needed) and :class:`~hookstream.errors.ConnectError` when its token endpoint
        cannot be reached."""
        expires_at = _unix_expiry(creds)
        if creds.token and (expires_at is None or expires_at - time.time() > self.refresh_margin):
            return str(creds.token), expires_at
        import google.auth.exceptions
        import google.auth.transport.requests

        try:
            refresh: Callable[[google.auth.transport.Request], None] = creds.refresh  # untyped in google-auth
            refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.TransportError as exc:
            raise ConnectError(f"could not reach Google's token endpoint: {exc}") from None
        except google.auth.exceptions.GoogleAuthError as exc:
            raise MissingCredentialsError(
                self.name, f"the Google credentials could not be refreshed ({exc}); " + NO_CREDENTIALS
            ) from None
        if not creds.token:
            raise MissingCredentialsError(self.name, "the Google credentials gave no access token; " + NO_CREDENTIALS)
        return str(creds.token), _unix_expiry(creds)

    def sign(self, request: HTTPRequest, body: bytes) -> None:
        """Add ``Authorization: Bearer TOKEN`` (and ``x-goog-user-project`` for credentials with a quota
        project) to ``request``, with the cached token, refreshed first when it is about to expire.
        Called by the core once per attempt, so a retry an hour later still carries a valid token."""
        auth = self._resolve_auth()
        if auth.token is None or auth.credentials is None:
            return
        request.headers["Authorization"] = f"Bearer {auth.token.get().reveal()}"
        quota = getattr(auth.credentials, "quota_project_id", None)
        if isinstance(quota, str) and quota:
            request.headers["x-goog-user-project"] = quota

    def redact(self, text: str) -> str:
        """``text`` with the API key and the current access token masked as ``***``."""
        text = super().redact(text)
        auth = self._auth
        if auth is not None and auth.token is not None:
            text = auth.token.redact(text)
        return text

    @property
    def token_fetches(self) -> int:
        """How many access tokens were fetched or refreshed so far (0 before the first call)."""
        auth = self._auth
        return auth.token.fetches if auth is not None and auth.token is not None else 0

    # -- URL ----------------------------------------------------------------------------------------

    def model_url(self, model: str) -> str:
        """The streaming URL for ``model`` (see the module docstring).

        ``model`` is a model id (``gemini-2.5-flash``, ``claude-sonnet-4-5@20250929``), optionally
        ``models/ID`` or ``publishers/P/models/ID``; a full resource name (``projects/.../endpoints/ID``
        for a tuned model) is used as it is."""
        if model.startswith("models/"):
            model = model[len("models/"):]
        root = self.base_url if _VERSIONED.search(self.base_url) else f"{self.base_url}/{self.url_version}"
        if model.startswith("projects/"):
            return f"{root}/{quote(model, safe='/-._~@')}:{self.method}"
        if not model.startswith("publishers/"):
            model = f"publishers/{self.publisher}/models/{quote(model, safe='-._~@')}"
        project = self.project or (self._auth.project if self._auth is not None else None)
        if self._express() or not (project and self.location):
            # Express mode, or a proxy without project/location: google-genai sends the same path.
            return f"{root}/{model}:{self.method}"
        prefix = f"projects/{quote(project, safe='-._~')}/locations/{quote(self.location, safe='-._~')}"
        return f"{root}/{prefix}/{model}:{self.method}"

    def auth_headers(self) -> dict[str, str]:
        """``x-goog-api-key`` when an API key was given (the bearer token is added by :meth:`sign`)."""
        return {"x-goog-api-key": self.api_key.reveal()} if self.api_key else {}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, project={self.project!r}, "
            f"location={self.location!r}, base_url={self.base_url!r})"
        )
