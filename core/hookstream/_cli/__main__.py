"""``python -m hookstream._cli``: the same as the ``hookstream`` command (``python -m hookstream`` too)."""

from . import main

main()
