"""A learner's connection file: where their tenant lives and how to log in to it.

One small JSON file per learner, written by the instructor's ``python -m bureau classroom add``
and handed to that learner alone. It holds a password, so it is owner-only (0600) when written
and refused when anyone else may read it (a file copied with loose permissions would let every
account on a shared machine log in as that learner). Nothing here opens a socket: the file is
read into plain fields that :class:`bureau.settings.Settings` turns into server settings
(this module sits on the vocabulary floor, beside the settings that read it).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ClassroomError

FORMAT = "bureau-classroom-connection/1"
HOST = re.compile(r"(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                  r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?|\[?[0-9A-Fa-f:]+:[0-9A-Fa-f:.]*\]?")
"""A host name, an IPv4 address or an IPv6 one: anything else (a path, a URL, a label the
resolver's codec refuses) is refused here, typed, before a socket is opened."""
MAX_BYTES = 4096
"""A connection file is a few hundred bytes; anything larger is not one."""
LEARNER = re.compile(r"[a-z][a-z0-9_]{0,23}")
"""A learner's name: it becomes the account and database name (``learner_<name>``), so a plain
lower-case identifier, short enough for the server's 32-character user names."""


def check_learner(name: object) -> str:
    if not isinstance(name, str) or not LEARNER.fullmatch(name):
        raise ClassroomError(
            f"{name!r} is not a learner name.",
            "Use 1-24 lower-case letters, digits or underscores, starting with a letter "
            "(it becomes the learner's account and database name).")
    return name


def tenant_name(learner: str) -> str:
    """The account and the database of a learner (one name for both)."""
    return f"learner_{check_learner(learner)}"


@dataclass(frozen=True)
class TenantConnection:
    """What a connection file says. The password stays out of ``repr``."""

    learner: str
    host: str
    port: int
    user: str
    database: str
    password: str = field(repr=False)

    def as_json(self) -> str:
        return json.dumps({"format": FORMAT, "learner": self.learner, "host": self.host,
                           "port": self.port, "user": self.user, "database": self.database,
                           "password": self.password}, indent=2) + "\n"


def _refuse(path: Path, what: str, hint: str | None = None) -> ClassroomError:
    return ClassroomError(f"The classroom connection file {path} {what}.",
                          hint or "Ask the instructor for your connection file again.")


def read_connection(path: str | os.PathLike[str]) -> TenantConnection:
    """Read and check a connection file; every refusal names the file, never its password."""
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    try:
        st = path.stat()
    except OSError:
        raise _refuse(path, "does not exist",
                      "Set BUREAU_CLASSROOM to the file the instructor gave you.") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "is not a file")
    if st.st_mode & 0o077:
        raise _refuse(path, f"may be read by others (mode {stat.S_IMODE(st.st_mode):o})",
                      f"It holds your password: run `chmod 600 {path}`.")
    if st.st_size > MAX_BYTES:
        raise _refuse(path, "is too large to be a connection file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise _refuse(path, "is not valid JSON") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _refuse(path, f"is not a classroom connection file (format {FORMAT!r})")
    try:
        learner = check_learner(data.get("learner"))
        user, database = data.get("user"), data.get("database")
        host, port, password = data.get("host"), data.get("port"), data.get("password")
        if user != tenant_name(learner) or database != user:
            raise _refuse(path, "names an account that is not its learner's")
        if not isinstance(host, str) or not HOST.fullmatch(host):
            raise _refuse(path, "has no valid host")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise _refuse(path, "has no valid port")
        if not isinstance(password, str) or not password:
            raise _refuse(path, "has no password")
    except ClassroomError as exc:
        if str(path) in exc.message:
            raise
        raise _refuse(path, "names no valid learner") from None
    return TenantConnection(learner, host, port, user, database, password)


__all__ = ["FORMAT", "TenantConnection", "check_learner", "read_connection", "tenant_name"]


def where_memory_lives(classroom: str | os.PathLike[str] | None) -> str:
    """One sentence for lesson 00: the learner's own tenant, or their own embedded store.

    Names the learner, the database and the server's address, never the password or the
    connection file's path (a notebook's output may be projected or shared).
    """
    if classroom is None:
        return ("your own embedded store, in this machine's data directory "
                "(no classroom connection file is set)")
    conn = read_connection(classroom)
    return (f"your tenant on the classroom server {conn.host}:{conn.port}: database "
            f"{conn.database}, readable only by the account {conn.user} (learner {conn.learner})")
