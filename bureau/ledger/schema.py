"""The ledger's tables: their DDL for SQLite and for a seekdb/OceanBase server, in one place.

The backends create them (``create_schema`` of :mod:`bureau.ledger.sqlite` and
:mod:`bureau.ledger.server`); each store (:mod:`bureau.ledger.cases`, ...) reads and writes its
own. On the server the names carry the ``bureau_`` prefix (``{p}``): they share a database with
PowerMem's card table.

Which store owns which table:

* :class:`~bureau.ledger.cases.CaseStore`: ``cases``, ``retired_spaces``;
* :class:`~bureau.ledger.events.EventStore`: ``events``;
* :class:`~bureau.ledger.publishes.PublishStore`: ``publications``, ``cleanup_tasks``;
* :class:`~bureau.ledger.mediation.MediationStore`: ``card_limits``, ``grants``, ``budget``,
  ``audit``, ``audit_head``;
* :class:`~bureau.ledger.runs.RunStore`: ``runs``;
* :class:`~bureau.ledger.task_scopes.TaskScopeStore`: :data:`TASK_SCOPE_TABLES`;
* :class:`~bureau.ledger.server.SnapshotStore` (server only): ``snapshots``.
"""

from __future__ import annotations

TASK_SCOPE_TABLES = ("task_scopes", "task_scope_members", "task_scope_writes", "task_scope_keys",
                     "task_scope_inbox")
"""Shared task scopes (issue 14): one row per scope; per (scope, role) ever invited; every write,
stale ones too; per key, the winning write and the card that shows it; inbox notices."""

ADDED_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("cases", "token", "TEXT", "VARCHAR(32)"),
    ("card_limits", "mac", "TEXT", "CHAR(64)"),
    ("grants", "mac", "TEXT", "CHAR(64)"),
    ("budget", "mac", "TEXT", "CHAR(64)"),
    ("audit", "seal", "TEXT", "VARCHAR(512)"),
)
"""Columns newer than some ledgers on disk: ``(table, column, SQLite type, server type)``, added
when such a ledger is opened (case tokens; the keyed audit's row MACs and state seals, issue 19
§3). The tables' DDL below already has them."""

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
  case_id TEXT PRIMARY KEY, scenario_id TEXT NOT NULL, title TEXT NOT NULL,
  created_at TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT 0, token TEXT
);
CREATE TABLE IF NOT EXISTS retired_spaces (
  store_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, retired_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, case_id TEXT NOT NULL, type TEXT NOT NULL,
  payload TEXT NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_case ON events(case_id, seq);
CREATE TABLE IF NOT EXISTS publications (
  case_id TEXT NOT NULL, source_id TEXT NOT NULL, source_role TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
  copy_id TEXT, attempts INTEGER NOT NULL DEFAULT 1,
  owner TEXT NOT NULL, lease_until REAL NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL, error TEXT,
  PRIMARY KEY (case_id, source_id)
);
CREATE TABLE IF NOT EXISTS cleanup_tasks (
  case_id TEXT NOT NULL, card_id TEXT NOT NULL, owner_role TEXT NOT NULL,
  reason TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL,
  PRIMARY KEY (case_id, card_id)
);
CREATE TABLE IF NOT EXISTS card_limits (
  case_id TEXT NOT NULL, card_id TEXT NOT NULL, owner TEXT NOT NULL,
  expires_at REAL, revoked_at REAL, reason TEXT, mac TEXT,
  PRIMARY KEY (case_id, card_id)
);
CREATE TABLE IF NOT EXISTS grants (
  grant_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, card_id TEXT NOT NULL,
  requester TEXT, recipient TEXT, purpose TEXT, action TEXT NOT NULL,
  created_at REAL NOT NULL, expires_at REAL, revoked_at REAL, mac TEXT
);
CREATE INDEX IF NOT EXISTS grants_case ON grants(case_id, card_id);
CREATE TABLE IF NOT EXISTS budget (
  case_id TEXT NOT NULL, requester TEXT NOT NULL, owner TEXT NOT NULL, spent REAL NOT NULL,
  mac TEXT, PRIMARY KEY (case_id, requester, owner)
);
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER PRIMARY KEY, case_id TEXT NOT NULL, token TEXT, kind TEXT NOT NULL,
  action TEXT, entry TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, seal TEXT
);
CREATE INDEX IF NOT EXISTS audit_case ON audit(case_id, seq);
CREATE TABLE IF NOT EXISTS audit_head (
  id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, token TEXT, role TEXT NOT NULL,
  owner TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL
);
CREATE INDEX IF NOT EXISTS runs_case ON runs(case_id, role);
CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
"""

TASK_SCOPE_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_scopes (
  case_id TEXT NOT NULL, scope_name TEXT NOT NULL, owner TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('active', 'archived', 'deleted')),
  created_by TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  PRIMARY KEY (case_id, scope_name)
);
CREATE TABLE IF NOT EXISTS task_scope_members (
  case_id TEXT NOT NULL, scope_name TEXT NOT NULL, member TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('invited', 'member', 'removed', 'declined')),
  invited_by TEXT, updated_at REAL NOT NULL,
  PRIMARY KEY (case_id, scope_name, member)
);
CREATE INDEX IF NOT EXISTS task_scope_members_role ON task_scope_members(case_id, member);
CREATE TABLE IF NOT EXISTS task_scope_writes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, case_id TEXT NOT NULL, scope_name TEXT NOT NULL,
  skey TEXT NOT NULL, ver INTEGER NOT NULL, read_ver INTEGER, writer TEXT NOT NULL,
  written_at REAL NOT NULL, card_id TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('won', 'stale'))
);
CREATE INDEX IF NOT EXISTS task_scope_writes_key ON task_scope_writes(case_id, scope_name, skey);
CREATE TABLE IF NOT EXISTS task_scope_keys (
  case_id TEXT NOT NULL, scope_name TEXT NOT NULL, skey TEXT NOT NULL,
  win_seq INTEGER NOT NULL, shown_seq INTEGER, shown_card TEXT,
  PRIMARY KEY (case_id, scope_name, skey)
);
CREATE TABLE IF NOT EXISTS task_scope_inbox (
  case_id TEXT NOT NULL, member TEXT NOT NULL, pos INTEGER NOT NULL, kind TEXT NOT NULL,
  scope_name TEXT NOT NULL, payload TEXT NOT NULL, at REAL NOT NULL,
  PRIMARY KEY (case_id, member, pos)
);
"""
"""SQLite DDL of the task-scope tables (part of :data:`SQLITE_SCHEMA`)."""
SQLITE_SCHEMA += TASK_SCOPE_SCHEMA

SERVER_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {p}cases (
      case_id VARCHAR(128) NOT NULL PRIMARY KEY, scenario_id VARCHAR(128) NOT NULL,
      title VARCHAR(512) NOT NULL, created_at VARCHAR(32) NOT NULL, epoch INT NOT NULL DEFAULT 0,
      token VARCHAR(32)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}snapshots (
      case_id VARCHAR(128) NOT NULL PRIMARY KEY, token VARCHAR(32), body LONGTEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}retired_spaces (
      store_id VARCHAR(128) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      retired_at DOUBLE NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}events (
      seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      type VARCHAR(64) NOT NULL, payload LONGTEXT NOT NULL, at VARCHAR(32) NOT NULL,
      KEY {p}events_case (case_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}publications (
      case_id VARCHAR(128) NOT NULL, source_id VARCHAR(64) NOT NULL,
      source_role VARCHAR(128) NOT NULL, status VARCHAR(8) NOT NULL, copy_id VARCHAR(64),
      attempts INT NOT NULL DEFAULT 1, owner VARCHAR(255) NOT NULL, lease_until DOUBLE NOT NULL,
      created_at DOUBLE NOT NULL, updated_at DOUBLE NOT NULL, error VARCHAR(500),
      PRIMARY KEY (case_id, source_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}cleanup_tasks (
      case_id VARCHAR(128) NOT NULL, card_id VARCHAR(64) NOT NULL,
      owner_role VARCHAR(128) NOT NULL, reason VARCHAR(255) NOT NULL,
      attempts INT NOT NULL DEFAULT 0, created_at DOUBLE NOT NULL,
      PRIMARY KEY (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}card_limits (
      case_id VARCHAR(128) NOT NULL, card_id VARCHAR(64) NOT NULL, owner VARCHAR(128) NOT NULL,
      expires_at DOUBLE, revoked_at DOUBLE, reason VARCHAR(255), mac CHAR(64),
      PRIMARY KEY (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}grants (
      grant_id VARCHAR(64) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      card_id VARCHAR(64) NOT NULL, requester VARCHAR(128), recipient VARCHAR(32),
      purpose VARCHAR(128), action VARCHAR(16) NOT NULL, created_at DOUBLE NOT NULL,
      expires_at DOUBLE, revoked_at DOUBLE, mac CHAR(64), KEY {p}grants_case (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}budget (
      case_id VARCHAR(128) NOT NULL, requester VARCHAR(128) NOT NULL,
      owner VARCHAR(128) NOT NULL, spent DOUBLE NOT NULL, mac CHAR(64),
      PRIMARY KEY (case_id, requester, owner)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}audit (
      seq BIGINT NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL, token VARCHAR(32),
      kind VARCHAR(32) NOT NULL, action VARCHAR(32), entry LONGTEXT NOT NULL,
      prev_hash CHAR(64) NOT NULL, hash CHAR(64) NOT NULL, seal VARCHAR(512),
      KEY {p}audit_case (case_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}runs (
      run_id VARCHAR(32) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      token VARCHAR(32), role VARCHAR(64) NOT NULL, owner VARCHAR(255) NOT NULL,
      started_at DOUBLE NOT NULL, ended_at DOUBLE, KEY {p}runs_case (case_id, role)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}audit_head (
      id INT NOT NULL PRIMARY KEY, seq BIGINT NOT NULL, hash CHAR(64) NOT NULL
    )""",
)

TASK_SCOPE_SERVER_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {p}task_scopes (
      case_id VARCHAR(128) NOT NULL, scope_name VARCHAR(32) NOT NULL, owner VARCHAR(32) NOT NULL,
      state VARCHAR(8) NOT NULL, created_by VARCHAR(32) NOT NULL, created_at DOUBLE NOT NULL,
      updated_at DOUBLE NOT NULL, PRIMARY KEY (case_id, scope_name)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}task_scope_members (
      case_id VARCHAR(128) NOT NULL, scope_name VARCHAR(32) NOT NULL, member VARCHAR(32) NOT NULL,
      state VARCHAR(8) NOT NULL, invited_by VARCHAR(32), updated_at DOUBLE NOT NULL,
      PRIMARY KEY (case_id, scope_name, member), KEY {p}task_scope_members_role (case_id, member)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}task_scope_writes (
      seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      scope_name VARCHAR(32) NOT NULL, skey VARCHAR(32) NOT NULL, ver BIGINT NOT NULL,
      read_ver BIGINT, writer VARCHAR(32) NOT NULL, written_at DOUBLE NOT NULL,
      card_id VARCHAR(64) NOT NULL, outcome VARCHAR(8) NOT NULL,
      KEY {p}task_scope_writes_key (case_id, scope_name, skey)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}task_scope_keys (
      case_id VARCHAR(128) NOT NULL, scope_name VARCHAR(32) NOT NULL, skey VARCHAR(32) NOT NULL,
      win_seq BIGINT NOT NULL, shown_seq BIGINT, shown_card VARCHAR(64),
      PRIMARY KEY (case_id, scope_name, skey)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}task_scope_inbox (
      case_id VARCHAR(128) NOT NULL, member VARCHAR(32) NOT NULL, pos BIGINT NOT NULL,
      kind VARCHAR(32) NOT NULL, scope_name VARCHAR(32) NOT NULL, payload TEXT NOT NULL,
      at DOUBLE NOT NULL, PRIMARY KEY (case_id, member, pos)
    )""",
)
"""The task-scope tables on a server (part of :data:`SERVER_SCHEMA`)."""
SERVER_SCHEMA += TASK_SCOPE_SERVER_SCHEMA
