"""``python -m sim.cli``."""

import os
import sys

from . import main

code = main()
# The command has written its files and closed the firmware's process: what is left is
# the interpreter's teardown, which frees every array and module one by one (35-70 ms
# after a ResNet-50, a tenth of the run).  The process ends here instead, its output
# flushed first.  (An exception, or argparse's exit, takes the ordinary way out.)
try:
    sys.stdout.flush()
    sys.stderr.flush()
except (OSError, ValueError):  # a closed or broken stream: nothing more can be said
    pass
if "logging" in sys.modules:
    sys.modules["logging"].shutdown()  # what the interpreter's exit would flush
os._exit(code if isinstance(code, int) else (0 if code is None else 1))
