"""The export itself: the manifest read and checked, the sources chosen, their rows written
as sessions' own files or bundles, the manifest saved as the work goes (see :mod:`._export`
for the layout and the change rule; this module holds the :class:`Exporter` that applies them).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any

from .._errors import LockFileAccessError, SymlinkRefusedError
from .._lock import LockTimeout, SessionLock
from .._paths import normalize_path
from . import _export, _folder
from ._export import (
    _BUNDLE_OWNER,
    _FORMAT,
    LOCK_TIMEOUT,
    OWN_FILE_BYTES,
    TABLES,
    Batch,
    Job,
    Prepared,
    Scope,
    Source,
    _as_read,
    _crc_of,
    _fingerprint,
    _header_project,
    _owner_key,
    _path_hash,
    _preferred,
    _Resolver,
    _size,
    _stat,
    bundle_name,
    file_stem,
    partition_name,
    project_of,
    shortened,
)
from ._folder import JOURNAL, MANIFEST, DatasetError
from ._folder import LOCK as _LOCK
from ._folder import temporary as _temporary
from ._rows import Fingerprint

__all__ = ["Exporter"]


def _manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The manifest as JSON: orjson's (3 ms -> 0.25 ms for 1,000 sessions), else the standard
    library's: without orjson (it only adds speed), and for what orjson refuses to write (a lone
    surrogate from a header's cwd, which no UTF-8 holds; an int past 64 bits, an mtime before
    1677), \\u-escaped where it must be. It is read back by ``json``, which keeps such ints as
    ints (orjson would make them floats)."""
    try:
        import orjson
    except ImportError:
        pass
    else:
        with contextlib.suppress(TypeError):
            return orjson.dumps(manifest)
    try:
        return json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(manifest, separators=(",", ":")).encode("ascii")


class Exporter:
    """One run of ``write_parquet`` over an output folder, under its lock."""

    def __init__(self, out_dir: str, *, lock_timeout: float | None = None) -> None:
        self.out = os.path.abspath(normalize_path(out_dir))
        if os.path.exists(self.out) and not os.path.isdir(self.out):
            raise DatasetError(f"{self.out} is not a folder")
        manifest = os.path.join(self.out, MANIFEST)
        # the lock and the manifest's temporaries alone: a first export killed before its manifest.
        # Listed before the manifest is looked for: an export writes its manifest before any
        # other file, so a folder listed while one starts is never taken for someone else's.
        if os.path.isdir(self.out) and not _folder.ours_only(self.out) and not os.path.lexists(manifest):
            raise DatasetError(
                f"{self.out} is not empty and holds no pisession dataset ({MANIFEST} is missing): "
                "choose a new or empty folder"
            )
        os.makedirs(self.out, exist_ok=True)
        self._lock_timeout = LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        # filelock's protocol (a FileLock held elsewhere excludes this export, and the other way
        # round) without importing filelock: 18 ms of every `pisession dataset`
        self._lock = SessionLock(os.path.join(self.out, _LOCK), timeout=self._lock_timeout)
        self.rows: dict[str, dict[str, Any]] = {}
        self._owners: dict[tuple[str, str], str] = {}  # (project, stem) as the file system compares them
        self.format_ok = True
        self._saved = time.monotonic()
        self._journal: int | None = None
        self._affected: set[tuple[str, str]] = set()  # bundles (project, name) that lost a session
        self._present: dict[tuple[str, str], bool] = {}  # bundles whose five files exist
        # the names in each (table, partition folder) as this run found them, listed once: a
        # folder's 100 bundles cost one listing, not 100 stats a table
        self._listed: dict[tuple[str, str], frozenset[str]] = {}

    @contextlib.contextmanager
    def locked(self) -> Iterator[Exporter]:
        try:
            self._lock.acquire()
        except LockTimeout:
            raise DatasetError(
                f"another export is writing {self.out} (waited {self._lock_timeout:g} s for its lock)"
            ) from None
        except (SymlinkRefusedError, LockFileAccessError) as error:
            raise DatasetError(f"cannot lock {self.out}: {error}") from None
        try:
            fresh = not self._load_manifest()
            self._rekey()
            self._remove_temporaries()
            self._recover()
            if fresh:  # the folder is recognisably a dataset before its first data file
                self.save()
            yield self
            if self._journal is not None and os.fstat(self._journal).st_size == 0:
                os.unlink(os.path.join(self.out, JOURNAL))  # all it named is in the saved manifest
        except BaseException:
            with contextlib.suppress(OSError, DatasetError):
                self._remove_temporaries()  # a failed or interrupted run's, its workers stopped
            raise
        finally:
            if self._journal is not None:
                os.close(self._journal)
                self._journal = None
            self._lock.release()
            self._lock.close()

    # -- manifest --------------------------------------------------------------------------

    def _load_manifest(self) -> bool:
        """Read and check the manifest; False when there is none (a new folder)."""
        path = os.path.join(self.out, MANIFEST)
        try:
            # not through a link, and a FIFO in its place must not block the export
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return False
        except OSError as error:
            raise DatasetError(
                f"cannot read the dataset manifest {path}: {error.strerror or error}"
            ) from None
        try:
            with open(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise DatasetError(f"the dataset manifest {path} is not a regular file")
                data = json.loads(handle.read().decode("utf-8"))
        except OSError as error:
            raise DatasetError(
                f"cannot read the dataset manifest {path}: {error.strerror or error}"
            ) from None
        except (ValueError, RecursionError) as error:  # bad UTF-8 or JSON; JSON nested past the stack
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise DatasetError(
                f"the dataset manifest {path} is not JSON ({detail}): nothing was changed; "
                "export to a new folder, or delete this one"
            ) from None
        _folder.check_manifest(data, path, partition_name, _owner_key)
        self.format_ok = data["format"] == _FORMAT
        self.rows = data["sessions"]
        for source, row in self.rows.items():
            if row["stem"] is not None:
                self._owners[_owner_key(row["project"], row["stem"])] = source
            elif row.get("bundle") is not None:
                self._owners[_owner_key(row["project"], row["bundle"])] = _BUNDLE_OWNER
        return True

    def _recover(self) -> None:
        """Remove the files an export installed after its last manifest save and then lost
        (killed before the next): those no manifest row names. Without this, a session deleted
        before the next run would keep them for good."""
        path = os.path.join(self.out, JOURNAL)
        pending = _folder.read_journal(path, partition_name)
        if not pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        rows = self.rows.values()
        named = {(partition_name(r["project"]), r["stem"]) for r in rows if r["stem"] is not None}
        bundles = {(partition_name(r["project"]), r["bundle"]) for r in rows if r.get("bundle") is not None}
        for project, stem in pending:
            if (partition_name(project), stem) in bundles:
                # written again in place after the last save: its files and the manifest's rows
                # may not agree, so it goes and its sessions are read again
                self._drop_bundle(project, stem)
            elif (partition_name(project), stem) not in named:
                self._unlink(project, stem)
        os.unlink(path)

    def _drop_bundle(self, project: str, name: str) -> None:
        """Delete a bundle's files and forget its sessions (the next run reads them again)."""
        where = (partition_name(project), name)
        for key, row in list(self.rows.items()):
            if (partition_name(row["project"]), row.get("bundle")) == where:
                del self.rows[key]
        self._owners.pop(_owner_key(project, name), None)
        self._unlink(project, name)

    def _rekey(self) -> None:
        """Key every row by its file's resolved path, one row per file. A manifest written before
        rows were keyed so holds the spellings it was given, and a file exported through two of
        them (Pi's sessions folder through a link, and by its real path) twice: the row whose key
        is already resolved (else the one with the shorter file stem: the one without a hash)
        stays, the other's files are removed."""
        resolve = _Resolver()
        rows: dict[str, dict[str, Any]] = {}
        spelled: dict[str, str] = {}
        dropped: list[tuple[str, str]] = []
        for key, row in self.rows.items():
            real = resolve(key)
            kept = rows.get(real)
            if kept is None:
                rows[real], spelled[real] = row, key
                continue
            if _preferred(key == real, row) > _preferred(spelled[real] == real, kept):
                rows[real], spelled[real], row, kept = row, key, kept, row
            if row.get("stem") is not None and (
                kept.get("stem") is None
                or _owner_key(row["project"], row["stem"]) != _owner_key(kept["project"], kept["stem"])
            ):
                self._unlink(row["project"], row["stem"])
            elif row.get("bundle") is not None:
                dropped.append((row["project"], row["bundle"]))
        if rows.keys() != self.rows.keys():
            self.rows = rows
            self._owners = {
                _owner_key(row["project"], row["stem"]): key
                for key, row in rows.items()
                if row.get("stem") is not None
            }
            self._owners.update(
                (_owner_key(row["project"], row["bundle"]), _BUNDLE_OWNER)
                for row in rows.values()
                if row.get("bundle") is not None
            )
        for project, name in dropped:  # its files hold the other row's session too: read again
            self._drop_bundle(project, name)

    def save(self, *, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._saved < _export._SAVE_EVERY:
            return
        self._saved = now
        manifest: dict[str, Any] = {"format": _FORMAT, "sessions": self.rows}
        filed = [
            row for row in self.rows.values() if row["stem"] is not None or row.get("bundle") is not None
        ]
        partitions = shortened({row["project"] for row in filed})
        if partitions:  # only when a folder name did not fit: the partition value -> the name
            manifest["partitions"] = partitions
        data = _manifest_bytes(manifest)
        self._replace(os.path.join(self.out, MANIFEST), lambda tmp: _export._write_bytes(tmp, data))
        if self._journal is not None:  # what it named is in the manifest now
            os.ftruncate(self._journal, 0)

    def _remove_temporaries(self) -> None:
        """Temporary files an interrupted export left (hidden: no reader ever saw them); only
        pisession's own, never through a link."""
        _folder.remove_temporaries(self.out, TABLES)

    def _note_install(self, project: str, stem: str) -> None:
        """Name the files about to be installed in the journal, before they are (see
        :meth:`_recover`)."""
        if self._journal is None:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            self._journal = os.open(os.path.join(self.out, JOURNAL), flags, 0o666)
        os.write(self._journal, _folder.journal_line(project, stem))

    # -- deciding ---------------------------------------------------------------------------

    def unchanged(self, source: Source, full: bool, scope: Scope) -> bool | None:
        """True: nothing to do; False: read it; None: outside the selection (a non-default
        folder's session whose header names another cwd), left as it is.

        The rule is the catalog's (:func:`~pisession.catalog._change.same_file`): device,
        inode, size, mtime and ctime as read (a rewrite in place that puts size and mtime back
        still moves ctime), and a file written too close to being read to tell ("racily
        clean") is unchanged only if its bytes still have the checksum of those read."""
        row = self.rows.get(source.key)
        if row is None or full or not self.format_ok or row.get("folder") != source.folder:
            return False
        stats = _stat(source.path)
        checked = row.get("checked", 0)
        if stats is None or type(checked) is not int:
            return False
        recheck = False
        if not _as_read(stats, row.get("fp"), row.get("ctime"), checked):
            if not _as_read(stats, row.get("fp"), row.get("ctime"), checked, racy_too=True):
                return False
            crc = row.get("crc")
            checked_now = time.time_ns()
            if type(crc) is not int or _crc_of(source.path, stats.st_size) != crc:
                return False
            recheck = True
        if not scope.selects(row.get("cwd")):
            return None
        parent = row.get("parent")
        if parent is not None:
            now = _stat(parent)
            if row.get("parent_fp") is None:
                if now is not None:  # the parent was missing when the fork was read
                    return False
            elif now is None or not _as_read(now, row.get("parent_fp"), row.get("parent_ctime"), checked):
                return False
        stem = row.get("stem")
        if stem is not None and not self._found(row["project"], stem):
            return False
        bundle = row.get("bundle")
        if bundle is not None:
            present = self._present.get((row["project"], bundle))
            if present is None:
                present = self._found(row["project"], bundle)
                self._present[(row["project"], bundle)] = present
            if not present:
                return False
        if recheck:  # its bytes are those read: settled from now on, as the catalog records it
            row["checked"] = checked_now
        return True

    def _found(self, project: str, stem: str) -> bool:
        """Whether each table has the file ``stem`` of ``project`` (a regular file, not a link),
        as this run first listed their folders (before it wrote any)."""
        partition = partition_name(project)
        for table in TABLES:
            names = self._listed.get((table, partition))
            if names is None:
                try:
                    with os.scandir(os.path.join(self.out, table, partition)) as found:
                        # a link in a file's place is no file of ours (written again, over it)
                        names = frozenset(e.name for e in found if e.is_file(follow_symlinks=False))
                except OSError:  # missing, or not a folder: the files are not there
                    names = frozenset()
                self._listed[(table, partition)] = names
            if f"{stem}.parquet" not in names:
                return False
        return True

    def gone(self, scope: Scope, selected: set[str]) -> list[str]:
        """Manifest sources (keys) in this run's scope that no longer exist as files, or that
        are another name of a selected file (a hard link an earlier release exported twice)."""
        found = []
        identities: set[tuple[int, int]] | None = None
        for key in self.rows:
            if not scope.covers(key) or key in selected:
                continue
            stats = _stat(key)
            if stats is not None and identities is None:  # rare: stat the selection only then
                identities = {(s.st_dev, s.st_ino) for s in map(_stat, selected) if s is not None}
            if stats is None or (identities is not None and (stats.st_dev, stats.st_ino) in identities):
                found.append(key)
        return found

    # -- doing ------------------------------------------------------------------------------

    def _target(self, table: str, project: str, stem: str, *, create: bool = False) -> str:
        """The path of a table's file ``stem`` of ``project``, for a write or a delete: checked
        to stay inside the output folder, reached through no link (:func:`_folder.folder`)."""
        if _folder.STEM.fullmatch(stem) is None:
            raise DatasetError(f"{stem!r} is not a file name pisession writes: refused under {self.out}")
        where = _folder.folder(self.out, table, partition_name(project), create=create)
        return os.path.join(where, f"{stem}.parquet")

    def remove(self, key: str, *, rewrite: bool = True) -> int:
        """Delete the files made from the source ``key`` and forget it; how many files were
        removed (a bundled session's bundle is written again without it, by :meth:`jobs`: one;
        ``rewrite=False``: it was already, as a job's failed member)."""
        row = self.rows.pop(key, None)
        if row is None:
            return 0
        if row.get("bundle") is not None:
            if rewrite:
                self._affected.add((row["project"], row["bundle"]))
            return 1
        if row.get("stem") is None:
            return 0
        self._owners.pop(_owner_key(row["project"], row["stem"]), None)
        return self._unlink(row["project"], row["stem"])

    def _unlink(self, project: str, stem: str) -> int:
        removed = 0
        for table in TABLES:
            try:
                target = self._target(table, project, stem)
            except FileNotFoundError:  # its folder is gone: so is the file
                continue
            try:
                os.unlink(target)
                removed += 1
            except FileNotFoundError:
                pass
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(target))  # only when empty
        return removed

    def stem_for(self, source: Source, project: str, session_id: str) -> str:
        """The session's file stem: its id, unless another source of the same project already
        owns that name (two files of one session id, or names equal but for case)."""
        want = file_stem(session_id)
        owner = self._owners.get(_owner_key(project, want))
        if owner is not None and owner not in (source.key, _BUNDLE_OWNER) and _fingerprint(owner) is None:
            # the file that had the name is gone (its sessions folder renamed or moved, out of
            # this run's scope): this one takes the name over, or every session is kept twice
            self._owners.pop(_owner_key(project, want))
            self.rows.pop(owner, None)
            return want
        return want if owner is None or owner == source.key else f"{want}-{_path_hash(source.key)}"

    def install(self, source: Source, prepared: Prepared, bundles: list[str] | None = None) -> int:
        """Rename a prepared session's five files into place (under its file stem), or take it
        as in its bundle (``bundles``: the batch's bundle names, installed), and remember what
        they were made from; returns how many files were installed."""
        old = self.rows.get(source.key)
        project = prepared.project
        if prepared.bundle is not None:
            assert bundles is not None
            if old is not None and old.get("stem") is not None:  # filed on its own before
                self._owners.pop(_owner_key(old["project"], old["stem"]), None)
                self._unlink(old["project"], old["stem"])
            self.record(
                source,
                prepared.fingerprint,
                prepared.read_ns,
                None,
                prepared.cwd,
                prepared.parent,
                prepared.parent_fp,
                crc=prepared.crc,
                bundle=bundles[prepared.bundle],
                session_id=prepared.session_id,
            )
            return 0
        stem = self.stem_for(source, project, prepared.session_id)
        self._note_install(project, stem)
        for table, tmp in prepared.files.items():
            os.replace(tmp, self._target(table, project, stem, create=True))
        # its id or its cwd changed (or an older format filed it by folder name): the old files
        # go (not when only the case differs: on macOS and Windows that is the same file)
        if (
            old is not None
            and old.get("stem") is not None
            and _owner_key(old["project"], old["stem"]) != _owner_key(project, stem)
        ):
            self._owners.pop(_owner_key(old["project"], old["stem"]), None)
            self._unlink(old["project"], old["stem"])
        self._owners[_owner_key(project, stem)] = source.key
        self.record(
            source,
            prepared.fingerprint,
            prepared.read_ns,
            stem,
            prepared.cwd,
            prepared.parent,
            prepared.parent_fp,
            crc=prepared.crc,
            session_id=prepared.session_id,
        )
        return len(prepared.files)

    def install_bundles(self, batch: Batch) -> tuple[list[str], int]:
        """Rename a batch's bundles into place (a new one under a new name), delete the files of
        its job's bundle when it was left empty; the bundles' names and how many files were
        installed."""
        names = []
        for bundle in batch.bundles:
            name = bundle.name if bundle.name is not None else self._new_bundle(bundle.project)
            self._note_install(bundle.project, name)
            for table, tmp in bundle.files.items():
                os.replace(tmp, self._target(table, bundle.project, name, create=True))
            self._owners[_owner_key(bundle.project, name)] = _BUNDLE_OWNER
            self._present[(bundle.project, name)] = True
            names.append(name)
        if batch.emptied is not None:
            project, name = batch.emptied
            self._owners.pop(_owner_key(project, name), None)
            self._unlink(project, name)
        return names, 5 * len(names)

    def _new_bundle(self, project: str) -> str:
        while True:
            name = bundle_name()
            if _owner_key(project, name) not in self._owners:
                return name

    def jobs(self, dirty: list[Source], cwd: str | None) -> list[Job]:
        """The work of this run: each bundle that lost or changed a session written again (its
        changed sessions read, the others' rows taken from its files, new sessions of its
        project where there is room), the rest of the new sessions gathered into new bundles of
        at most :data:`_export.BUNDLE_BYTES` (a large session alone), largest first."""
        members: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
        for key, row in self.rows.items():
            if row.get("bundle") is not None:
                member = (row["session"], row["folder"] if row.get("folder") is not None else "")
                members.setdefault((row["project"], row["bundle"]), {})[key] = member
        changed = {source.key for source in dirty}
        touched: dict[tuple[str, str], list[Source]] = {bundle: [] for bundle in self._affected}
        fresh: dict[str, list[Source]] = {}
        for source in dirty:
            old = self.rows.get(source.key)
            if old is not None and old.get("bundle") is not None:
                touched.setdefault((old["project"], old["bundle"]), []).append(source)
            else:
                guess = old["project"] if old is not None else _header_project(source)
                fresh.setdefault(guess, []).append(source)
        sized: list[tuple[int, Job]] = []
        room: dict[str, list[list[Any]]] = {}
        for (project, name), sources in touched.items():
            have = members.get((project, name), {})
            keep = {k: v for k, v in have.items() if k not in changed}
            size = sum(self.rows[k]["fp"][2] for k in keep) + sum(_size(s) for s in sources)
            again = {s.key: have[s.key][0] for s in sources if s.key in have}
            job = Job(self.out, cwd, project, name, keep, again, sources)
            entry: list[Any] = [size, job]
            sized.append((size, job))
            room.setdefault(project, []).append(entry)
        for project, sources in fresh.items():
            chunk: list[Source] = []
            filled = 0
            for source in sources:
                size = _size(source)
                if size >= OWN_FILE_BYTES:
                    sized.append((size, Job(self.out, cwd, project, None, {}, {}, [source])))
                    continue
                spare = next((e for e in room.get(project, ()) if e[0] + size <= _export.BUNDLE_BYTES), None)
                if spare is not None:  # a bundle written again anyway, with room
                    spare[0] += size
                    spare[1].sources.append(source)
                    continue
                if chunk and filled + size > _export.BUNDLE_BYTES:
                    sized.append((filled, Job(self.out, cwd, project, None, {}, {}, chunk)))
                    chunk, filled = [], 0
                chunk.append(source)
                filled += size
            if chunk:
                sized.append((filled, Job(self.out, cwd, project, None, {}, {}, chunk)))
        self._affected.clear()
        sized.sort(key=lambda pair: -pair[0])
        return [job for _, job in sized]

    def record(
        self,
        source: Source,
        fingerprint: Fingerprint,
        read_ns: int,
        stem: str | None,
        header_cwd: str | None,
        parent: str | None,
        parent_fp: Fingerprint | None = None,
        *,
        crc: int,
        bundle: str | None = None,
        session_id: str | None = None,
    ) -> None:
        """Remember what ``source``'s files were made from: its fingerprint, the checksum of the
        bytes read and, for a fork, its parent's fingerprint as it was read (not as it is now: a
        parent changed since must show as changed)."""
        self.rows[source.key] = {
            "fp": list(fingerprint[:4]),
            "ctime": fingerprint[4],
            "crc": crc,
            "checked": read_ns,
            "folder": source.folder,
            "project": project_of(header_cwd, source.folder),
            "stem": stem,
            "cwd": header_cwd,
            "parent": parent,
            "parent_fp": None if parent_fp is None else list(parent_fp[:4]),
            "parent_ctime": None if parent_fp is None else parent_fp[4],
            "bundle": bundle,
            "session": session_id,
        }
        self.save(force=False)

    @staticmethod
    def _replace(target: str, write: Callable[[str], None]) -> None:
        folder, name = os.path.split(target)
        tmp = _temporary(folder, name)
        try:
            write(tmp)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
