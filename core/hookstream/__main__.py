"""``python -m hookstream``: the same as the ``hookstream`` command."""

from ._cli import main

main()
