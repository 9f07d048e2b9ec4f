"""``python -m hamiltonia.cli`` (see :func:`hamiltonia.cli.main`)."""

import sys

from hamiltonia.cli import main

sys.exit(main())
