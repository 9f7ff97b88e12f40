"""``python -m bureau.labs.poisoning``: the same command as ``python -m bureau poisoning``."""

import sys

from bureau.labs.poisoning.cli import main

if __name__ == "__main__":
    sys.exit(main())
