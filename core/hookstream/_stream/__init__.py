"""The stream and transport, and one model call: HTTP with requests (``transport``), framings
(``framing``: SSE, NDJSON, plugins' binary ones), retries (``retry``), refreshing tokens
(``credentials``), the loopback server (``loopback``); the provider contract (``provider``) and
its grammar helper (``builder``); one model call (``call``), its aggregate (``accumulate``) and
fallback across models (``fallback``)."""
