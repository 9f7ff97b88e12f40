"""The forgetting lab's files (``forgetting.json``, ``.csv``, ``.md`` and ``.png``) and the table
in docs/sealing.md, which is written from the lab's rows, never typed: ``python -m bureau
forgetting --docs docs/sealing.md`` (after a run, or ``--from DIR/forgetting.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BEGIN = "<!-- forgetting-lab: begin"
END = "<!-- forgetting-lab: end -->"
"""The markers around the table in a page (the text between them is rewritten)."""


def write_outputs(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Write what :func:`~bureau.labs.forgetting.lab.run_lab` returned; returns the folder."""
    from .lab import write

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write(out, rows)
    return out


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``forgetting.json`` the lab wrote."""
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path} is not the forgetting lab's JSON.")
    return rows


def docs_block(rows: list[dict[str, Any]]) -> str:
    """What goes between the markers: the lab's own table."""
    from .lab import format_table

    return format_table(rows) + "\n"


def update_docs(page: str | Path, rows: list[dict[str, Any]],
                rows_file: str | Path | None = None) -> None:
    """Rewrite the table between the markers in ``page`` from ``rows``; ``rows_file``: also
    keep the rows beside the page as JSON (what the docs' test compares the table with)."""
    page = Path(page)
    text = page.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{page} has no forgetting-lab markers ({BEGIN} ... {END}).")
    head = text.index("-->", start) + 3
    page.write_text(text[:head] + "\n" + docs_block(rows) + text[end:], encoding="utf-8")
    if rows_file is not None:
        Path(rows_file).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def table_in(page: str | Path) -> str:
    """The text between the markers of ``page`` (for the check that it is the lab's)."""
    text = Path(page).read_text(encoding="utf-8")
    head = text.index("-->", text.index(BEGIN)) + 3
    return text[head:text.index(END)].lstrip("\n")


__all__ = ["docs_block", "read_rows", "table_in", "update_docs", "write_outputs"]
