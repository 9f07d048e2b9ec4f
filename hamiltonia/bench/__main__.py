"""``python -m hamiltonia.bench``."""

import sys

from hamiltonia.bench import main

sys.exit(main())
