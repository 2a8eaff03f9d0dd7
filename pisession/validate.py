"""The damage report of a session file (``pisession validate``): malformed lines with their
numbers, a missing or second header, the version, duplicate ids, orphans, parentId cycles and
dangling ``firstKeptEntryId`` / ``targetId`` / ``fromId`` references. Never writes a file::

    from pisession.validate import validate_file, validate_folder

    report = validate_file("session.jsonl")
    if not report.ok:
        for problem in report.problems:
            print(problem.line, problem.severity, problem.message)
    broken = [r.path for r in validate_folder("~/.pi/agent/sessions/--home-me-app--") if not r.ok]
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from ._errors import _warn_to_json
from ._load import (
    CURRENT_SESSION_VERSION,
    MAX_LINE_BYTES,
    SkippedLine,
    iter_file_lines,
    migrate_session_entries,
    open_regular,
    parse_line,
)
from ._manager import SessionManager
from .describe import _compact_json, one_line

__all__ = ["Severity", "Problem", "ValidationReport", "validate_file", "validate_folder"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding: ``error`` (Pi loses or misreads something) or ``warning``; ``line`` is the
    1-based line number in the file, or None for the file as a whole."""

    severity: Severity
    line: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """Deprecated name of :meth:`to_wire`."""
        _warn_to_json(self)
        return self.to_wire()

    def to_wire(self) -> dict[str, Any]:
        return {"severity": self.severity, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class ValidationReport:
    """The findings for one file, sorted by line (whole-file ones last).

    ``session_id``, ``version`` and ``entries`` (entries after the header) are set once the
    file's header has been read, None before.
    """

    path: str
    problems: tuple[Problem, ...] = ()
    session_id: str | None = None
    version: Any = None
    entries: int | None = None

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    def to_json(self) -> dict[str, Any]:
        """Deprecated name of :meth:`to_wire`."""
        _warn_to_json(self)
        return self.to_wire()

    def to_wire(self) -> dict[str, Any]:
        """The JSON object ``pisession validate --json`` prints for this file."""
        out: dict[str, Any] = {"path": self.path, "problems": [p.to_wire() for p in self.problems]}
        if self.session_id is not None:
            out["sessionId"] = self.session_id
            out["version"] = self.version
        if self.entries is not None:
            out["entries"] = self.entries
        out["ok"] = self.ok
        return out


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


class _Report:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []
        self.session_id: str | None = None
        self.version: Any = None
        self.entries: int | None = None

    def add(self, severity: Severity, line: int | None, message: str) -> None:
        self.problems.append(Problem(severity, line, message))

    def done(self) -> ValidationReport:
        problems = sorted(self.problems, key=lambda p: (p.line is None, p.line or 0))
        return ValidationReport(self.path, tuple(problems), self.session_id, self.version, self.entries)


def validate_file(path: str | os.PathLike[str]) -> ValidationReport:
    """Check one session file; an unreadable or non-session file is a report with an error.

    :param path: the file to check; it is only read (never repaired, migrated or locked).
    """
    report = _Report(os.fspath(path))
    try:
        # Non-blocking and regular files only: a FIFO or a pipe must not block the check, and a
        # device such as /dev/zero must not be read until memory runs out.
        with open_regular(path) as handle:
            # line by line: a line too long to read is skipped, never held (MAX_LINE_BYTES)
            raw_lines = list(iter_file_lines(handle))
    except IsADirectoryError:
        report.add("error", None, f"{report.path} is a directory, not a session file")
        return report.done()
    except OSError as error:
        if error.errno == errno.EINVAL:
            report.add("error", None, "not a regular file (a FIFO, pipe or device): not a Pi session")
            return report.done()
        report.add("error", None, f"cannot read: {error.strerror or error}")
        return report.done()
    _check(raw_lines, report)
    return report.done()


def validate_folder(path: str | os.PathLike[str]) -> list[ValidationReport]:
    """Check every ``*.jsonl`` file of a folder (not its subfolders), in name order."""
    folder = os.path.expanduser(os.fspath(path))
    names = sorted(name for name in os.listdir(folder) if name.endswith(".jsonl"))
    return [validate_file(os.path.join(folder, name)) for name in names]


def _check(raw_lines: list[bytes], report: _Report) -> None:
    """``raw_lines``: the file split on ``\\n`` (the last one what follows the final newline)."""
    add = report.add
    final_newline = raw_lines[-1] == b"" and type(raw_lines[-1]) is bytes
    if final_newline:
        raw_lines.pop()
    elif raw_lines != [b""]:
        add(
            "warning",
            len(raw_lines),
            "the last line has no final newline (Pi appends one when it opens the file)",
        )
    parsed: list[tuple[int, dict[str, Any]]] = []
    bad_utf8: list[int] = []
    for number, raw in enumerate(raw_lines, start=1):
        if type(raw) is SkippedLine:
            add("error", number, _skipped_text(raw))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            bad_utf8.append(number)
        if not raw:
            continue
        entry = parse_line(raw)  # the loader's own reading of a line: Pi's JSON.parse
        if entry is not None:
            parsed.append((number, entry))
            continue
        if not text.strip():
            continue
        snippet = one_line(text, 60)
        try:
            json.loads(text, parse_constant=_reject_constant)
            add("error", number, f"a JSON value that is not an object (Pi skips it): {snippet}")
        except RecursionError:
            if text.lstrip().startswith("{"):
                add("error", number, f"an object nested too deeply for pisession (Pi reads it): {snippet}")
            else:
                add(
                    "error", number, f"a JSON value nested too deeply, not an object (Pi skips it): {snippet}"
                )
        except ValueError:
            unfinished = number == len(raw_lines) and not final_newline
            what = "unfinished last line" if unfinished else "not valid JSON"
            if raw.startswith(b"\xef\xbb\xbf"):
                what += ", starting with a byte-order mark"
            add("error", number, f"{what} (Pi skips it): {snippet}")
    if bad_utf8:
        lines = ", ".join(str(n) for n in bad_utf8[:5]) + (", ..." if len(bad_utf8) > 5 else "")
        add(
            "warning",
            bad_utf8[0],
            f"invalid UTF-8 on {len(bad_utf8)} line(s) ({lines}); Pi reads it as U+FFFD",
        )
    if not parsed:
        blank = not any(line.strip() for line in raw_lines)  # only here: it copies every line
        add(
            "error",
            None,
            "not a Pi session: " + ("the file is empty" if blank else "no JSON object in it"),
        )
        return
    first_line, header = parsed[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        add("error", first_line, "not a Pi session: the first JSON object is not a session header")
        return
    version = header.get("version")
    version_text = _version_text(header)  # before the migration below sets it
    report.session_id = header["id"]
    report.version = version
    entries = [entry for _, entry in parsed]
    if migrate_session_entries(entries):
        add(
            "warning",
            first_line,
            f"old session version {version_text}: Pi migrates and rewrites the file on open",
        )
    elif version != CURRENT_SESSION_VERSION:
        add("warning", first_line, f"session version {version_text} is not one Pi 1.6.0 writes")
    body: list[tuple[int, dict[str, Any]]] = []
    for number, entry in parsed[1:]:
        if entry.get("type") == "session":
            add("warning", number, "a second session header (Pi reads it as an entry of an unknown type)")
        body.append((number, entry))
    _check_references(body, report)
    manager = SessionManager.in_memory(os.getcwd(), entries=entries)
    lines_of = {
        entry.get("id"): number for number, entry in reversed(body) if isinstance(entry.get("id"), str)
    }
    for cycle in manager.snapshot().cycles:
        where = min((lines_of.get(i, 0) for i in cycle if isinstance(i, str)), default=None)
        loop = " → ".join(str(i) for i in [*cycle, cycle[0]])
        add("error", where or None, f"parentId cycle: {loop}")
    report.entries = len(body)


def _skipped_text(line: SkippedLine) -> str:
    snippet = one_line(line.head[:16].decode("utf-8", "replace"), 16)
    if len(line) > MAX_LINE_BYTES:
        return (
            f"a line of {len(line):,} bytes, longer than pisession reads ({MAX_LINE_BYTES >> 20} MiB): "
            "skipped unread (Pi cannot read it either: its whole file must fit one JavaScript "
            f"string): {snippet}"
        )
    return f"not valid JSON (Pi skips it), {len(line):,} bytes skipped unread: {snippet}"


def _version_text(header: dict[str, Any]) -> str:
    """The header's version as the report names it (Pi reads a missing or null one as 1)."""
    if "version" not in header:
        return "1 (no version field)"
    version = header["version"]
    return "1 (version null)" if version is None else _compact_json(version)


def _check_references(body: list[tuple[int, dict[str, Any]]], report: _Report) -> None:
    add = report.add
    lines_of: dict[str, int] = {}
    for number, entry in body:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            add("error", number, f"entry without a string id: {one_line(_compact_json(entry), 60)}")
            continue
        if entry_id in lines_of:
            add("error", number, f"duplicate id {entry_id} (first at line {lines_of[entry_id]})")
        else:
            lines_of[entry_id] = number

    def exists(value: Any) -> bool:
        return isinstance(value, str) and value in lines_of

    for number, entry in body:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            continue
        parent = entry.get("parentId", ...)
        if parent is ...:  # OpenClaw writes such entries; Pi 1.6.0 reads each as a root
            add(
                "warning",
                number,
                f"entry {entry_id} has no parentId: Pi reads it as a root (a new conversation: "
                "what comes before it is not in its branch or context)",
            )
        elif parent is not None and parent != entry_id and not exists(parent):
            add("error", number, f"orphan: the parent {parent} of entry {entry_id} does not exist")
        kind = entry.get("type")
        if kind == "compaction":
            first = entry.get("firstKeptEntryId")
            if not isinstance(first, str):
                add("error", number, f"compaction {entry_id} has no firstKeptEntryId")
            elif first != entry_id and not exists(first):
                add(
                    "error",
                    number,
                    f"compaction {entry_id}: firstKeptEntryId {first} does not exist "
                    "(the context keeps nothing from before the compaction)",
                )
        elif kind in ("label", "context_edit"):
            target = entry.get("targetId")
            if not exists(target):
                add("error", number, f"{kind} {entry_id}: targetId {target} does not exist")
            if kind == "context_edit" and "replacement" not in entry:
                add("warning", number, f"context_edit {entry_id} has no replacement")
        elif kind == "branch_summary":
            source = entry.get("fromId")
            if source != "root" and not exists(source):
                add("warning", number, f"branch_summary {entry_id}: fromId {source} does not exist")
