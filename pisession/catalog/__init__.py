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

- its identity (device, inode), size, mtime and ctime are unchanged: not opened;
- same identity, larger, and the bytes it had before are still there (their CRC-32 is the one
  kept): only the new lines are parsed, from the end of the last whole line read before;
- anything else (new, replaced, truncated, rewritten in place): read in full;
- gone: its row and search rows are deleted.

Listing keeps the picker rows; the search rows (each message's text in an FTS5 index, most of a
first build's cost) are caught up by the first search after a change, from where they stopped.
A file that is not a session, or cannot be read, is skipped and named in :class:`RefreshReport`.
A database that cannot be used (locked past the timeout, corrupt, read-only, not ours, a row
that fails its checksum) never gives wrong rows: :meth:`Catalog.list` then reads the files as Pi does, and
:meth:`Catalog.search` builds a throwaway catalog in memory. Several processes may refresh one
catalog at once: each file is brought up to date inside a write transaction that first re-reads
its row, so a file another process just caught up is not read twice; a call then reads its rows
and what hangs off them (text, search rows, usage sums) in one read transaction, so another
process's rebuild or catch-up is never seen half. The default database is one file per schema and
Unicode version (installs on several Pythons keep one each), and catalogs nothing will use again
are overwritten and removed (see :mod:`._location`).

The package's modules, bottom to top: ``_words`` (tokens, matching, snippets), ``_location``
(where the file lives, and that it is ours), ``_schema`` (the database and its rows), ``_refresh``
(bringing rows up to date), ``_list`` and ``_search`` (reading them), ``_catalog`` (the
:class:`Catalog` object and the module-level calls).
"""

from __future__ import annotations

# Every name is imported on first use: the dataset export needs the change rule (`_change`)
# and the timestamp parser (`_usage`), not the catalog and its SQLite; `pisession ls` does not
# search, and the search's result classes bring attrs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._catalog import Catalog, search, search_sessions, with_catalog
    from ._location import ENV_CATALOG
    from ._refresh import RefreshReport, SkippedFile
    from ._schema import default_catalog_path, fts5_available
    from ._search import Role, SearchHit, SessionMatch, format_hit

_HOMES = {
    "Catalog": "_catalog",
    "search": "_catalog",
    "search_sessions": "_catalog",
    "with_catalog": "_catalog",
    "ENV_CATALOG": "_location",
    "RefreshReport": "_refresh",
    "SkippedFile": "_refresh",
    "default_catalog_path": "_schema",
    "fts5_available": "_schema",
    "Role": "_search",
    "SearchHit": "_search",
    "SessionMatch": "_search",
    "format_hit": "_search",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
