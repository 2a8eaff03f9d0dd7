"""Usage and cost across sessions: what was spent, on which model, when, in which project.

Every project's sessions, summed per day, week, month, session or project, with Pi's own
attribution (its ``/session`` breakdown) and with what a fork or branched session copied from
its parent counted once, where it was first spent::

    from pisession.usage import usage_report

    report = usage_report("daily", since="2026-11-01", timezone="Europe/Berlin")
    for row in report.rows:
        print(row.key, f"${row.total_cost:.2f}", row.models_used)
    print(report.totals.total_cost)
    json_text = json.dumps(report.to_wire())  # ccusage's field names

Which entries count, and under which model: assistant messages under ``provider/(responseModel or
model)``, ``usage`` entries under their ``provider/model``, usage on tool results, compactions
and branch summaries under ``Tools/summaries``; every branch of every session. A usage belongs
to the day of its entry's timestamp in ``timezone``. The figures come from the session catalog
(:mod:`pisession.catalog`), which reads only what changed since the last call; ``catalog=False``
reads every file instead, with the same figures.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, tzinfo
from datetime import timezone as dt_timezone
from typing import TYPE_CHECKING, Any, Final, Literal, final

from ._errors import CatalogError, UsageQueryError
from ._js import iso_from_ms
from ._paths import cwd_matches, resolve_path
from ._record import Record
from ._settings_files import pi_session_dir

if TYPE_CHECKING:
    from .catalog import Catalog

__all__ = [
    "usage_report",
    "UsageReport",
    "ReportRow",
    "ModelUsage",
    "ReportTotals",
    "SkippedSource",
    "GroupBy",
    "GROUPINGS",
    "MAX_FILE_SIZE",
    "UsageQueryError",
]

GroupBy = Literal["daily", "weekly", "monthly", "session", "project"]
GROUPINGS: Final[tuple[GroupBy, ...]] = ("daily", "weekly", "monthly", "session", "project")
MAX_FILE_SIZE: Final = 1 << 30
"""Files larger than this (1 GiB) are not read: they are named in :attr:`UsageReport.skipped`."""

ProgressCallback = Callable[[int, int], None]
Number = int | float

_WIRE_LIST = {
    "daily": "daily",
    "weekly": "weekly",
    "monthly": "monthly",
    "session": "sessions",
    "project": "projects",
}
_WIRE_KEY = {"daily": "date", "weekly": "week", "monthly": "month", "project": "projectPath"}


def _wire_number(value: Number) -> Number | None:
    # JSON has no NaN or Infinity: null, as JSON.stringify writes them
    return None if isinstance(value, float) and not math.isfinite(value) else value


@final
class ModelUsage(Record):
    """One model's share of a row. ``model_name`` is Pi's key (``anthropic/claude-sonnet-4-5``,
    ``Tools/summaries``); ``cache_creation_tokens`` is Pi's ``cacheWrite``. A number is NaN where
    Pi's own sum is (a usage that lacks a field). ``kind``, in a ``by_kind`` report only, is the
    type of the entries counted: ``"message"`` (assistant and tool result messages),
    ``"compaction"``, ``"branch_summary"`` or ``"usage"`` (an extension's usage entry)."""

    model_name: str
    input_tokens: Number
    output_tokens: Number
    cache_creation_tokens: Number
    cache_read_tokens: Number
    cost: float
    kind: str | None = None

    @property
    def total_tokens(self) -> Number:
        """input + output + cache read + cache creation, in Pi's order (the same sum for floats)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_creation_tokens

    def to_wire(self) -> dict[str, Any]:
        """ccusage's ``modelBreakdowns`` item (with ``"kind"`` in a ``by_kind`` report)."""
        out: dict[str, Any] = {
            "modelName": self.model_name,
            "inputTokens": _wire_number(self.input_tokens),
            "outputTokens": _wire_number(self.output_tokens),
            "cacheCreationTokens": _wire_number(self.cache_creation_tokens),
            "cacheReadTokens": _wire_number(self.cache_read_tokens),
            "cost": _wire_number(self.cost),
        }
        if self.kind is not None:
            out["kind"] = self.kind
        return out


@final
class ReportTotals(Record):
    """Token counts and cost summed over rows (or over one row's models)."""

    input_tokens: Number = 0
    output_tokens: Number = 0
    cache_creation_tokens: Number = 0
    cache_read_tokens: Number = 0
    total_cost: float = 0.0

    @property
    def total_tokens(self) -> Number:
        """input + output + cache read + cache creation, in Pi's order (the same sum for floats)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_creation_tokens

    def to_wire(self) -> dict[str, Any]:
        """ccusage's ``totals`` object."""
        return {
            "inputTokens": _wire_number(self.input_tokens),
            "outputTokens": _wire_number(self.output_tokens),
            "cacheCreationTokens": _wire_number(self.cache_creation_tokens),
            "cacheReadTokens": _wire_number(self.cache_read_tokens),
            "totalTokens": _wire_number(self.total_tokens),
            "totalCost": _wire_number(self.total_cost),
        }


@final
class ReportRow(Record):
    """One day, week (its Monday), month, session or project.

    ``key`` is the date (``YYYY-MM-DD``), the week's Monday, the month (``YYYY-MM``), the session
    file's path or the project's path (the sessions' cwd). Session rows also carry the session's
    id, its project and the times of its first and last counted usage (ISO, UTC); the rows of a
    ``by_project`` report carry their project.
    """

    key: str
    totals: ReportTotals
    models: tuple[ModelUsage, ...]
    session_id: str | None = None
    session_file: str | None = None
    project_path: str | None = None
    first_activity: str | None = None
    last_activity: str | None = None

    @property
    def total_cost(self) -> float:
        return self.totals.total_cost

    @property
    def total_tokens(self) -> Number:
        return self.totals.total_tokens

    @property
    def models_used(self) -> tuple[str, ...]:
        """The models' names, most expensive first (each once, in a ``by_kind`` report too)."""
        return tuple(dict.fromkeys(model.model_name for model in self.models))

    def to_wire(self, group_by: GroupBy) -> dict[str, Any]:
        """The row as ccusage writes it for ``group_by``."""
        out: dict[str, Any] = {}
        if group_by == "session":
            out["sessionId"] = self.session_id
            out["sessionFile"] = self.session_file
            out["projectPath"] = self.project_path
            out["firstActivity"] = self.first_activity
            out["lastActivity"] = self.last_activity
        else:
            out[_WIRE_KEY[group_by]] = self.key
            if self.project_path is not None and group_by != "project":  # a by_project report
                out["projectPath"] = self.project_path
        out.update(self.totals.to_wire())
        out["modelsUsed"] = list(self.models_used)
        out["modelBreakdowns"] = [model.to_wire() for model in self.models]
        return out


@final
class SkippedSource(Record):
    """Something the report could not read in full, and why: a file that is not a session (or
    empty, or over :data:`MAX_FILE_SIZE`), a session with damaged lines (the rest of it counts)."""

    path: str
    reason: str


@final
class UsageReport(Record):
    """The rows of :func:`usage_report`, oldest first (sessions by their last usage, projects by
    path), their totals, and what could not be read. ``catalog_error`` says why the catalog was
    not used (the files were then read directly), or is None."""

    group_by: GroupBy
    timezone: str
    rows: tuple[ReportRow, ...]
    totals: ReportTotals
    skipped: tuple[SkippedSource, ...] = ()
    catalog_error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The report as ccusage's JSON: ``{"daily": [...], "totals": {...}}`` (``weekly``,
        ``monthly``, ``sessions``, ``projects`` for the other groupings)."""
        return {
            _WIRE_LIST[self.group_by]: [row.to_wire(self.group_by) for row in self.rows],
            "totals": self.totals.to_wire(),
        }


# ----------------------------------------------------------------------------------- arguments


_RELATIVE = re.compile(r"(\d{1,5})([dwm])")


def _relative(text: str, today: date) -> str | None:
    """``today``, ``this-month``, ``Nd`` / ``Nw`` (the last N days or weeks, today included) or
    ``Nm`` (the last N calendar months, this one included), as the first day they cover."""
    lowered = text.lower()
    if lowered == "today":
        return today.isoformat()
    if lowered in ("this-month", "month"):
        return today.replace(day=1).isoformat()
    if lowered in ("this-week", "week"):
        return (today - timedelta(days=today.weekday())).isoformat()
    found = _RELATIVE.fullmatch(lowered)
    if found is None:
        return None
    count, unit = int(found.group(1)), found.group(2)
    if count < 1:
        raise UsageQueryError(f"a relative period counts at least 1: {text!r}")
    if unit == "m":
        month = today.year * 12 + today.month - 1 - (count - 1)
        return date(month // 12, month % 12 + 1, 1).isoformat()
    days = count * (7 if unit == "w" else 1)
    return (today - timedelta(days=days - 1)).isoformat()


def _date(value: date | str | None, what: str, today: date | None = None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and today is not None:
        relative = _relative(value.strip(), today)
        if relative is not None:
            return relative
    if isinstance(value, datetime):
        raise UsageQueryError(f"{what} must be a date, not a datetime: {value!r}")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        if len(text) == 8 and text.isdigit():  # ccusage's YYYYMMDD
            text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        try:
            if len(text) == 10:
                return date.fromisoformat(text).isoformat()
        except ValueError:
            pass
    relative = " or a period (7d, 2w, 3m, this-month, today)" if today is not None else ""
    raise UsageQueryError(f"{what} is not a date (YYYY-MM-DD or YYYYMMDD){relative}: {value!r}")


def _zone(name: str | None) -> tuple[str, tzinfo | None]:
    """(the zone's name, the zone; None for the local zone, read through the C library)."""
    if name is None:
        return "local", None
    if name.upper() in ("UTC", "Z", "ETC/UTC"):
        return "UTC", dt_timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return name, ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        hint = (
            _zone_hint(name) if _has_zone_data() else " (no time zone data found: install the tzdata package)"
        )
        raise UsageQueryError(f"unknown time zone {name!r}{hint}") from error


def _zone_hint(name: str) -> str:
    """``: did you mean 'Europe/Berlin'?`` for the closest IANA names, or nothing."""
    import difflib
    import zoneinfo

    zones = sorted(zoneinfo.available_timezones())
    by_folded = {zone.casefold(): zone for zone in zones}
    if name.casefold() in by_folded:  # a file system that is case-sensitive: only the case is wrong
        return f": did you mean {by_folded[name.casefold()]!r}?"
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=3, cutoff=0.6)
    if not close:  # the city alone ("Berlin"), or a city misspelt
        cities = {zone.rsplit("/", 1)[-1].casefold(): zone for zone in zones}
        close = [
            z.casefold()
            for z in (cities[c] for c in difflib.get_close_matches(name.casefold(), list(cities), n=3))
        ]
    if not close:
        return ""
    return ": did you mean " + " or ".join(repr(by_folded[c]) for c in close) + "?"


def _has_zone_data() -> bool:
    import zoneinfo

    try:
        return bool(zoneinfo.available_timezones())
    except Exception:  # a broken tzdata install is the same as none
        return False


def _day_function(zone: tzinfo | None) -> Callable[[int], str]:
    """quarter hour (ms // 900,000) → its local date ``YYYY-MM-DD`` in ``zone``, remembered.

    Every UTC offset in use since 1972 is a whole number of quarter hours, so a quarter never
    straddles local midnight; one that would (a historical offset) is filed under the day it
    starts."""
    cache: dict[int, str] = {}

    def day(quarter: int) -> str:
        found = cache.get(quarter)
        if found is None:
            try:
                moment = (
                    datetime.fromtimestamp(quarter * 900, zone)
                    if zone
                    else datetime.fromtimestamp(quarter * 900)
                )
                found = moment.date().isoformat()
            except (OverflowError, OSError, ValueError):
                found = "1970-01-01"  # a time out of Python's range: counted, on a day that shows it
            cache[quarter] = found
        return found

    return day


def _week(day: str) -> str:
    moment = date.fromisoformat(day)
    return (moment - timedelta(days=moment.weekday())).isoformat()


# ----------------------------------------------------------------------------------- the report


def usage_report(
    group_by: GroupBy,
    *,
    cwd: str | os.PathLike[str] | None = None,
    since: date | str | None = None,
    until: date | str | None = None,
    timezone: str | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    catalog: bool | Catalog = True,
    on_progress: ProgressCallback | None = None,
    by_project: bool = False,
    merge_models: Mapping[str, str] | None = None,
    by_kind: bool = False,
) -> UsageReport:
    """Usage and cost of every project's sessions (``cwd``: one project's), grouped by
    ``"daily"``, ``"weekly"``, ``"monthly"``, ``"session"`` or ``"project"``.

    ``since`` and ``until`` are inclusive dates (``date`` or ``"YYYY-MM-DD"``) in ``timezone``
    (an IANA name; default the local zone). ``session_dir``: one folder of sessions instead of
    Pi's per-project folders. ``catalog``: True (the default catalog), a
    :class:`~pisession.catalog.Catalog`, or False to read every file without one.
    ``on_progress(done, total)`` follows the files read. ``since`` also takes a period ending
    today in ``timezone``: ``"7d"`` (the last 7 days, today included), ``"2w"``, ``"3m"`` (this
    month and the two before), ``"this-month"``, ``"this-week"``, ``"today"``. ``by_project``
    splits each day, week or month by project (``ReportRow.project_path``), as ccusage's
    ``daily --instances``. ``merge_models`` maps model names to the name to count them under,
    e.g. ``{"openai/gpt-5-2025-08-07": "openai/gpt-5"}`` for a model whose provider answered
    with a dated ``responseModel``. ``by_kind`` splits each model's share by the type of entry
    that spent it (:attr:`ModelUsage.kind`): a ``Tools/summaries`` share becomes its compactions,
    branch summaries and tool results; the rows and totals are the same. Raises
    :class:`UsageQueryError` for a bad argument (``since`` after ``until``, an unknown time zone,
    with the closest names); unreadable files never raise (see :attr:`UsageReport.skipped`)::

        usage_report("monthly", cwd="/home/me/project").totals.total_cost
        usage_report("daily", since="this-month", by_project=True)
        usage_report("monthly", by_kind=True)  # compactions apart from branch summaries
    """
    if group_by not in GROUPINGS:
        raise UsageQueryError(f"unknown grouping {group_by!r}: use one of {', '.join(GROUPINGS)}")
    if by_project and group_by not in ("daily", "weekly", "monthly"):
        raise UsageQueryError(f"by_project splits daily, weekly or monthly rows, not {group_by!r} ones")
    zone_name, zone = _zone(timezone)
    today = datetime.now(zone).date()
    first = _date(since, "since", today)
    last = _date(until, "until", today)
    if first is not None and last is not None and first > last:
        raise UsageQueryError(f"since ({first}) is after until ({last}): nothing could be counted")
    local_day = _day_function(zone)
    # no folder given: where `pisession usage` and Pi look (one rule, pisession._settings_files)
    folder = os.fspath(session_dir) if session_dir is not None else pi_session_dir()
    project = resolve_path(os.fspath(cwd)) if cwd is not None else None

    from .catalog import Catalog

    catalog_error: str | None = None
    if isinstance(catalog, Catalog):
        scan, skipped = _scan(catalog, folder, on_progress)
    else:
        try:
            own = Catalog() if catalog else Catalog(":memory:")
        except CatalogError as error:
            catalog_error = str(error)
            own = Catalog(":memory:")
        try:
            with own:
                scan, skipped = _scan(own, folder, on_progress)
        except (sqlite3.Error, OSError, CatalogError) as error:
            catalog_error = f"{own.path}: {error}"
            with Catalog(":memory:") as scratch:
                scan, skipped = _scan(scratch, folder, on_progress)
    rows = _rows(group_by, scan, local_day, first, last, project, by_project, merge_models or {}, by_kind)
    total = _sum_totals(row.totals for row in rows)
    return UsageReport(group_by, zone_name, tuple(rows), total, tuple(skipped), catalog_error)


def _scan(
    catalog: Catalog, folder: str | None, on_progress: ProgressCallback | None
) -> tuple[Any, list[SkippedSource]]:
    scan = catalog._usage(folder, MAX_FILE_SIZE, on_progress)
    skipped = [SkippedSource(s.path, s.reason) for s in catalog.last_report.skipped]
    for file_id, lines in sorted(scan.damaged.items()):
        path = scan.sessions[file_id][0]
        skipped.append(SkippedSource(path, f"{lines} damaged line{'s' if lines != 1 else ''} not read"))
    return scan, skipped


class _Sums:
    """Running sums of one model in one row (NaN counted apart: SQLite has none)."""

    __slots__ = ("values", "first", "last")

    def __init__(self) -> None:
        self.values: list[Number] = [0, 0, 0, 0, 0.0]
        self.first: int | None = None
        self.last: int | None = None

    def add(self, group: tuple[Any, ...]) -> None:
        values = self.values
        for i in range(5):
            value = math.nan if group[8 + i] else (group[3 + i] or 0)
            values[i] = values[i] + value
        self.first = group[13] if self.first is None else min(self.first, group[13])
        self.last = group[14] if self.last is None else max(self.last, group[14])


def _rows(
    group_by: GroupBy,
    scan: Any,
    local_day: Callable[[int], str],
    first: str | None,
    last: str | None,
    project: str | None,
    by_project: bool = False,
    merge_models: Mapping[str, str] | None = None,
    by_kind: bool = False,
) -> list[ReportRow]:
    sessions: dict[int, tuple[str, dict[str, Any]]] = scan.sessions
    keep: dict[int, bool] = {}
    rows: dict[str, dict[tuple[str, str | None], _Sums]] = {}
    for group in scan.groups:
        file_id, day = group[0], local_day(group[2])
        kind, _, model_key = group[1].partition("/")  # the catalog's kind_key: the entry's type first
        if (first is not None and day < first) or (last is not None and day > last):
            continue
        if project is not None:
            kept = keep.get(file_id)
            if kept is None:
                cwd = sessions[file_id][1].get("cwd")
                kept = keep[file_id] = isinstance(cwd, str) and cwd_matches(cwd, project)
            if not kept:
                continue
        if group_by == "daily":
            key = day
        elif group_by == "weekly":
            key = _week(day)
        elif group_by == "monthly":
            key = day[:7]
        elif group_by == "session":
            key = str(file_id)
        else:
            cwd = sessions[file_id][1].get("cwd")
            key = cwd if isinstance(cwd, str) else ""
        if by_project:
            cwd = sessions[file_id][1].get("cwd")
            key += "\0" + (cwd if isinstance(cwd, str) else "")
        if merge_models:
            model_key = merge_models.get(model_key, model_key)
        rows.setdefault(key, {}).setdefault((model_key, kind if by_kind else None), _Sums()).add(group)
    out = [_row(group_by, key, models, sessions) for key, models in rows.items()]
    kept_rows = [row for row in out if row.models]
    if group_by == "session":
        kept_rows.sort(key=lambda row: (row.last_activity or "", row.key))
    else:
        kept_rows.sort(key=lambda row: (row.key, row.project_path or ""))
    return kept_rows


def _counts(value: float) -> bool:
    return value > 0  # NaN is not


def _row(
    group_by: GroupBy,
    key: str,
    models: dict[tuple[str, str | None], _Sums],
    sessions: dict[int, tuple[str, dict[str, Any]]],
) -> ReportRow:
    breakdown: list[ModelUsage] = []
    firsts: list[int] = []
    lasts: list[int] = []
    for (name, kind), sums in models.items():
        v = sums.values
        usage = ModelUsage(name, v[0], v[1], v[3], v[2], float(v[4]), kind)
        # Pi drops a model whose cost and tokens are both zero (or NaN) from its breakdown
        if _counts(usage.cost) or _counts(usage.total_tokens):
            breakdown.append(usage)
            if sums.first is not None and sums.last is not None:
                firsts.append(sums.first)
                lasts.append(sums.last)
    breakdown.sort(
        key=lambda m: (-m.cost if not math.isnan(m.cost) else math.inf, m.model_name, m.kind or "")
    )
    totals = _sum_totals(
        ReportTotals(m.input_tokens, m.output_tokens, m.cache_creation_tokens, m.cache_read_tokens, m.cost)
        for m in breakdown
    )
    if group_by != "session":
        period, split, project = key.partition("\0")
        return ReportRow(period, totals, tuple(breakdown), project_path=project if split else None)
    path, header = sessions[int(key)]
    session_id = header.get("id")
    cwd = header.get("cwd")
    return ReportRow(
        path,
        totals,
        tuple(breakdown),
        session_id=session_id if isinstance(session_id, str) else None,
        session_file=path,
        project_path=cwd if isinstance(cwd, str) else None,
        first_activity=iso_from_ms(min(firsts)) if firsts else None,
        last_activity=iso_from_ms(max(lasts)) if lasts else None,
    )


def _sum_totals(parts: Any) -> ReportTotals:
    values: list[Number] = [0, 0, 0, 0, 0.0]
    for part in parts:
        values[0] += part.input_tokens
        values[1] += part.output_tokens
        values[2] += part.cache_creation_tokens
        values[3] += part.cache_read_tokens
        values[4] += part.total_cost
    return ReportTotals(values[0], values[1], values[2], values[3], float(values[4]))


# The names these classes had until pisession.stats' were told apart from them: still
# importable, with a DeprecationWarning.
_DEPRECATED = {"UsageRow": "ReportRow", "UsageTotals": "ReportTotals"}

if TYPE_CHECKING:  # what a type checker sees of them
    UsageRow = ReportRow
    UsageTotals = ReportTotals


def __getattr__(name: str) -> Any:
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(
        f"pisession.usage.{name} is deprecated: use pisession.usage.{new} "
        f"(pisession.stats' per-session figures are StatsRow and StatsTotals)",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
