"""``python -m sim.cli``."""

import sys

from . import main

sys.exit(main())
