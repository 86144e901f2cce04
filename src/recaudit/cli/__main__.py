"""``python -m recaudit.cli``: the same command line as the ``recaudit`` script."""

from . import main

main()
