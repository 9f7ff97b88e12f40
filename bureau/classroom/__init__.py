"""A classroom on one server: every learner a tenant the database engine itself isolates.

The instructor runs ``python -m bureau classroom start|add|reset|remove|status|teardown``
(:mod:`bureau.classroom.tenants`); each learner gets a connection file and joins with
``BUREAU_CLASSROOM=<file>`` (then ``Bureau.open()`` uses their tenant) or :func:`join`.
``instructor`` is the instructor's page (progress and outward stage counts per learner), and
``loadtest`` a simulated workshop.

Kept import-light on purpose: :mod:`bureau.settings` reads connection files through
:mod:`bureau.tenancy.connection`, so this package must not pull the service in at import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..service.bureau import Bureau


def join(connection_file: str | os.PathLike[str] | None = None, **overrides: Any) -> Bureau:
    """Open the bureau in this learner's tenant (the file, else ``$BUREAU_CLASSROOM``).

    Raises :class:`~bureau.errors.TenantAccessError` when the account cannot log in (a wrong
    password, a removed learner) and :class:`~bureau.errors.ClassroomError` for a missing,
    loose or foreign connection file; both before anything opens.
    """
    from ..errors import ClassroomError
    from ..service.bureau import Bureau
    from ..settings import Settings

    path = connection_file or os.environ.get("BUREAU_CLASSROOM")
    if not path:
        raise ClassroomError("No classroom connection file given.",
                             "Pass the file the instructor gave you, or set BUREAU_CLASSROOM.")
    return Bureau.open(settings=Settings.from_env(classroom=Path(path), **overrides))


__all__ = ["join"]
