"""The :class:`Catalog` object: one database, the calls that use it, and what to do when it cannot be used."""

from __future__ import annotations

import builtins
import contextlib
import os
import sqlite3
import sys

from .._discovery import SessionInfo, _sorted, all_of, rows_json
from .._errors import CatalogError
from .._paths import cwd_matches, list_folder, normalize_path
from .._record import replace
from .._settings_files import pi_session_dir
from ._candidates import Candidate
from ._list import infos, listed_json
from ._location import keep_old, move_aside, refuse_pi_data, tidy, wipe
from ._refresh import NewCatalog, RefreshReport, current, finish, new_catalog
from ._schema import (
    EVERY_PART,
    LISTING,
    USAGE,
    ProgressCallback,
    Row,
    connect,
    default_catalog_path,
    fts5_available,
    is_movable_default,
    version,
)

# Search and usage are imported by the calls that use them: listing needs neither (nor attrs,
# which their result classes are made with), nor typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterator
    from typing import TypeVar

    from ._search import Role, SearchHit, SessionMatch
    from ._usage import UsageScan

    _T = TypeVar("_T")


class Catalog:
    """A session catalog in one SQLite file (default :func:`default_catalog_path`).

    ``fts=None`` uses FTS5 when SQLite has it; ``fts=False`` always scans stored text (a catalog
    made one way is rebuilt when opened the other way). ``timeout`` is how long to wait for
    another process's write transaction before falling back to reading the files.

    >>> with Catalog() as catalog:  # doctest: +SKIP
    ...     infos = catalog.list("/home/me/project")
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float = 10.0, fts: bool | None = None
    ) -> None:
        self.path = default_catalog_path() if path is None else os.fspath(path)
        self._movable = path is None and is_movable_default(self.path)
        if self.path != ":memory:":
            self.path = os.path.abspath(normalize_path(self.path))
            refuse_pi_data(self.path)
        self.timeout = timeout
        self.fts = fts5_available() if fts is None else fts
        self.last_report = RefreshReport()
        self.last_error: str | None = None
        self.last_notice: str | None = None
        self.last_total: int | None = None
        """How many messages the last :meth:`search` matched in all (it returned the first
        ``limit`` of them)."""
        self._connection: sqlite3.Connection | None = None
        self._checkpoint: threading.Thread | None = None
        self._checkpoint_lock: threading.Lock | None = None
        self._checkpointing = False  # the thread is checkpointing, or will again
        self._checkpoint_again = False  # a commit since the running checkpoint began

    # ------------------------------------------------------------------ lifetime

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (the next call opens it again)."""
        self._settle()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _settle(self) -> None:
        """Wait for the checkpoint :meth:`_checkpointed` started, if any."""
        if self._checkpoint is not None:
            self._checkpoint.join()
            self._checkpoint = None

    @contextlib.contextmanager
    def _checkpointed(self, connection: sqlite3.Connection) -> Iterator[Callable[[], None]]:
        """Run a refresh on ``connection``; if it wrote, copy what it wrote from the write-ahead
        log into the database file in a thread, on a connection of its own, while this one reads
        on: the checkpoint the last connection makes as it closes then has nothing left to copy.
        Its two fsyncs waited for the disk at the end of every first report (about 0.05 s of
        0.8 s), with nothing else to do. Gives what the refresh calls after each of its commits
        (:meth:`_checkpoint_behind`: a long refresh checkpoints behind them too)."""
        changes = connection.total_changes
        yield self._checkpoint_behind
        if connection.total_changes != changes:
            self._checkpoint_behind()

    def _checkpoint_behind(self) -> None:
        """Checkpoint what is committed, in the thread: one running checkpoints once more when
        it is done (a commit since it began). Called by a refresh after each of its commits, so
        that a first build's last checkpoint copies only what its last commits wrote."""
        if self.path == ":memory:":
            return
        import threading

        if self._checkpoint_lock is None:
            self._checkpoint_lock = threading.Lock()
        with self._checkpoint_lock:
            if self._checkpointing:
                self._checkpoint_again = True
                return
            if self._checkpoint is not None:
                self._checkpoint.join()  # (its last checkpoint is made: it is returning)
            thread = threading.Thread(target=self._checkpoints, name=_CHECKPOINT_THREAD)
            self._checkpoint_again = False
            self._checkpointing = True
            try:
                thread.start()
            except RuntimeError:  # no more threads here (a limit, a sandbox): the close checkpoints
                self._checkpointing = False
                return
            self._checkpoint = thread

    def _checkpoints(self) -> None:
        """The checkpoint thread: a checkpoint, and another while one was asked for meanwhile."""
        lock = self._checkpoint_lock
        assert lock is not None
        while True:
            _checkpoint(self.path, self.timeout)
            with lock:
                if not self._checkpoint_again:
                    self._checkpointing = False
                    return
                self._checkpoint_again = False

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            try:
                self._connection, notice = connect(self.path, self.timeout, self.fts, self._movable)
            except sqlite3.DatabaseError as error:
                # a damaged catalog at the default location is a cache: start it again, once; its
                # text (deleted sessions' too) is not kept, unless the user says so
                if not self._movable or isinstance(error, sqlite3.OperationalError):
                    raise
                if keep_old():
                    notice = move_aside(self.path, f"damaged ({error})")
                else:
                    wipe(self.path)
                    notice = (
                        f"the session catalog {self.path} was damaged ({error}): "
                        "removed it and started a new one"
                    )
                self._connection, _ = connect(self.path, self.timeout, self.fts, False)
            if notice:
                self.last_notice = notice
            if self._movable:
                tidy(self.path, version())
        return self._connection

    # ------------------------------------------------------------------ listing

    def list(
        self,
        cwd: str,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
        *,
        text: bool = True,
    ) -> builtins.list[SessionInfo]:
        """Exactly :meth:`SessionManager.list`'s rows, from the catalog.

        ``text=False`` leaves ``all_messages_text`` empty (faster when it is not shown).
        Falls back to reading the files when the database cannot be used (see ``last_error``).
        """
        directory, only_cwd = list_folder(cwd, session_dir)
        try:
            found, _ = self._list([directory], None, on_progress, text)
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from .._discovery import list_sessions

            found = list_sessions(cwd, session_dir, on_progress)
            return found if text else [replace(info, all_messages_text="") for info in found]
        if only_cwd is not None:
            found = [info for info in found if cwd_matches(info.cwd, only_cwd)]
        return _sorted(found)

    def list_all(
        self,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
        *,
        text: bool = True,
    ) -> builtins.list[SessionInfo]:
        """Exactly :meth:`SessionManager.list_all`'s rows, from the catalog (see :meth:`list`)."""
        try:
            directories, root = all_of(session_dir)
            found, mtimes = self._list(directories, root, on_progress, text)
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from .._discovery import list_all_sessions

            found = list_all_sessions(session_dir, on_progress)
            return found if text else [replace(info, all_messages_text="") for info in found]
        return _sorted(found, mtimes)

    def list_json(
        self, cwd: str, session_dir: str | None = None, on_progress: ProgressCallback | None = None
    ) -> bytes:
        """:meth:`list`'s rows as ``pisession ls --json`` prints them (see :meth:`list_all_json`)."""
        directory, only_cwd = list_folder(cwd, session_dir)
        try:
            with self._state([directory], None, on_progress, parts=LISTING) as found:
                try:
                    return listed_json(self._connect(), found, None, only_cwd)
                except RecursionError:  # a header id nested deeper than the json module goes
                    rows = infos(self._connect(), found, True)
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from .._discovery import list_sessions

            return rows_json(list_sessions(cwd, session_dir, on_progress))
        if only_cwd is not None:
            rows = [info for info in rows if cwd_matches(info.cwd, only_cwd)]
        return rows_json(_sorted(rows))

    def list_all_json(
        self, session_dir: str | None = None, on_progress: ProgressCallback | None = None
    ) -> bytes:
        """:meth:`list_all`'s rows as ``pisession ls --all --json`` prints them: the JSON of
        ``[info.to_wire() for info in rows]`` as ``json.dumps(indent=2, ensure_ascii=False)``
        writes it, and a newline, in UTF-8 (a lone surrogate as its escape, ``\\ud800``)::

            sys.stdout.buffer.write(Catalog().list_all_json())

        The catalog keeps each row's JSON from when its file was read, so a warm call copies
        bytes: nothing is parsed, no time formatted (about 0.1 s for 1,000 sessions, where
        building the rows and encoding them takes twice that)."""
        try:
            directories, root = all_of(session_dir)
            with self._state(directories, root, on_progress, parts=LISTING) as found:
                mtimes = _tie_mtimes(found, root)
                try:
                    return listed_json(self._connect(), found, mtimes)
                except RecursionError:  # a header id nested deeper than the json module goes
                    return rows_json(_sorted(infos(self._connect(), found, True), mtimes))
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from .._discovery import list_all_sessions

            return rows_json(list_all_sessions(session_dir, on_progress))

    def refresh(self, session_dir: str | None = None) -> RefreshReport:
        """Bring one folder (default: every project's folders) up to date; raises on database errors."""
        with self._state(*all_of(session_dir), None):
            return self.last_report

    def _usage(
        self,
        session_dir: str | None,
        max_size: int,
        on_progress: ProgressCallback | None,
    ) -> UsageScan:
        """For :func:`pisession.usage.usage_report`: bring one folder (default: every project's)
        up to date and sum its usage per file, model and quarter hour; raises on database errors."""
        from ._usage import UsageDamaged, scan_usage

        def scan() -> UsageScan:
            with self._state(*all_of(session_dir), on_progress, max_size=max_size, parts=USAGE) as found:
                return scan_usage(self._connect(), [row for _, row in found])

        try:
            return scan()
        except UsageDamaged as error:
            # read those files again in full (their usage rows with them), once
            self._connect().executemany(
                "UPDATE files SET row_crc = -1 WHERE path = ?", [(path,) for path in error.paths]
            )
        return scan()

    def _failed(self, error: BaseException) -> None:
        self.last_error = f"{self.path}: {error}"
        self.close()

    def _list(
        self,
        directories: builtins.list[str] | None,
        root: str | None,
        on_progress: ProgressCallback | None,
        text: bool,
    ) -> tuple[builtins.list[SessionInfo], dict[str, float] | None]:
        """The rows, and for a sessions root path → mtime: its ties are broken by mtime first, as
        Pi's listAll reads them (see :func:`_sorted`)."""
        with self._state(directories, root, on_progress, parts=LISTING) as found:
            return infos(self._connect(), found, text), _tie_mtimes(found, root)

    @contextlib.contextmanager
    def _state(
        self,
        directories: builtins.list[str] | None,
        root: str | None,
        on_progress: ProgressCallback | None,
        max_size: int | None = None,
        parts: int = EVERY_PART,
    ) -> Iterator[builtins.list[tuple[Candidate, Row]]]:
        """Bring these folders' rows up to date with the ``parts`` the call needs (the search
        rows wait for a search), and read them and what hangs off them as one state of the
        database (see :func:`current`)."""
        new = None
        if self._connection is None and self.path != ":memory:" and not os.path.exists(self.path):
            # a first build: its workers import while the catalog is made (see new_catalog)
            self._settle()
            new = new_catalog(directories, root)
        try:
            connection = self._connect()
        except BaseException:
            if new is not None and new.workers is not None:
                new.workers.close()
            raise
        try:
            yield self._current(directories, root, on_progress, max_size, parts, new)
        finally:
            finish(connection)

    def _current(
        self,
        directories: builtins.list[str] | None,
        root: str | None,
        on_progress: ProgressCallback | None,
        max_size: int | None = None,
        parts: int = EVERY_PART,
        new: NewCatalog | None = None,
    ) -> builtins.list[tuple[Candidate, Row]]:
        """The refresh itself: returns inside the read transaction :meth:`_state` ends."""
        self._settle()  # (a fork of worker processes needs this process to have no other thread)
        connection = self._connect()
        with self._checkpointed(connection) as after_commit:
            found, self.last_report = current(
                connection,
                self.fts,
                directories,
                root,
                on_progress,
                max_size=max_size,
                parts=parts,
                after_commit=after_commit,
                new=new,
            )
        return found

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        all: bool = False,
        role: Role | None = None,
        limit: int | None = 50,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> builtins.list[SearchHit]:
        """Messages whose text holds every word of ``query`` (quoted: as a phrase), newest first.

        Which sessions are searched:

        - ``all=True``: every project's sessions (Pi's ``listAll``), or those in ``session_dir``;
        - ``session_dir`` without ``cwd``: every session in that folder;
        - otherwise the sessions :meth:`list` gives for ``cwd`` (default: the current folder) and
          ``session_dir``.

        A ``session_dir`` that holds no ``.jsonl`` file but project folders (Pi's ``sessions/``)
        is searched as a root of project folders. ``role`` keeps only ``"user"``, ``"assistant"``
        or ``"tool"`` (tool results) messages. ``limit`` is the most hits returned (None: all).
        Words are matched whole and case-insensitively. A database that cannot be used is
        replaced by one in memory. ``on_progress(done, total)`` follows the files read (the
        first search indexes them all).

        >>> Catalog().search("rounding error", all=True, role="user", limit=5)  # doctest: +SKIP
        """
        terms = self._checked(query, role)
        if limit is not None and limit < 1:
            raise CatalogError(f"limit must be at least 1, not {limit}")
        cwd, session_dir = _where(cwd, all, session_dir)
        found, self.last_total = self._fall_back(
            lambda catalog: catalog._search(terms, cwd, all, role, limit, session_dir, on_progress)
        )
        return found

    def search_sessions(
        self,
        query: str,
        *,
        cwd: str | None = None,
        all: bool = False,
        role: Role | None = None,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> builtins.list[SessionMatch]:
        """The sessions holding messages that match ``query``, each with its number of matching
        messages, the session with the newest match first. Counts without fetching every hit;
        the arguments are :meth:`search`'s.

        >>> [(m.session_id, m.hits) for m in Catalog().search_sessions("timeout", all=True)]  # doctest: +SKIP
        [('0197ab12-...', 4), ('0196f0c3-...', 1)]
        """
        terms = self._checked(query, role)
        cwd, session_dir = _where(cwd, all, session_dir)

        from ._search import scope, session_matches

        def count(catalog: Catalog) -> builtins.list[SessionMatch]:
            connection = catalog._connect()
            try:
                with catalog._checkpointed(connection) as after_commit:
                    covered, catalog.last_report = scope(
                        connection, catalog.fts, cwd, all, session_dir, on_progress, after_commit
                    )
                return session_matches(connection, catalog.fts, covered, terms, role)
            finally:
                finish(connection)

        return self._fall_back(count)

    def _checked(self, query: str, role: Role | None) -> builtins.list[builtins.list[str]]:
        from ._search import check_fts_query
        from ._words import terms as query_terms

        terms = query_terms(query)
        if role not in (None, "user", "assistant", "tool"):
            raise CatalogError(f"unknown role {role!r}: use user, assistant or tool")
        if self.fts:
            check_fts_query(query, terms)
        return terms

    def _fall_back(self, call: Callable[[Catalog], _T]) -> _T:
        """``call`` on this catalog, or on a throwaway one in memory when this one cannot be used."""
        self._settle()  # a search refreshes too (see _current): its workers need a lone thread
        try:
            return call(self)
        except (sqlite3.Error, OSError, CatalogError) as error:
            if self.path == ":memory:":
                raise
            self._failed(error)
            with Catalog(":memory:", fts=self.fts) as scratch:
                return call(scratch)

    def _search(
        self,
        terms: builtins.list[builtins.list[str]],
        cwd: str | None,
        all: bool,
        role: Role | None,
        limit: int | None,
        session_dir: str | None,
        on_progress: ProgressCallback | None,
    ) -> tuple[builtins.list[SearchHit], int]:
        """The hits, and how many messages matched (counted only when the hits reach ``limit``:
        in the scope just refreshed, not after a second refresh)."""
        from ._search import hits, scope, session_matches

        connection = self._connect()
        try:  # the scope's rows and the hits are read in one transaction (see :func:`current`)
            with self._checkpointed(connection) as after_commit:
                covered, self.last_report = scope(
                    connection, self.fts, cwd, all, session_dir, on_progress, after_commit
                )
            found = hits(connection, self.fts, covered, terms, role, limit)
            if limit is None or len(found) < limit:
                return found, len(found)
            matched = session_matches(connection, self.fts, covered, terms, role)
        finally:
            finish(connection)
        return found, sum(match.hits for match in matched)


_CHECKPOINT_THREAD = "pisession-catalog-checkpoint"


def _settle_before_fork() -> None:
    """Before any fork of this process (a library caller's, ``multiprocessing``'s), wait for the
    checkpoint threads still running: a child forked while one is inside SQLite could start with
    a lock it held (SQLite's allocator's, its open files'). Python 3.12 warns of such forks."""
    threading = sys.modules.get("threading")
    if threading is None:
        return
    this = threading.current_thread()
    for thread in threading.enumerate():
        if thread.name == _CHECKPOINT_THREAD and thread.is_alive() and thread is not this:
            thread.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_settle_before_fork)


def _checkpoint(path: str, timeout: float) -> None:
    """A passive checkpoint of the catalog at ``path`` (never made if it is gone): whatever it
    cannot do (another process's checkpoint, a busy or failing disk) is left to the next one."""
    with contextlib.suppress(sqlite3.Error, OSError):
        connection = sqlite3.connect(f"{_file_uri(path)}?mode=rw", uri=True, timeout=timeout)
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            connection.close()


def _file_uri(path: str) -> str:
    """SQLite's URI of the file at the absolute ``path`` (pathlib's ``as_uri`` where paths are
    not POSIX ones; here without importing pathlib, which a first report has no other use for:
    SQLite reads everything but ``%``, ``?`` and ``#`` in a URI's path as it is)."""
    if os.name == "nt":  # pragma: no cover - the catalog's tests run on POSIX systems
        from pathlib import Path

        return Path(path).as_uri()
    return "file://" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _tie_mtimes(found: builtins.list[tuple[Candidate, Row]], root: str | None) -> dict[str, float] | None:
    """For a sessions root, path → mtime: its ties are broken by mtime first, as Pi's listAll
    reads them (see :func:`pisession._discovery.newest_first`)."""
    return None if root is None else {c.path: c.stat.st_mtime for c, _ in found if c.stat is not None}


def _where(cwd: str | None, all: bool, session_dir: str | None) -> tuple[str | None, str | None]:
    """A search given no folder looks where ``pisession search`` and Pi look
    (``$PI_CODING_AGENT_SESSION_DIR``, then ``sessionDir``, then Pi's default), and in a folder
    found that way keeps to ``cwd``'s sessions (default: the current folder's) unless ``all``."""
    if session_dir is not None:
        return cwd, session_dir
    folder = pi_session_dir(cwd)
    if folder is not None and cwd is None and not all:
        cwd = os.getcwd()
    return cwd, folder


# ----------------------------------------------------------------------------------- module API


def search(
    query: str,
    *,
    cwd: str | None = None,
    all: bool = False,
    role: Role | None = None,
    limit: int | None = 50,
    session_dir: str | None = None,
    on_progress: ProgressCallback | None = None,
    catalog: Catalog | None = None,
) -> list[SearchHit]:
    """Search message text across sessions with the default catalog (or ``catalog``), newest first.

    The arguments are :meth:`Catalog.search`'s.

    >>> from pisession.catalog import search
    >>> for hit in search("timeout", all=True, role="user"):  # doctest: +SKIP
    ...     print(hit.session_path, hit.entry_id, hit.snippet)
    """
    own = Catalog() if catalog is None else catalog
    try:
        return own.search(
            query, cwd=cwd, all=all, role=role, limit=limit, session_dir=session_dir, on_progress=on_progress
        )
    finally:
        if catalog is None:
            own.close()


def search_sessions(
    query: str,
    *,
    cwd: str | None = None,
    all: bool = False,
    role: Role | None = None,
    session_dir: str | None = None,
    on_progress: ProgressCallback | None = None,
    catalog: Catalog | None = None,
) -> list[SessionMatch]:
    """The sessions that match ``query``, with hit counts, through the default catalog (or
    ``catalog``); the arguments are :meth:`Catalog.search_sessions`'s.

    >>> from pisession.catalog import search_sessions
    >>> for match in search_sessions("timeout", all=True):  # doctest: +SKIP
    ...     print(match.hits, match.session_path)
    """
    own = Catalog() if catalog is None else catalog
    try:
        return own.search_sessions(
            query, cwd=cwd, all=all, role=role, session_dir=session_dir, on_progress=on_progress
        )
    finally:
        if catalog is None:
            own.close()


def with_catalog(catalog: Catalog | bool, call: Callable[[Catalog], _T]) -> _T:
    """Run ``call`` with ``catalog``, or with the default catalog (opened and closed here) for True.

    A default catalog that cannot be used (``$PISESSION_CATALOG`` inside Pi's data) gives an
    in-memory one, so callers still get the rows.
    """
    if isinstance(catalog, Catalog):
        return call(catalog)
    try:
        own = Catalog()
    except CatalogError:
        own = Catalog(":memory:")
    with own:
        return call(own)
