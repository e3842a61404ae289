"""``python -m hookstream.cli``: the same as the ``hookstream`` command."""

from . import main

main()
