"""pytest settings for ``pytest --nbval-lax --nbval-current-env notebooks`` (not a lesson).

nbval starts one kernel per notebook and the kernels inherit this process's environment: point
them at a fresh temporary data directory, so test runs never touch your own cases in
~/.local/share/bureau, and remove it at the end. ``BUREAU_NBVAL_DATA_DIR`` names one to use
instead, and keep (``tests/test_lessons_twice.py``: a lesson's second run in the data directory
its first run used).
"""

import os
import shutil
import tempfile

_GIVEN = os.environ.get("BUREAU_NBVAL_DATA_DIR")
_DATA = _GIVEN or tempfile.mkdtemp(prefix="bureau-nbval-")
os.environ["BUREAU_DATA_DIR"] = _DATA
os.environ.pop("BUREAU_SEEKDB_HOST", None)


def pytest_sessionfinish(session, exitstatus):
    if not _GIVEN:
        shutil.rmtree(_DATA, ignore_errors=True)
