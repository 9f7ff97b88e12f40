"""Reading a small data file (YAML or JSON) defensively: scenarios and policies.

A scenario or a policy is something a teacher downloads and opens in a notebook, so reading it is
an attack surface. Bad input must cost little: the file size is capped before anything is read,
and while parsing, the nesting depth, the number of values (counted *after* YAML aliases are
expanded, which defeats "billion laughs" files: a few hundred bytes whose aliases expand to
billions of strings) and the total text are capped too, so a hostile file is refused in
milliseconds, never with a ``RecursionError``, a ``MemoryError`` or an exhausted machine. Duplicate
mapping keys are refused as well: YAML and JSON readers silently keep the last one, so
``default: withhold`` followed by ``default: reveal`` would quietly mean *reveal*.

The caps and the words of the messages come from a :class:`Limits` (one per kind of file), and
errors are raised as the caller's own typed error through a ``fail(message, hint)`` callable, so a
scenario still raises ``ScenarioError`` and a policy ``PolicyError``. Every message names the file
(``shown``, as the caller displays it) and is cut short whatever the input holds.

:func:`shape_problem` applies the same caps to data that never was a file (a dict from a
notebook or a JSON snapshot), before pydantic recurses into it.
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import BureauError
from .text import short_repr

Fail = Callable[[str, str | None], BureauError]
"""Builds the caller's error from a message (starting with the file) and a hint (or ``None``)."""

MAX_PATH_CHARS = 200
"""Paths in messages are cut to their last characters (the file name is the useful part)."""

PLAIN_SCALARS = frozenset(
    {str, bytes, int, float, bool, type(None), datetime.date, datetime.datetime}
)
"""Exactly the types YAML's safe loader and JSON produce (no subclasses: their ``__eq__`` and
``__hash__`` could run anything while pydantic compares them)."""
_CONTAINERS = frozenset({dict, list, tuple, set, frozenset})


@dataclass(frozen=True)
class Limits:
    """The caps for one kind of data file, and the words its messages use."""

    noun: str
    """What the file is, in messages: ``"scenario"`` gives "is a directory, not a scenario file"."""
    max_bytes: int
    """File size, checked before the file is read."""
    max_depth: int
    """Nesting levels, counting the top-level mapping as 1."""
    max_values: int
    """Values (texts, numbers, lists, mappings) in all, with every YAML alias expanded."""
    max_text_chars: int
    """Characters of text in all, with every YAML alias expanded."""
    max_number_chars: int
    """Longer numbers are refused (converting a huge integer costs time quadratic in its length)."""
    depth_needed: str
    """Said after the depth cap: ``"a scenario needs 5"``."""
    values_needed: str
    """Said after the value cap: ``"a scenario needs a few hundred"``."""
    size_hint: str
    """The hint of every "too big" error."""
    at: str = "line {line}, column {column}: "
    """Where a parse error is, from 1-based ``line`` and ``column``."""
    invalid: str = "invalid"
    """``"invalid"`` gives "invalid YAML: ..." and "invalid JSON: ..."."""
    missing: str = "no such file"
    """The message for a path that names no file."""

    def where(self, line: int, column: int) -> str:
        return self.at.format(line=line, column=column)

    @property
    def nested(self) -> str:
        return f"nested more than {self.max_depth} levels deep ({self.depth_needed})"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters: parser messages can quote tags, anchors and keys."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_path(text: str) -> str:
    """A path for a message, keeping its end (the file name) when it is absurdly long."""
    return text if len(text) <= MAX_PATH_CHARS else "…" + text[-(MAX_PATH_CHARS - 1) :]


def field_path(loc: tuple[Any, ...]) -> str:
    """``questions[0].knowers_before[1]``, each part cut short (keys can be any text)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{short_repr(part, 24)}]"
        else:
            name = clip(part if isinstance(part, str) else short_repr(part, 40), 40)
            out += f".{name}" if out else name
    return clip(out, 200)


# --- YAML ----------------------------------------------------------------------------------------


class _TooBig(yaml.MarkedYAMLError):
    """Well-formed YAML that is deeper or bigger than the limits allow."""


class _Loader(yaml.SafeLoader):
    """SafeLoader (no code runs) that refuses what no data file needs and what costs too much.

    * duplicate mapping keys (PyYAML silently keeps the last one);
    * lists or mappings as mapping keys (``? [a, b] : 1``), which cannot be dict keys;
    * nesting deeper than ``max_depth``, checked while scanning and composing, so the recursive
      composer and constructor stay far from the recursion limit;
    * more than ``max_values`` values or ``max_text_chars`` characters, counting every alias as a
      full copy of its anchor. Each node's expanded size is summed from its children as soon as it
      is composed, so an alias bomb is refused after a few hundred nodes and never expanded;
    * an alias used inside its own anchor (a cycle, which no count can bound);
    * numbers longer than ``max_number_chars``, and values that do not fit their tag
      (``!!timestamp hello``), which PyYAML reports as bare ``ValueError``/``AttributeError``.
    """

    def __init__(self, stream: str, limits: Limits) -> None:
        super().__init__(stream)
        self.limits = limits
        self._depth = 0
        self._composed = 0
        self._sizes: dict[int, tuple[int, int]] = {}
        """``id(node)`` -> (values, characters) with aliases expanded, for finished nodes only."""

    def _too_big(self, problem: str, mark: Any) -> _TooBig:
        return _TooBig(None, None, problem, mark)

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # The scanner keeps one "possible simple key" per open bracket and scans every one of them
        # per token, so ``[[[[...`` costs quadratic time before the composer sees any depth.
        if self.flow_level >= self.limits.max_depth:
            raise self._too_big(self.limits.nested, self.get_mark())
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        limits = self.limits
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise self._too_big(
                    f"alias {clip('*' + event.anchor, 40)} is used inside its own anchor "
                    "(a value cannot contain itself)",
                    event.start_mark,
                )
            return super().compose_node(parent, index)  # the anchor's node, already counted
        start = self.peek_event().start_mark
        self._depth += 1
        self._composed += 1
        if self._depth > limits.max_depth:
            raise self._too_big(limits.nested, start)
        if self._composed > limits.max_values:
            raise self._too_big(
                f"more than {limits.max_values:,} values ({limits.values_needed})", start
            )
        node = super().compose_node(parent, index)
        self._depth -= 1
        values, chars = 1, 0
        if isinstance(node, yaml.ScalarNode):
            chars = len(node.value)
        else:
            children = (
                node.value
                if isinstance(node, yaml.SequenceNode)
                else [child for pair in node.value for child in pair]
            )
            for child in children:
                child_values, child_chars = self._sizes[id(child)]
                values += child_values
                chars += child_chars
        self._sizes[id(node)] = (values, chars)
        if values > limits.max_values:
            raise self._too_big(
                f"with its aliases expanded this holds more than {limits.max_values:,} values "
                f"({limits.values_needed})",
                node.start_mark,
            )
        if chars > limits.max_text_chars:
            raise self._too_big(
                f"with its aliases expanded this holds more than {limits.max_text_chars:,} "
                "characters",
                node.start_mark,
            )
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"cannot read this value as {clip(node.tag, 60)} ({type(exc).__name__})",
                node.start_mark,
            ) from None


def _construct_mapping(loader: _Loader, node: yaml.Node) -> dict[Any, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise yaml.constructor.ConstructorError(
            None, None, f"expected a mapping, but found a {node.id}", node.start_mark
        )
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise yaml.constructor.ConstructorError(
                None, None, f"a {kind} cannot be a key; keys are plain names", key_node.start_mark
            )
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = key in result
        except TypeError:  # scalar constructors give hashable values; belt and braces
            raise yaml.constructor.ConstructorError(
                None, None, "this value cannot be a key", key_node.start_mark
            ) from None
        if seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {short_repr(key)}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


def _number_fits(loader: _Loader, node: yaml.Node) -> None:
    if isinstance(node, yaml.ScalarNode) and len(node.value) > loader.limits.max_number_chars:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"a number with {len(node.value):,} characters; quote it if it is meant as text",
            node.start_mark,
        )


def _construct_int(loader: _Loader, node: yaml.Node) -> int:
    _number_fits(loader, node)
    return loader.construct_yaml_int(node)  # type: ignore[arg-type]


def _construct_float(loader: _Loader, node: yaml.Node) -> float:
    _number_fits(loader, node)
    return loader.construct_yaml_float(node)  # type: ignore[arg-type]


_Loader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,  # type: ignore[arg-type]
)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)  # type: ignore[arg-type]
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)  # type: ignore[arg-type]


def _parse_yaml(text: str, shown: str, limits: Limits, fail: Fail) -> Any:
    loader = _Loader(text, limits)  # a SafeLoader subclass: no code runs
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = limits.where(mark.line + 1, mark.column + 1) if mark is not None else ""
        problem = clip(getattr(exc, "problem", None) or str(exc), 200)
        if isinstance(exc, _TooBig):
            raise fail(f"{shown}: {where}{problem}.", limits.size_hint) from None
        hint = (
            "Keep one of them: YAML would otherwise silently keep only the last."
            if problem.startswith("duplicate key")
            else "Check the indentation and quoting around that line."
        )
        raise fail(f"{shown}: {where}{limits.invalid} YAML: {problem}.", hint) from None
    finally:
        loader.dispose()


# --- JSON ----------------------------------------------------------------------------------------


class _DuplicateJSONKey(ValueError):
    """A JSON object repeats a key (``json`` would silently keep the last one)."""


class _LongJSONNumber(ValueError):
    """A JSON number longer than ``max_number_chars`` (``int()`` of it would be slow or fail)."""


def _unique_json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJSONKey(key)
        result[key] = value
    return result


def _parse_json(text: str, shown: str, limits: Limits, fail: Fail) -> Any:
    def number(convert: Callable[[str], Any]) -> Callable[[str], Any]:
        def parse(digits: str) -> Any:
            if len(digits) > limits.max_number_chars:
                raise _LongJSONNumber(len(digits))
            return convert(digits)

        return parse

    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_json_object,
            parse_int=number(int),
            parse_float=number(float),
        )
    except json.JSONDecodeError as exc:
        where = limits.where(exc.lineno, exc.colno)
        raise fail(f"{shown}: {where}{limits.invalid} JSON: {exc.msg}.", None) from None
    except _DuplicateJSONKey as exc:
        raise fail(
            f"{shown}: {limits.invalid} JSON: duplicate key {short_repr(exc.args[0])}.",
            "Keep one of them: JSON readers would otherwise silently keep only the last.",
        ) from None
    except _LongJSONNumber as exc:
        raise fail(
            f"{shown}: a number with {exc.args[0]:,} characters; quote it if it is meant as text.",
            limits.size_hint,
        ) from None
    except RecursionError:  # json's C scanner recurses once per level
        raise fail(f"{shown}: {limits.nested}.", limits.size_hint) from None


# --- reading -------------------------------------------------------------------------------------


def read_bytes(path: Path, shown: str, limits: Limits, fail: Fail) -> bytes:
    """The file's bytes, refusing anything that cannot be a data file before reading it.

    One ``open`` and then ``fstat`` on the same descriptor, so nothing can be swapped in between
    a check and the read. ``O_NONBLOCK`` keeps a FIFO from blocking the open (it is then refused,
    like directories and devices); the size is checked before reading, and at most
    ``max_bytes + 1`` bytes are read anyway, since some files report a size of 0.
    """
    cap = limits.max_bytes
    too_big = f"Check that you picked the {limits.noun} file and not a data dump."
    not_a_file = f"{shown}: is a directory, not a {limits.noun} file."
    flags = os.O_RDONLY
    for extra in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"):
        flags |= getattr(os, extra, 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the path
        raise fail(f"{shown}: {limits.missing}.", None) from None
    except IsADirectoryError:
        raise fail(not_a_file, None) from None
    except OSError as exc:
        raise fail(f"{shown}: cannot read the file ({exc.strerror}).", None) from None
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise fail(not_a_file, None)
        if not stat.S_ISREG(mode.st_mode):
            raise fail(f"{shown}: not a regular file (a device, pipe or socket).", None)
        if mode.st_size > cap:
            raise fail(
                f"{shown}: the file has {mode.st_size:,} bytes; "
                f"a {limits.noun} is at most {cap:,}.",
                too_big,
            )
        chunks: list[bytes] = []
        total = 0
        while total <= cap:
            chunk = os.read(fd, cap + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise fail(f"{shown}: cannot read the file ({exc.strerror}).", None) from None
    finally:
        os.close(fd)
    if total > cap:
        raise fail(
            f"{shown}: the file has more than {cap:,} bytes; a {limits.noun} is at most {cap:,}.",
            too_big,
        )
    return b"".join(chunks)


def read_data(path: Path, shown: str, limits: Limits, fail: Fail) -> Any:
    """The parsed content of a ``.json`` file (by its suffix) or of a YAML file (any other).

    Whatever the file holds, the result is plain data (dicts, lists, texts, numbers, booleans,
    ``None``, dates), or ``fail(message, hint)`` is raised. YAML is held to every cap while it is
    parsed. JSON has no aliases, so the size cap bounds it, but it may still be deeper or hold
    more values than ``limits`` allow: pass the result through :func:`shape_problem`, as the
    callers do before validating it.
    """
    raw = read_bytes(path, shown, limits, fail)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"{shown}: not UTF-8 (byte {exc.start}).", "Save the file as UTF-8.") from None
    if path.suffix == ".json":
        return _parse_json(text, shown, limits, fail)
    return _parse_yaml(text, shown, limits, fail)


def shape_problem(data: Any, limits: Limits) -> str | None:
    """Why ``data`` cannot be a data file's content whatever it says, or ``None`` if it is fine.

    For data that may never have been a file: run it before pydantic, whose validation and error
    reporting recurse into the data and copy it. A value nested 10,000 deep, a list that contains
    itself, an alias bomb's shared sub-lists (small in memory, astronomically large once copied),
    an infinite iterator or an object with a hostile ``__eq__`` are refused here. Iterative, and
    it stops after ``max_values`` values, so the check itself costs little whatever it is given.
    """
    values = 0
    chars = 0
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, loc = stack.pop()
        if len(loc) >= limits.max_depth:
            return (
                f"{field_path(loc[:3])}…: nested more than {limits.max_depth} levels deep "
                f"({limits.depth_needed}; does a list contain itself?)"
            )
        kind = type(value)
        if kind is str or kind is bytes:
            chars += len(value)
            if chars > limits.max_text_chars:
                return f"more than {limits.max_text_chars:,} characters of text in all"
            continue
        if kind in PLAIN_SCALARS:
            continue
        if kind not in _CONTAINERS:
            return (
                f"{field_path(loc) or '(top level)'}: {clip(kind.__name__, 40)} is not plain data "
                "(use texts, numbers, lists and mappings)"
            )
        values += 2 * len(value) if kind is dict else len(value)
        if values > limits.max_values:
            return f"more than {limits.max_values:,} values in all ({limits.values_needed})"
        if kind is dict:
            for key, item in value.items():
                stack.append((key, (*loc, key)))
                stack.append((item, (*loc, key)))
        else:
            for i, item in enumerate(value):
                stack.append((item, (*loc, i)))
    return None


__all__ = [
    "MAX_PATH_CHARS",
    "PLAIN_SCALARS",
    "Fail",
    "Limits",
    "clip",
    "clip_path",
    "field_path",
    "read_bytes",
    "read_data",
    "shape_problem",
]
