"""Where hookstream keeps a user's files: ``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory
(``~/.local/share/hookstream`` on Linux, ``~/Library/Application Support/hookstream`` on macOS).

Below the rest of the core so that both the CLI (``hookstream logs``) and :func:`hookstream.get_model`
(model aliases) can read it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["USER_DIR_ENV", "user_dir"]

USER_DIR_ENV = "HOOKSTREAM_USER_DIR"


def user_dir() -> Path:
    """Where hookstream keeps its files: ``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory."""
    env = os.environ.get(USER_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("hookstream", appauthor=False))
