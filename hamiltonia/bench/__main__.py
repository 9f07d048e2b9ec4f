"""``python -m hamiltonia.bench`` (see :func:`hamiltonia.bench.core.main`)."""

import sys

from hamiltonia.bench import main

sys.exit(main())
