"""Conversation stores: the protocol and the in-memory store (``memory``), SQLite and PostgreSQL
(``sql``), messages as JSON (``codec``), and how much of a stored conversation a run sends
(``history``)."""
