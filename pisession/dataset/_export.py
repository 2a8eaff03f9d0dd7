"""Which session files to read, and keeping a Parquet folder in step with them.

Layout: ``OUT/<table>/project=<session's cwd, escaped>/bundle-<12 hex>.parquet``, the small
sessions of a project sharing bundles (see "bundles" below), and ``<file stem>.parquet`` for a
large session, one file per table. What each session's rows were made from is remembered in
``OUT/.pisession-dataset.json`` (the manifest), keyed by the source's resolved path: its device,
inode, size, mtime and ctime, the checksum of the bytes read, its parent session's fingerprint,
and its file stem or its bundle. A re-export reads only the sources whose fingerprint moved (or
whose parent's did: ``copied`` depends on it), writes again only their files or bundles, and
removes the rows of sources that are gone. Files are written under a hidden
temporary name in their final folder and renamed into place, so a reader sees the old file or
the new one, never a part; engines skip hidden files.

The manifest, not the catalog, decides what changed: the question is "since this folder was
last written", which the catalog (shared with every ``ls`` and ``search``, refreshed by each)
cannot answer. The comparison itself is the catalog's (``catalog._change.same_file``), racily
clean files included.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import stat
from collections.abc import Generator, Iterable
from typing import Any

import pyarrow as pa

# The Parquet writer and reader that pyarrow.parquet wraps: importing pyarrow.parquet also
# imports pyarrow.fs and its cloud file systems, 27 ms of every export's start (a fifth of a
# re-export of ten small sessions), none of which a local path needs. The files are the same,
# byte for byte (tests/test_dataset_parquet.py compares them with pyarrow.parquet's).
from pyarrow import _parquet

from .._discovery import is_sessions_root, jsonl_names, project_folders
from .._load import open_regular
from .._paths import cwd_matches, default_session_dir_path, get_sessions_dir, normalize_path, resolve_path
from .._settings_files import pi_session_dir
from ..catalog._change import file_crc, same_file
from . import _folder, _workers
from ._folder import MANIFEST, DatasetError
from ._folder import temporary as _temporary
from ._rows import Fingerprint, NotASession, SessionRows, read_identities, read_rows
from ._schema import SCHEMAS, to_table

__all__ = [
    "DatasetError",
    "TABLES",
    "MANIFEST",
    "Scope",
    "Source",
    "select_sources",
    "Failed",
    "Prepared",
    "prepare",
    "Job",
    "Batch",
    "Bundle",
    "run_job",
    "batches",
    "BUNDLE_BYTES",
    "OWN_FILE_BYTES",
    "partition_name",
    "shortened",
    "PARTITION_MAX",
    "file_stem",
    "project_of",
]

TABLES = tuple(SCHEMAS)
LOCK_TIMEOUT = 10.0  # seconds an export waits for another one writing the same folder
# bump when a schema, a column's meaning or the files' layout changes: every file is written
# again (3: small sessions share bundle files)
_FORMAT = 3
_SAVE_EVERY = 2.0  # seconds: an interrupted export keeps what it finished
# Snappy (Parquet's default, read by every engine) took about 30 % less CPU than zstd here for
# files about a third larger. Long unique text gains nothing from a dictionary or min/max
# statistics, which only cost time to build.
_COMPRESSION = "snappy"
_PLAIN = frozenset(("json", "text", "context_text", "arguments", "result_text"))


def project_of(cwd: object, folder: str) -> str:
    """A session's ``project``: what Pi calls the project, the working folder its header names
    (as written), else (a header without one) the name of the folder holding the file."""
    return cwd if isinstance(cwd, str) and cwd else folder


class Source:
    """A session file to read (``path``, as spelled), the name of the folder holding it
    (``folder``: the ``project`` of a session whose header names no cwd), and the file's
    it by, so that one file reached by two spellings (Pi's sessions folder through a link, and
    by its real path) is one source, exported once."""

    __slots__ = ("path", "folder", "key")

    def __init__(self, path: str, folder: str, key: str) -> None:
        self.path = path
        self.folder = folder
        self.key = key


class _Resolver:
    """Resolved paths of files, resolving each folder once and reading it once for the links it
    holds (not one ``lstat`` per file: a re-export of thousands of unchanged sessions is
    mostly such calls)."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}
        self._links: dict[str, frozenset[str]] = {}
        self._inodes: dict[str, tuple[int, dict[str, int]]] = {}

    def folder(self, folder: str) -> str:
        real = self._folders.get(folder)
        if real is None:
            try:
                real = os.path.realpath(folder)
            except (OSError, ValueError):  # a NUL in a name: no file has it, it stays as spelled
                real = folder
            self._folders[folder] = real
        return real

    def _links_in(self, folder: str) -> frozenset[str]:
        links = self._links.get(folder)
        if links is None:
            inodes: dict[str, int] = {}
            device = -1
            try:
                with os.scandir(folder) as entries:
                    found = list(entries)
                links = frozenset(e.name for e in found if e.is_symlink())
                inodes = {e.name: e.inode() for e in found}  # from the listing: no stat per file
                device = os.stat(folder).st_dev
            except (OSError, ValueError):
                links = frozenset()
            self._links[folder] = links
            self._inodes[folder] = (device, inodes)
        return links

    def identity(self, path: str) -> tuple[int, int] | None:
        """The file's device and inode (one file under two names, a hard link, has one), or None
        when unknown."""
        folder, name = os.path.split(path)
        if name in self._links_in(folder):
            stats = _stat(path)
            return None if stats is None else (stats.st_dev, stats.st_ino)
        device, inodes = self._inodes[folder]
        inode = inodes.get(name)
        return None if inode is None or device < 0 else (device, inode)

    def __call__(self, path: str) -> str:
        folder, name = os.path.split(path)
        if name in self._links_in(folder):
            with contextlib.suppress(OSError, ValueError):
                return os.path.realpath(path)
        return os.path.join(self.folder(folder), name)


class Scope:
    """Which manifest rows this run answers for: their sources are deleted if gone. Rows are
    keyed by resolved paths: the folders and root are resolved too."""

    def __init__(self, folders: set[str] | None, root: str | None, cwd: str | None) -> None:
        resolve = _Resolver()
        self.folders = None if folders is None else {resolve.folder(f) for f in folders}
        self.root = None if root is None else resolve.folder(root)
        self.cwd = cwd  # a non-default folder filtered by header cwd, as Pi's list filters it

    def covers(self, key: str) -> bool:
        folder = os.path.dirname(key)
        if self.folders is not None and folder in self.folders:
            return True
        return self.root is not None and os.path.dirname(folder) == self.root

    def selects(self, header_cwd: str | None) -> bool:
        return self.cwd is None or cwd_matches(header_cwd, self.cwd)


def _jsonl(folder: str) -> list[str]:
    try:
        names = sorted(jsonl_names(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names]


def select_sources(
    cwd: str | os.PathLike[str] | None,
    session_dir: str | os.PathLike[str] | None,
    paths: list[str] | None = None,
) -> tuple[list[Source], Scope]:
    """The files to read: ``paths``; else ``cwd``'s sessions (in ``session_dir`` when given,
    keeping those whose header names ``cwd``, as Pi's ``list`` does); else ``session_dir``'s
    files; else every project folder of Pi's sessions folder. A file reached twice (a link
    beside its target, a hard link) is read once, under its first spelling. Nothing is created."""
    if paths is None and session_dir is None:
        session_dir = pi_session_dir()  # where `pisession dataset` and Pi look: one rule
    found, scope = _select(cwd, session_dir, paths)
    resolve = _Resolver()
    sources: dict[str, Source] = {}
    seen: set[tuple[int, int]] = set()
    for path, folder in found:
        key = resolve(path)
        identity = resolve.identity(path)
        if key not in sources and identity not in seen:
            sources[key] = Source(path, folder, key)
            if identity is not None:
                seen.add(identity)
    return list(sources.values()), scope


def _select(
    cwd: str | os.PathLike[str] | None,
    session_dir: str | os.PathLike[str] | None,
    paths: list[str] | None,
) -> tuple[list[tuple[str, str]], Scope]:
    if paths is not None:
        files = [os.path.abspath(os.fspath(p)) for p in paths]
        return [(p, os.path.basename(os.path.dirname(p))) for p in files], Scope(
            {os.path.dirname(p) for p in files}, None, None
        )
    if cwd is not None:
        default = default_session_dir_path(cwd)
        folder = resolve_path(session_dir) if session_dir else default
        filtered = session_dir is not None and folder != resolve_path(default)
        scope = Scope({folder}, None, resolve_path(cwd) if filtered else None)
        return [(p, os.path.basename(folder)) for p in _jsonl(folder)], scope
    if session_dir is not None:
        folder = resolve_path(normalize_path(os.fspath(session_dir)))
        if not is_sessions_root(folder):
            return [(p, os.path.basename(folder)) for p in _jsonl(folder)], Scope({folder}, None, None)
        root = folder  # no .jsonl of its own but project folders: a sessions root, as `ls --all` reads it
    else:
        root = resolve_path(get_sessions_dir())
    try:
        folders = sorted(project_folders(root))
    except OSError:
        folders = []
    sources = [(p, os.path.basename(f)) for f in folders for p in _jsonl(f)]
    # a project folder that is a link to elsewhere: its files resolve outside the root
    return sources, Scope(set(folders), root, None)


# ----------------------------------------------------------------------------- names

# What Hive (and Spark, which reads the names back) escapes in a partition value, as %XX.
_HIVE_UNSAFE = re.compile(r'["#%\'*/:=?\\\x00-\x1f\x7f{\[\]^]')
_SAFE_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)


# Bytes a partition folder's name may take: file systems allow 255 per name; the rest is room
# for what another tool adds to a name it copies (rsync's ".name.XXXXXX", a sync client's suffix).
PARTITION_MAX = 200
# Hive's name for a null value: every engine reads a folder of that name as null, escaped or not.
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def partition_name(project: str) -> str:
    """``project=<value>`` with the value escaped as Hive escapes partition values (a folder
    name holding ``=``, ``%`` or ``/`` reads back as itself in DuckDB, Polars and Spark).

    A name that would not fit in :data:`PARTITION_MAX` bytes (a folder name of 248 bytes or more,
    or one with many escaped characters) is cut, and ``~`` and a hash of the whole name are added,
    as to Hive's name for null: the manifest maps each such value back (:func:`shortened`)."""
    return _partition(project)[0]


# A lone surrogate that stands for no byte of a file name: an escaped one in a header's JSON
# (``"cwd": "/home/\ud800x"``), which Pi keeps and no encoding writes. The tables hold it as
# U+FFFD (``_schema._clean``), and so does its partition's name.
_LONE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


@functools.lru_cache(maxsize=4096)
def _partition(project: str) -> tuple[str, bool]:
    text = _LONE_SURROGATE.sub("\ufffd", project)
    escaped = _HIVE_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)
    escaped = escaped.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    name = f"project={escaped}"
    if len(name.encode("utf-8")) <= PARTITION_MAX and project != _HIVE_NULL:
        return name, False
    # the whole value, each lone surrogate kept apart from U+FFFD: two projects, two names
    raw = project.encode("utf-8", "surrogateescape" if text == project else "surrogatepass")
    digest = _sha256_hex(raw)[:16]
    room = PARTITION_MAX - len("project=~") - len(digest)
    cut = escaped.encode("utf-8")[:room].decode("utf-8", "ignore")  # never half a character
    cut = re.sub(r"%[0-9A-F]?$", "", cut)  # nor half an escape
    return f"project={cut}~{digest}", True


def shortened(projects: Iterable[str]) -> dict[str, str]:
    """The ``project`` values an engine reads that are not their folder's name (cut, or Hive's
    null), each mapped to the name: what the manifest's ``partitions`` records."""
    out = {}
    for project in projects:
        name, cut = _partition(project)
        if cut:
            value = re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), name[len("project=") :])
            out[value] = project
    return out


def file_stem(session_id: str) -> str:
    """A file name for a session id: the id itself when Pi would accept it (letters, digits,
    ``.``, ``_``, ``-``, first and last a letter or digit; at most 128 characters), else
    ``id-`` and a hash of it, so that a hostile id never names a path."""
    if len(session_id) <= 128 and _SAFE_ID.fullmatch(session_id):
        return session_id
    digest = _sha256_hex(session_id.encode("utf-8", "surrogatepass"))[:32]
    return f"id-{digest}"


def _owner_key(project: str, stem: str) -> tuple[str, str]:
    # case-folded: on macOS and Windows two names equal but for case are one file
    return (partition_name(project).lower(), stem.lower())


def _preferred(resolved: bool, row: dict[str, Any]) -> tuple[bool, bool, int]:
    """Which of two manifest rows of one file stays: keyed by its resolved path, with files, the
    shorter stem (the hashed one was named after the other)."""
    stem = row.get("stem")
    return resolved, stem is not None, -len(stem) if isinstance(stem, str) else 0


def _path_hash(path: str) -> str:
    return _sha256_hex(path.encode("utf-8", "surrogatepass"))[:12]


def _sha256_hex(data: bytes) -> str:
    # imported here: only an unsafe id, a cut partition name or two files of one name need it,
    # and hashlib loads OpenSSL (about 2 ms of every export's start)
    import hashlib

    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- fingerprints


def _stat(path: str) -> os.stat_result | None:
    try:
        stats = os.stat(path)
    except (OSError, ValueError):
        return None
    return stats if stat.S_ISREG(stats.st_mode) else None


def _fingerprint(path: str) -> Fingerprint | None:
    stats = _stat(path)
    if stats is None:
        return None
    return (stats.st_dev, stats.st_ino, stats.st_size, stats.st_mtime_ns, stats.st_ctime_ns)


def _as_read(
    stats: os.stat_result, fp: object, ctime: object, checked: int, *, racy_too: bool = False
) -> bool:
    """Whether a file is as a manifest row recorded it (``fp``: device, inode, size and mtime;
    ``ctime``), by the catalog's rule; a row written before ``ctime`` was recorded never is."""
    if not (isinstance(fp, list) and len(fp) == 4 and all(type(n) is int for n in fp) and type(ctime) is int):
        return False
    dev, ino, size, mtime_ns = fp
    return same_file(stats, dev, ino, size, mtime_ns, ctime, checked, racy_too=racy_too)


def _crc_of(path: str, size: int) -> int | None:
    """The CRC-32 of a file's bytes (``size`` and one more: a file grown since shows), as
    :func:`~pisession.catalog._change.file_crc` reads them; None when it cannot be read."""
    try:
        with open_regular(path) as handle:
            return file_crc(handle, size + 1)
    except OSError:
        return None


# ----------------------------------------------------------------------------- writing


@functools.lru_cache(maxsize=8)
def _parent_identities(path: str, fingerprint: Fingerprint | None) -> list[dict[str, Any]]:
    return read_identities(path)[0] if fingerprint is not None else []


def _parents(path: str) -> tuple[list[dict[str, Any]], Fingerprint | None]:
    # the fingerprint taken before the read is the one recorded: a parent changed meanwhile
    # shows as changed at the next run, never as clean
    fingerprint = _fingerprint(path)
    return _parent_identities(path, fingerprint), fingerprint


class Prepared:
    """A session read, with what its manifest row needs (what a worker process hands back: plain
    values only); ``files``: its own five files under temporary names in their folders (a large
    session, or one that cannot share a bundle), else empty and ``bundle`` the index of the
    batch's bundle holding its rows; no files and no bundle when the session lies outside the
    run's cwd."""

    __slots__ = (
        "session_id",
        "cwd",
        "parent",
        "parent_fp",
        "fingerprint",
        "read_ns",
        "files",
        "crc",
        "project",
        "bundle",
    )

    def __init__(
        self,
        session_id: str,
        cwd: str | None,
        parent: str | None,
        fingerprint: Fingerprint,
        read_ns: int,
        files: dict[str, str],
        parent_fp: Fingerprint | None = None,
        crc: int = 0,
        project: str = "",
    ) -> None:
        self.crc = crc
        self.project = project
        self.session_id = session_id
        self.cwd = cwd
        self.parent = parent
        self.parent_fp = parent_fp
        self.fingerprint = fingerprint
        self.read_ns = read_ns
        self.files = files
        self.bundle: int | None = None

    def discard(self) -> None:
        _discard(self.files)


def _discard(files: dict[str, str]) -> None:
    for tmp in files.values():
        with contextlib.suppress(OSError):
            os.unlink(tmp)


class Failed:
    """A source that gave no rows: not a session (with the fingerprint it was read at), or unreadable."""

    __slots__ = ("reason", "fingerprint", "read_ns", "crc")

    def __init__(
        self, reason: str, fingerprint: Fingerprint | None = None, read_ns: int = 0, crc: int = 0
    ) -> None:
        self.reason = reason
        self.crc = crc
        self.fingerprint = fingerprint
        self.read_ns = read_ns


def _read(path: str, folder: str) -> tuple[Prepared | Failed, SessionRows | None]:
    try:
        session = read_rows(path, parent_of=_parents)
    except NotASession as error:
        failed = Failed("not a Pi session (no session header)", error.fingerprint, error.read_ns, error.crc)
        return failed, None
    except OSError as error:
        return Failed(f"cannot be read: {error.strerror or error}"), None
    return _prepared(session, {}, project_of(session.cwd, folder)), session


def _write_own(out: str, project: str, tables: dict[str, pa.Table]) -> dict[str, str]:
    """Write one session's (or bundle's) five tables under temporary names in their final folders."""
    files: dict[str, str] = {}
    try:
        for table in TABLES:
            partition = _folder.folder(out, table, partition_name(project), create=True)
            tmp = _temporary(partition, "session.parquet")
            files[table] = tmp
            _write_parquet(tables[table], tmp)
    except BaseException:
        _discard(files)
        raise
    return files


def prepare(path: str, folder: str, out: str, cwd: str | None = None) -> Prepared | Failed:
    """Read one session and write its five tables, files of its own, under temporary names in
    their final folders (in a worker process, or in this one). A session whose header names
    another cwd than ``cwd`` (:attr:`Scope.cwd`) is left out of the selection: none of its
    files are written."""
    result, session = _read(path, folder)
    if session is None or isinstance(result, Failed):
        return result
    if cwd is not None and not cwd_matches(session.cwd, cwd):
        return result
    result.files = _write_own(out, result.project, {t: to_table(t, session.columns[t]) for t in TABLES})
    return result


def _prepared(session: SessionRows, files: dict[str, str], project: str) -> Prepared:
    return Prepared(
        session.session_id,
        session.cwd,
        session.parent,
        session.fingerprint,
        session.read_ns,
        files,
        session.parent_fp,
        session.crc,
        project,
    )


# ----------------------------------------------------------------------------- bundles
#
# Small sessions share their files: a bundle holds the rows of up to BUNDLE_BYTES of session
# files of one project, in one file per table (``bundle-<12 hex>.parquet``), as many sessions
# as fit; a session of OWN_FILE_BYTES or more keeps files of its own (``<session id>.parquet``).
# Thousands of tiny Parquet files cost more than the rows in them (each file's writer, footer
# and rename); a bundle bounded in bytes keeps a re-export cheap: an appended session rewrites
# its bundle, the other sessions' rows taken back from the bundle's files, not re-read.

# session-file bytes a bundle gathers: a re-export of an appended session writes at most this
# again. Measured on 1,000 sessions: 1 MB made the cold export about 10 % cheaper in CPU and a
# re-export after 10 scattered appends about 1.4 x dearer; 256 KB cost the cold export of the
# larger sessions (~100 KB each) 20 % more CPU for no clear gain in the re-export.
BUNDLE_BYTES = 512 << 10
OWN_FILE_BYTES = 256 << 10  # a session this large gets files of its own
_BUNDLE_OWNER = "\x00bundle"  # the owner of a bundle's name in Exporter._owners: never a path


def _size(source: Source) -> int:
    stats = _stat(source.path)
    return 0 if stats is None else stats.st_size


def _header_project(source: Source) -> str:
    """The project a session file's header names (its first line), to bundle it with its
    project's sessions before it is read; a guess: the read decides."""
    try:
        with open_regular(source.path) as handle:
            line = handle.readline(1 << 16)
        header = json.loads(line)
    except (OSError, ValueError, RecursionError):
        return source.folder
    return project_of(header.get("cwd") if isinstance(header, dict) else None, source.folder)


def bundle_name() -> str:
    return f"bundle-{os.urandom(6).hex()}"


def _bundled(session_id: str, size: int, own_from: int) -> bool:
    # an id that is its own file name (no hash, no lone surrogate): its rows are found by it
    return size < own_from and file_stem(session_id) == session_id


class Job:
    """What one worker does: read ``sources`` and write them into bundles (and large sessions
    into files of their own); with ``bundle`` (a bundle of ``project``), write that bundle again
    with them and the rows of ``keep`` (member source -> (session id, folder)) taken from its
    files. ``members``: the bundle's sessions among ``sources`` (source -> session id), whose
    rows also stay when they cannot be read again."""

    __slots__ = ("out", "cwd", "project", "bundle", "keep", "members", "sources", "own_from")

    def __init__(
        self,
        out: str,
        cwd: str | None,
        project: str,
        bundle: str | None,
        keep: dict[str, tuple[str, str]],
        members: dict[str, str],
        sources: list[Source],
    ) -> None:
        self.out = out
        self.cwd = cwd
        self.project = project
        self.bundle = bundle
        self.keep = keep
        self.members = members
        self.sources = sources
        self.own_from = OWN_FILE_BYTES  # read here: a worker process has the module's default


class Bundle:
    """A bundle's five files under temporary names: ``name`` the bundle they replace, or None (a
    new bundle, named when installed)."""

    __slots__ = ("project", "name", "files")

    def __init__(self, project: str, name: str | None, files: dict[str, str]) -> None:
        self.project = project
        self.name = name
        self.files = files


class Batch:
    """What a job gives back: each source and what it gave (a :class:`Prepared` names its
    bundle by index), the bundles written, and the job's bundle (project, name) when it was left
    with no rows (its files go)."""

    __slots__ = ("results", "bundles", "emptied")

    def __init__(
        self,
        results: list[tuple[Source, Prepared | Failed]],
        bundles: list[Bundle],
        emptied: tuple[str, str] | None,
    ) -> None:
        self.results = results
        self.bundles = bundles
        self.emptied = emptied

    def discard(self) -> None:
        for _, result in self.results:
            if isinstance(result, Prepared):
                result.discard()
        for bundle in self.bundles:
            _discard(bundle.files)


def _rows_of(table: pa.Table, ids: set[str]) -> pa.Table:
    """The rows of ``table`` whose session is one of ``ids``, in order: each run of them a slice
    (a bundle holds each session's rows together), joined. Not Arrow's filter, whose compute
    module took 28 ms to import, a seventh of the call that re-exports ten small sessions."""
    pieces = []
    start = -1
    for at, session_id in enumerate(table.column("session_id").to_pylist()):
        if session_id in ids:
            if start < 0:
                start = at
        elif start >= 0:
            pieces.append(table.slice(start, at - start))
            start = -1
    if start >= 0:
        pieces.append(table.slice(start))
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _read_bundle(out: str, project: str, name: str) -> dict[str, pa.Table]:
    """A bundle's five tables, each with its schema; raises
    (``OSError``, Arrow's errors, :class:`DatasetError`) when a file is missing, not a regular
    file, or not as pisession writes it."""
    tables = {}
    for table in TABLES:
        where = _folder.folder(out, table, partition_name(project))
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(os.path.join(where, f"{name}.parquet"), flags)
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise DatasetError(f"{name}.parquet is not a regular file")
            reader = _parquet.ParquetReader()
            reader.open(handle)
            read = reader.read_all(use_threads=False)
        if not read.schema.equals(SCHEMAS[table]):
            raise DatasetError(f"{name}.parquet does not have the {table} table's columns")
        if not read.schema.equals(SCHEMAS[table], check_metadata=True):  # another writer's metadata
            read = pa.Table.from_arrays(read.columns, schema=SCHEMAS[table])
        tables[table] = read
    return tables


def run_job(job: Job) -> Batch:
    """Do one :class:`Job` (in a worker process, or in this one)."""
    keep = dict(job.keep)
    sources = list(job.sources)
    refill: set[str] = set()  # sessions kept, read again: written whatever the run's cwd
    old: dict[str, pa.Table] | None = None
    if job.bundle is not None and (keep or job.members):
        try:
            old = _read_bundle(job.out, job.project, job.bundle)
        except (OSError, pa.ArrowException, DatasetError):
            # its files are not as written: the sessions kept from them are read again
            sources += [Source(key, folder, key) for key, (_, folder) in keep.items()]
            refill, keep = set(keep), {}
    read: list[tuple[Source, Prepared | Failed, SessionRows | None]] = []
    for source in sources:
        result, session = _read(source.path, source.folder)
        checked = job.cwd is not None and source.key not in refill
        if session is not None and checked and not cwd_matches(session.cwd, job.cwd or ""):
            session = None  # outside the selection: nothing written
        member = job.members.get(source.key)
        # unreadable now, or outside the selection: its rows are left as they were
        unread = not isinstance(result, Failed) or result.fingerprint is None
        if session is None and member is not None and old is not None and unread:
            keep[source.key] = (member, source.folder)
        read.append((source, result, session))
    results: list[tuple[Source, Prepared | Failed]] = []
    parts: dict[str, dict[str, list[pa.Table]]] = {}
    ids: dict[str, set[str]] = {job.project: {i for i, _ in keep.values()}}
    try:
        for source, result, session in read:
            results.append((source, result))
            if session is None or isinstance(result, Failed):
                continue
            tables = {t: to_table(t, session.columns[t]) for t in TABLES}
            taken = ids.setdefault(result.project, set())
            size = result.fingerprint[2]
            if _bundled(result.session_id, size, job.own_from) and result.session_id not in taken:
                taken.add(result.session_id)
                group = parts.setdefault(result.project, {t: [] for t in TABLES})
                for table in TABLES:
                    group[table].append(tables[table])
                result.bundle = list(parts).index(result.project)
            else:
                result.files = _write_own(job.out, result.project, tables)
        kept = {i for i, _ in keep.values()}
        if kept and old is not None:
            group = parts.setdefault(job.project, {t: [] for t in TABLES})
            for table in TABLES:
                group[table].insert(0, _rows_of(old[table], kept))
        bundles = []
        for project, group in parts.items():
            files = _write_own(job.out, project, {t: pa.concat_tables(group[t]) for t in TABLES})
            name = job.bundle if project == job.project else None
            bundles.append(Bundle(project, name, files))
    except BaseException:
        Batch(results, [], None).discard()
        raise
    emptied = (job.project, job.bundle) if job.bundle is not None and job.project not in parts else None
    return Batch(results, bundles, emptied)


def batches(jobs: list[Job], workers: int | None, sessions: int) -> Generator[Batch, None, None]:
    """Each job done: in this process, or (``workers`` > 1, or None and enough sessions to be
    worth starting processes) in a pool of worker processes, the largest jobs first."""
    count = _worker_count(sessions, workers, len(jobs))
    if count <= 1:
        threads = _thread_count(workers, len(jobs))
        if threads <= 1:
            yield from map(run_job, jobs)
        else:
            yield from _in_threads(jobs, threads)
        return
    import concurrent.futures
    import multiprocessing

    # forkserver (spawn where there is none): a fork of a process that has started Arrow's
    # threads could inherit a held lock
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    started_server = method == "forkserver" and not _helpers_running()
    try:
        # each worker ends with this process, also when it is killed (nothing may go on writing)
        with concurrent.futures.ProcessPoolExecutor(
            count, mp_context=context, initializer=_workers.start, initargs=(os.getpid(),)
        ) as pool:
            try:
                pending = [pool.submit(run_job, job) for job in jobs]
                for future in concurrent.futures.as_completed(pending):
                    yield future.result()
            except BaseException:
                _workers.stop(pool)  # now: a worker in a long session must not write on after the lock
                raise
    finally:
        if started_server:
            _stop_forkserver()


def _thread_count(workers: int | None, jobs: int) -> int:
    """Threads for jobs too few for worker processes (``workers`` None: chosen here; a number
    is the caller's: one process, one thread): Arrow writes and reads Parquet without Python's
    lock, so two bundles are written side by side (a re-export of ten small sessions writes
    and reads 50 files: 0.1 s of its 0.15 s)."""
    return 1 if workers is not None else _parallel(jobs)


def _in_threads(jobs: list[Job], threads: int) -> Generator[Batch, None, None]:
    """Each job done, in order, by a pool of ``threads``; on an error (or when the caller stops
    early) the jobs not begun are dropped and those running are waited for: none writes after."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="pisession-dataset")
    try:
        yield from pool.map(run_job, jobs)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _helpers_running() -> bool:
    """Whether multiprocessing's forkserver or resource tracker already runs (a caller's)."""
    from multiprocessing import forkserver, resource_tracker

    return (
        getattr(forkserver._forkserver, "_forkserver_pid", None) is not None
        or getattr(resource_tracker._resource_tracker, "_pid", None) is not None
    )


def _stop_forkserver() -> None:
    """End the forkserver this export started, and the resource tracker it started, with it:
    else they outlive the command by a moment (until they notice their parent gone), processes
    left behind. Ones a caller started before are theirs, left running."""
    from multiprocessing import forkserver, resource_tracker

    # CPython 3.8+; private, so guarded: without them the two end a moment later by themselves
    for helper in (forkserver._forkserver, resource_tracker._resource_tracker):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()


_PARALLEL_FROM = 32  # sessions to write before worker processes pay for their start (~0.3 s each)


def _worker_count(sessions: int, workers: int | None, jobs: int) -> int:
    if workers is not None:
        return max(1, min(workers, jobs))
    if sessions < _PARALLEL_FROM:
        return 1
    return _parallel(jobs)


def _parallel(jobs: int) -> int:
    """Workers or threads for ``jobs`` when the count is pisession's to choose: one a CPU, at
    most four, never more than the jobs (one for none)."""
    return max(1, min(os.cpu_count() or 1, 4, jobs))


@functools.cache
def _encodings(names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name not in _PLAIN]


def _write_parquet(table: pa.Table, path: str) -> None:
    """``pyarrow.parquet.write_table(table, path, compression=..., use_dictionary=...,
    write_statistics=...)``, its other settings (format 2.6, data pages 1.0, the Arrow schema
    stored) being the writer's defaults."""
    keyed = _encodings(tuple(table.column_names))
    writer = _parquet.ParquetWriter(
        path,
        table.schema,
        compression=_COMPRESSION,
        use_dictionary=keyed,
        write_statistics=keyed,
        writer_engine_version="V2",  # what pyarrow.parquet passes; the writer has no default
    )
    try:
        writer.write_table(table)
    finally:
        writer.close()


def _write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def read_source(source: Source) -> SessionRows:
    """The rows of one source (``NotASession``, ``OSError`` as :func:`read_rows` raises them)."""
    return read_rows(source.path, parent_of=_parents)
