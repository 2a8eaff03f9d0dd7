"""Bring Claude Code and Codex CLI sessions into Pi, keeping the whole tree.

Each source file becomes one Pi 1.6.0 session (and one more per Claude sub-agent, linked by
``parentSession``), written through :class:`pisession.SessionManager` into the folder Pi uses for
the session's cwd::

    from pisession.importers import import_all, import_session

    paths = import_session("~/.claude/projects/-work-app/0b6c....jsonl")
    results = import_all("codex")            # every rollout under $CODEX_HOME/sessions

The Pi session id is derived from the source, so importing a file again writes nothing and
returns the same paths. A file of another format raises :class:`SourceFormatError` and writes
nothing; a torn last line (a file cut mid-record) is skipped and reported.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs

from .._errors import SourceFormatError
from . import _claude, _codex
from ._common import (
    SessionWriter,
    find_imported,
    ms_from_iso,
    read_lines,
    session_id_for,
    target_folder,
    writing,
)

__all__ = [
    "ImportResult",
    "Source",
    "SourceFormatError",
    "default_root",
    "find_sources",
    "import_all",
    "import_file",
    "import_session",
    "sniff",
]

Source = Literal["claude", "codex"]


@attrs.define(frozen=True)
class ImportResult:
    """What importing one source file did.

    ``written``: the Pi sessions made now; ``existing``: sessions an earlier import made (nothing
    written); ``notes``: what was skipped and why (a torn last line, unreadable lines, records
    Pi cannot hold, kept as ``custom`` entries or counted here).
    """

    source: Path
    format: Source
    written: list[Path] = attrs.field(factory=list)
    existing: list[Path] = attrs.field(factory=list)
    notes: list[str] = attrs.field(factory=list)

    @property
    def sessions(self) -> list[Path]:
        return [*self.written, *self.existing]


def sniff(path: str | os.PathLike[str]) -> Source:
    """Which agent wrote ``path``; :class:`SourceFormatError` when neither did."""
    lines = read_lines(os.fspath(path))
    return _sniff_lines(os.fspath(path), lines.lines)


# Records Claude Code writes outside the conversation tree (no uuid).
_CLAUDE_OUTSIDE_TREE = ("summary", "file-history-snapshot", "queue-operation", "custom-title")


def _sniff_lines(path: str, lines: list[Any]) -> Source:
    if not lines:
        raise SourceFormatError(f"{path}: no readable record: not a Claude Code or Codex session")
    first = lines[0].data
    if first.get("type") == "session" and "version" in first and "cwd" in first:
        raise SourceFormatError(f"{path}: this is already a Pi session file")
    if _codex.looks_like_codex(first, lines[1].data if len(lines) > 1 else None):
        return "codex"
    if any(_claude.looks_like_claude(line.data) for line in lines[:50]) and any(
        isinstance(line.data.get("uuid"), str) for line in lines
    ):
        return "claude"
    if all(line.data.get("type") in _CLAUDE_OUTSIDE_TREE and "payload" not in line.data for line in lines):
        # Claude Code's own files with no conversation in them (a summary-only file left by a
        # resumed session, a file of snapshots): nothing to import, not another format.
        return "claude"
    raise SourceFormatError(f"{path}: not a Claude Code or Codex CLI session (line 1 is neither format)")


def default_root(source: Source) -> Path:
    """``$CLAUDE_CONFIG_DIR/projects`` (default ``~/.claude/projects``) or
    ``$CODEX_HOME/sessions`` (default ``~/.codex/sessions``)."""
    if source == "claude":
        base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
        # CLAUDE_CONFIG_DIR may list several folders, comma separated (as ccusage reads it).
        return Path(base.split(",")[0].strip()) / "projects"
    if source == "codex":
        base = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
        return Path(base) / "sessions"
    raise ValueError(f"unknown source {source!r}: 'claude' or 'codex'")


def find_sources(source: Source, root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The session files under ``root`` (default: the agent's store), in name order. Claude
    sub-agent files (``<session>/subagents/agent-*.jsonl``, and Claude Code 2.0's
    ``agent-*.jsonl`` beside their session's file) come with their session, not here."""
    base = Path(root) if root is not None else default_root(source)
    if base.is_file():
        return [base]
    if source == "claude":
        found = [p for p in base.rglob("*.jsonl") if "subagents" not in p.parts and _main_of_agent(p) is None]
    else:
        found = [*base.rglob("rollout-*.jsonl"), *base.rglob("rollout-*.json")]
    return sorted(p for p in found if p.is_file())


def import_session(
    path: str | os.PathLike[str],
    *,
    source: Source | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    cwd: str | None = None,
) -> list[Path]:
    """Import one Claude Code or Codex file; returns the Pi session files (the main session
    first, then its sub-agents), written now or by an earlier import of the same file."""
    return import_file(path, source=source, session_dir=session_dir, cwd=cwd).sessions


def import_all(
    source: Source,
    root: str | os.PathLike[str] | None = None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    on_file: Callable[[int, int, Path], None] | None = None,
) -> list[ImportResult | SourceFormatError]:
    """Import every session of ``source`` under ``root`` (default ``~/.claude/projects`` or
    ``~/.codex/sessions``, their environment variables honoured). A file that fails gives its
    error in the list, and the others are still imported.

    A Claude API message found in several files (a resumed session starts with a copy of the
    one it resumes) has its usage counted once, in the file whose copy has the most output
    tokens (the first in name order on a tie), as ccusage 20 counts it."""
    files = find_sources(source, root)
    results: list[ImportResult | SourceFormatError] = []
    owners = _usage_owners(files) if source == "claude" else {}
    rollouts = _rollout_ids(files) if source == "codex" else {}
    for number, path in enumerate(files, 1):
        if on_file is not None:
            on_file(number, len(files), path)
        try:
            results.append(_import(path, source, session_dir, None, dry_run, owners, rollouts))
        except SourceFormatError as error:
            results.append(error)
    return results


def import_file(
    path: str | os.PathLike[str],
    *,
    source: Source | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    cwd: str | None = None,
    dry_run: bool = False,
) -> ImportResult:
    """:func:`import_session` with the full account: what was written, what existed already, and
    what was skipped. ``dry_run`` converts the file in a temporary folder and writes nothing."""
    name = os.path.abspath(os.path.expanduser(os.fspath(path)))
    return _import(path, source, session_dir, cwd, dry_run, _usage_owners([Path(name)]))


def _rollout_ids(files: list[Path]) -> dict[str, Path]:
    """Each Codex rollout's session id, for a spawned thread to find its parent's lines."""
    found: dict[str, Path] = {}
    for path in files:
        try:
            meta = _codex.meta_of(read_lines(str(path)).lines)
        except (OSError, SourceFormatError):
            continue
        if isinstance(meta.get("id"), str):
            found.setdefault(meta["id"], path)
    return found


def _claude_files(main: Path) -> list[Path]:
    """A Claude session file and its sub-agent files, each read on its own."""
    return [main, *_agent_files(main)]


def _agent_files(main: Path) -> list[Path]:
    """The sub-agent files of a Claude session file: ``<session>/subagents/agent-*.jsonl``
    (Claude Code 2.1), and before that (2.0) ``agent-*.jsonl`` files beside it whose records
    carry its session id."""
    if main.parent.name == "subagents" or main.name.startswith("agent-"):
        return []
    nested = sorted((main.parent / main.stem / "subagents").glob("agent-*.jsonl"))
    beside = [p for p in sorted(main.parent.glob("agent-*.jsonl")) if _main_of_agent(p) == main]
    return [*nested, *beside]


def _main_of_agent(path: Path) -> Path | None:
    """The session file beside a Claude Code 2.0 sub-agent file (``agent-<id>.jsonl`` whose
    records carry that session's id), when it is there."""
    if not path.name.startswith("agent-") or path.parent.name == "subagents":
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    session = _first_session_id(str(path), stat.st_mtime_ns, stat.st_size)
    main = path.parent / f"{session}.jsonl" if session else None
    return main if main is not None and main != path and main.is_file() else None


@functools.lru_cache(maxsize=4096)
def _first_session_id(path: str, mtime_ns: int, size: int) -> str | None:
    """The ``sessionId`` of the first of a file's first lines that has one (keyed by the
    file's time and size, so that a store is read once however many sessions ask)."""
    try:
        with open(path, "rb") as handle:
            for _, raw in zip(range(20), handle, strict=False):
                try:
                    data = json.loads(raw)
                except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
                    continue
                if isinstance(data, dict) and isinstance(data.get("sessionId"), str):
                    return str(data["sessionId"])
    except OSError:
        return None
    return None


def _usage_owners(files: list[Path]) -> dict[tuple[str, str], str]:
    """Which file counts each Claude API message's usage: the one whose copy has the most output
    tokens, the first on a tie (a Codex file, or one that cannot be read, owns nothing)."""
    best: dict[tuple[str, str], tuple[int, str]] = {}
    for main in files:
        for path in _claude_files(main):
            try:
                lines = read_lines(str(path)).lines
            except (OSError, SourceFormatError):
                continue
            records = list(lines)
            if path == main:
                for copied in _progress_only(str(main), lines).values():
                    records.extend(copied)
            for key, output in _claude.usage_outputs(records).items():
                if key not in best or output > best[key][0]:
                    best[key] = (output, os.path.abspath(path))
    return {key: owner for key, (_, owner) in best.items()}


def _progress_only(name: str, lines: list[Any]) -> dict[str, list[Any]]:
    """The sub-agents of a Claude main file known only from its progress records: those whose
    own ``subagents/agent-<id>.jsonl`` is missing (an agent file holds the same records)."""
    path = Path(name)
    if path.parent.name == "subagents":
        return {}
    files = {p.stem[len("agent-") :] for p in _agent_files(path)}
    return {agent: records for agent, records in _claude.progress_agents(lines).items() if agent not in files}


def _not_owned(owners: dict[tuple[str, str], str], path: str | Path) -> set[tuple[str, str]]:
    """The API messages another file counts: their copies here carry no usage."""
    here = os.path.abspath(path)
    return {key for key, owner in owners.items() if owner != here}


def _import(
    path: str | os.PathLike[str],
    source: Source | None,
    session_dir: str | os.PathLike[str] | None,
    cwd: str | None,
    dry_run: bool,
    owners: dict[tuple[str, str], str],
    rollouts: dict[str, Path] | None = None,
) -> ImportResult:
    name = os.path.abspath(os.path.expanduser(os.fspath(path)))
    lines = read_lines(name)
    found = _sniff_lines(name, lines.lines)
    if source is not None and found != source:
        raise SourceFormatError(f"{name}: a {found} session, not {source}")
    result = ImportResult(Path(name), found)
    if lines.torn_last_line:
        result.notes.append("the last line is cut off mid-record (a live or truncated file): skipped")
    if lines.bad_lines:
        shown = ", ".join(map(str, lines.bad_lines[:5]))
        result.notes.append(f"{len(lines.bad_lines)} unreadable line(s) skipped (line {shown})")
    scratch = tempfile.mkdtemp(prefix="pisession-dry-run-") if dry_run else None
    try:
        if found == "claude":
            _import_claude(name, lines.lines, result, session_dir, cwd, scratch, owners)
        else:
            _import_codex(name, lines.lines, result, session_dir, cwd, scratch, rollouts or {})
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return result


def _import_record(result: ImportResult, extra: dict[str, Any]) -> dict[str, Any]:
    return {"source": result.format, "file": str(result.source), "notes": list(result.notes), **extra}


@attrs.define
class _Target:
    """Where one imported session goes, and whether an earlier import already made it."""

    folder: str  # where it is written (a temporary folder for a dry run)
    final: str  # where it goes
    session_id: str
    existing: str | None


def _target(result: ImportResult, key: str, cwd: str, session_dir: Any, scratch: str | None) -> _Target:
    session_id = session_id_for(result.format, key)
    folder = target_folder(cwd, session_dir)
    existing = find_imported(folder, session_id)
    if existing is not None:
        result.existing.append(Path(existing))
    return _Target(scratch or folder, folder, session_id, existing)


def _claude_cwd(lines: list[Any]) -> str:
    for line in lines:
        if isinstance(line.data.get("cwd"), str) and line.data["cwd"]:
            return str(line.data["cwd"])
    return os.getcwd()


def _import_claude(
    name: str,
    lines: list[Any],
    result: ImportResult,
    session_dir: Any,
    cwd: str | None,
    scratch: str | None,
    owners: dict[tuple[str, str], str],
) -> None:
    counted = _not_owned(owners, name)
    stem = Path(name).stem
    beside = _main_of_agent(Path(name))  # a 2.0 sub-agent file imported on its own
    is_agent = Path(name).parent.name == "subagents" or beside is not None
    if beside is not None:
        key_base = f"{beside.stem}/{stem}"
    else:
        key_base = f"{Path(name).parent.parent.name}/{stem}" if is_agent else stem
    work = cwd or _claude_cwd(lines)
    convs = _claude.conversations(lines, all_sidechain=is_agent)
    if not convs:
        result.notes.append("no conversation records: nothing to import")
        return
    unplaced: dict[str, int] = {}
    for line in lines:
        kind = line.data.get("type")
        if not isinstance(line.data.get("uuid"), str) and kind not in ("summary", "custom-title"):
            unplaced[str(kind)] = unplaced.get(str(kind), 0) + 1
    if unplaced:
        listed = ", ".join(f"{count} {kind}" for kind, count in sorted(unplaced.items()))
        result.notes.append(f"records outside the conversation tree, not copied: {listed}")
    sub_files = [] if is_agent else _agent_files(Path(name))
    main_path: str | None = None
    if beside is not None:  # linked to its session when that was imported
        main_path = find_imported(target_folder(work, session_dir), session_id_for("claude", beside.stem))
    for conv in convs:
        main = conv.key == "main"
        target = _target(
            result, f"{key_base}" if main else f"{key_base}:{conv.key}", work, session_dir, scratch
        )
        if target.existing is not None:
            if main:
                main_path = target.existing
            continue
        parent = main_path if not main or beside is not None else None
        written = _write_claude(conv.records, target, work, parent, result, counted, name if main else None)
        if main:
            main_path = written
    for sub in sub_files:
        sub_lines = read_lines(str(sub))
        if sub_lines.torn_last_line:
            result.notes.append(f"{sub.name}: the last line is cut off mid-record: skipped")
        records = _claude.conversations(sub_lines.lines, all_sidechain=True)
        if not records:
            continue
        target = _target(result, f"{stem}/{sub.stem}", work, session_dir, scratch)
        if target.existing is None:
            _write_claude(records[0].records, target, work, main_path, result, _not_owned(owners, sub), None)
    # Keyed as the agent's own file would be, so that the same sub-agent is one Pi session.
    for agent, copied in [] if is_agent else _progress_only(name, lines).items():
        target = _target(result, f"{stem}/agent-{agent}", work, session_dir, scratch)
        if target.existing is None:
            _write_claude(copied, target, work, main_path, result, counted, None)


def _write_claude(
    records: list[Any],
    target: _Target,
    cwd: str,
    parent: str | None,
    result: ImportResult,
    counted: set[tuple[str, str]],
    named_from: str | None,
) -> str | None:
    written: list[str] = []
    start = next((ms_from_iso(r.data.get("timestamp")) for r in records if r.data.get("timestamp")), 0)
    with writing(
        target.folder, target.session_id, cwd, start, parent_session=parent, on_done=written.append
    ) as out:
        stats = _claude.write_conversation(records, out, counted)
        if named_from is not None:
            title = _claude.session_name(read_lines(named_from).lines)
            if title:
                out.manager.append_session_info(title)
        _finish(out, result, stats, records[-1].data.get("timestamp"))
    return _record(result, written, target)


def _finish(out: SessionWriter, result: ImportResult, stats: dict[str, Any], last: Any) -> None:
    skipped = stats.get("skipped") or {}
    if skipped:
        listed = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
        note = f"records Pi cannot hold, counted in the pisession.import entry: {listed}"
        if note not in result.notes:
            result.notes.append(note)
    if out.manager.get_leaf_id() is not None:
        out.custom("pisession.import", _import_record(result, stats), ms_from_iso(last))


def _record(result: ImportResult, written: list[str], target: _Target) -> str | None:
    if not written:
        result.notes.append("a conversation with no user or assistant message: not written")
        return None
    result.written.append(Path(target.final) / os.path.basename(written[0]))
    return written[0]


def _import_codex(
    name: str,
    lines: list[Any],
    result: ImportResult,
    session_dir: Any,
    cwd: str | None,
    scratch: str | None,
    rollouts: dict[str, Path],
) -> None:
    meta = _codex.meta_of(lines)
    key = meta.get("id") if isinstance(meta.get("id"), str) else Path(name).stem
    work = cwd or (meta.get("cwd") if isinstance(meta.get("cwd"), str) else None) or os.getcwd()
    target = _target(result, str(key), work, session_dir, scratch)
    if target.existing is not None:
        return
    start = ms_from_iso(meta.get("timestamp")) or next(
        (ms_from_iso(line.data.get("timestamp")) for line in lines if line.data.get("timestamp")), 0
    )
    parent_id = _codex.fork_parent(lines, meta)
    parent = None
    if parent_id is not None:  # a fork: linked to its parent when the parent was imported
        parent = find_imported(target_folder(work, session_dir), session_id_for("codex", parent_id))
    written: list[str] = []
    with writing(
        target.folder, target.session_id, work, start, parent_session=parent, on_done=written.append
    ) as out:
        spawner = _codex.spawn_parent(meta)
        parent_file = rollouts.get(spawner) if spawner is not None else None
        parent_lines = read_lines(str(parent_file)).lines if parent_file is not None else None
        stats = _codex.write_rollout(lines, out, meta, parent_lines)
        _finish(out, result, stats, lines[-1].data.get("timestamp"))
    _record(result, written, target)
