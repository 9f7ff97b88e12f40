"""``python -m bureau.labs.leakage``: the same as ``python -m bureau leakage``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
