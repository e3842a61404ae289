"""The stream processor (``processor``): UI messages (``ui``) from events, chunk strategies
(``strategies``), incremental JSON (``partial_json``), text parsers (``stream_parser``), and
conversion between UI and model messages (``convert``)."""
