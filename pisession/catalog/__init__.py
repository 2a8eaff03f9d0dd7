"""The session catalog: Pi's session list and full-text search without reading every file each time.

Pi's picker (``SessionManager.list``) reads every session in full on every call. The catalog keeps
what it reads in one SQLite database (standard library ``sqlite3``, WAL mode) in a cache folder
outside Pi's data, and on each call reads only what changed since::

    from pisession.catalog import Catalog

    with Catalog() as catalog:
        for info in catalog.list_all():
            print(info.modified, info.first_message)
        for hit in catalog.search("invoice rounding", all=True):
            print(hit.session_path, hit.entry_id, hit.snippet)

How a file is brought up to date (SPEC §7 defines the rows, :mod:`pisession._discovery` builds them):

- its identity (device, inode), size and mtime are unchanged: not opened;
- same identity, larger, and the bytes it had before are still there (first and last 512 bytes
  compared): only the new lines are read, from the end of the last whole line read before;
- anything else (new, replaced, truncated, rewritten in place): read in full;
- gone: its row and search rows are deleted.

Listing keeps the picker rows; the search rows (each message's text in an FTS5 index, most of a
first build's cost) are caught up by the first search after a change, from where they stopped.
A file that is not a session, or cannot be read, is skipped and named in :class:`RefreshReport`.
A database that cannot be used (locked past the timeout, corrupt, read-only, not ours) never
gives wrong rows: :meth:`Catalog.list` then reads the files as Pi does, and
:meth:`Catalog.search` builds a throwaway catalog in memory. Several processes may refresh one
catalog at once: each file is brought up to date inside a write transaction that first re-reads
its row, so a file another process just caught up is not read twice.

The package's modules, bottom to top: ``_words`` (tokens, matching, snippets), ``_schema`` (the
database and its rows), ``_refresh`` (bringing rows up to date), ``_list`` and ``_search`` (reading
them), ``_catalog`` (the :class:`Catalog` object and the module-level calls).
"""

from __future__ import annotations

from ._catalog import Catalog, search, search_sessions, with_catalog
from ._location import ENV_CATALOG, default_catalog_path
from ._refresh import RefreshReport, SkippedFile
from ._schema import fts5_available
from ._search import Role, SearchHit, SessionMatch, format_hit

__all__ = [
    "Catalog",
    "RefreshReport",
    "SkippedFile",
    "SearchHit",
    "SessionMatch",
    "search_sessions",
    "Role",
    "search",
    "with_catalog",
    "format_hit",
    "default_catalog_path",
    "fts5_available",
    "ENV_CATALOG",
]
