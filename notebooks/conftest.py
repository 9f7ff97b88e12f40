"""pytest settings for ``pytest --nbval-lax --nbval-current-env notebooks`` (not a lesson).

nbval starts one kernel per notebook and the kernels inherit this process's environment: point
them at a fresh temporary data directory, so test runs never touch your own cases in
~/.local/share/bureau, and remove it at the end.
"""

import os
import shutil
import tempfile

_DATA = tempfile.mkdtemp(prefix="bureau-nbval-")
os.environ["BUREAU_DATA_DIR"] = _DATA
os.environ.pop("BUREAU_SEEKDB_HOST", None)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_DATA, ignore_errors=True)
