"""pisession.dataset: the output folder is not trusted and an export never outlives itself.

A manifest not as pisession writes it is a DatasetError naming it (nothing deleted, inside or
outside the folder); nothing is written or deleted through a symbolic link; the start-up
clean-up removes only pisession's own temporaries; an export killed (SIGKILL, for real, in a
subprocess) at any point is resumed by the next run into what a clean export writes; and no
worker, forkserver or resource tracker outlives a ``pisession dataset`` killed by SIGKILL or
SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
pq = pytest.importorskip("pyarrow.parquet")

from pisession.cli.main import main as cli_main  # noqa: E402
from pisession.dataset import MANIFEST, DatasetError, _export, write_parquet  # noqa: E402
from pisession.dataset._export import file_stem, partition_name  # noqa: E402
from pisession.dataset._exporter import Exporter  # noqa: E402
from pisession.dataset._folder import STEM  # noqa: E402

PART = partition_name("/work")  # the sessions' cwd: their project and partition

REPO = Path(__file__).resolve().parent.parent
LINUX = sys.platform.startswith("linux")


def _session(path: Path, session_id: str, entries: int = 1, text: int = 10) -> None:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/work",
        }
    ]
    parent = None
    for n in range(entries):
        entry_id = f"{n:08x}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": f"{n} " + "x" * text, "timestamp": 1735689601000},
            }
        )
        parent = entry_id
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _corpus(root: Path, sessions: int = 6, entries: int = 3, text: int = 10) -> Path:
    """A sessions folder of one project (files written a minute ago: see tests/test_dataset.py)."""
    folder = root / "--proj--"
    folder.mkdir(parents=True)
    for n in range(sessions):
        _session(folder / f"s{n:03d}.jsonl", f"s{n:03d}", entries, text)
    past = time.time() - 60
    for path in folder.iterdir():
        os.utime(path, (past, past))
    return root


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file under ``root`` with its bytes (links: their target), folders by name."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_file():
            found[key] = path.read_bytes()
        else:
            found[key] = "dir"
    return found


def _tables(out: Path) -> dict[str, list[str]]:
    """Each table's rows in each partition (as JSON, in order: a row twice shows), whatever
    files hold them (bundles are named at random): what a clean export is compared on."""
    found: dict[str, list[str]] = {}
    for path in sorted(out.rglob("*.parquet")):
        rows = found.setdefault(str(path.parent.relative_to(out)), [])
        rows += [json.dumps(row, sort_keys=True, default=str) for row in pq.read_table(path).to_pylist()]
    return {where: sorted(rows) for where, rows in found.items()}


def _leftovers(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.name.endswith((".tmp", ".pending")))


# --------------------------------------------------------------------------- the manifest


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path]:
    """A sessions root exported once: (its folder of sessions, the output folder)."""
    root = _corpus(tmp_path / "sessions")
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=root).written == 6
    return root, out


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / MANIFEST).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_a_hostile_stem_in_the_manifest_deletes_nothing_outside_the_folder(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    root, out = exported
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.parquet").write_bytes(b"the user's own file")
    data = _manifest(out)
    row = dict(next(iter(data["sessions"].values())))
    # a session that is gone: its files are deleted by the next export
    data["sessions"][str(root / "--proj--" / "gone.jsonl")] = {**row, "stem": "../../../victim/data"}
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    before = _snapshot(out)
    with pytest.raises(DatasetError, match="not as pisession writes it") as raised:
        write_parquet(out, session_dir=root)
    assert str(out / MANIFEST) in str(raised.value) and "\n" not in str(raised.value)
    assert (victim / "data.parquet").read_bytes() == b"the user's own file"
    assert _snapshot(out) == before  # refused before anything was touched


def _row_damages() -> list[tuple[str, Any]]:
    """(what, how the manifest is changed): each one not as pisession writes it."""
    return [
        ("stem a number", ("stem", 5)),
        ("stem a path", ("stem", "a/b")),
        ("stem dot-dot", ("stem", "..")),
        ("stem empty", ("stem", "")),
        ("stem hidden", ("stem", ".x")),
        ("project a number", ("project", 7)),
        # (a project holding a NUL is fine: it is the header's cwd, as written, and only its
        # escaped partition name is ever a path: test_a_header_with_odd_text_is_read_back...)
        ("fingerprint text", ("fp", "x")),
        ("fingerprint short", ("fp", [1, 2, 3])),
        ("fingerprint of text", ("fp", ["1", 2, 3, 4])),
        ("checked text", ("checked", "now")),
        ("checked a boolean", ("checked", True)),
        ("cwd a number", ("cwd", 3)),
        ("parent a number", ("parent", 4)),
        ("parent_fp a dict", ("parent_fp", {"a": 1})),
        ("missing key", ("-", "stem")),
        ("unknown key", ("+", "extra")),
        ("crc text", ("crc", "x")),
        ("ctime a fraction", ("ctime", 1.5)),
        ("row a list", ("row", [1])),
        ("source a relative path", ("key", "x.jsonl")),
        ("bundle a path", ("bundle", "a/b")),
        ("bundle dot-dot", ("bundle", "..")),
        ("bundled with a stem too", ("stem", "s000")),
        ("bundled without its session id", ("session", None)),
        ("session id a number", ("session", 5)),
    ]


@pytest.mark.parametrize(("what", "damage"), _row_damages(), ids=[w for w, _ in _row_damages()])
def test_a_damaged_manifest_row_is_a_dataset_error_naming_the_file(
    exported: tuple[Path, Path], what: str, damage: tuple[str, Any]
) -> None:
    root, out = exported
    data = _manifest(out)
    key, row = next(iter(data["sessions"].items()))
    field, value = damage
    if field == "-":
        del row[value]
    elif field == "+":
        row[value] = True
    elif field == "row":
        data["sessions"][key] = value
    elif field == "key":
        data["sessions"][value] = data["sessions"].pop(key)
    else:
        row[field] = value
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    before = _snapshot(out)
    with pytest.raises(DatasetError) as raised:
        write_parquet(out, session_dir=root)
    message = str(raised.value)
    assert str(out / MANIFEST) in message and "\n" not in message, message
    assert _snapshot(out) == before


@pytest.mark.parametrize("clash", ["one id twice in a bundle", "a stem named as a bundle"])
def test_rows_that_share_a_bundle_wrongly_are_a_dataset_error(
    exported: tuple[Path, Path], clash: str
) -> None:
    root, out = exported
    data = _manifest(out)
    row, other = list(data["sessions"].values())[:2]
    if clash == "one id twice in a bundle":
        other["session"] = row["session"]
    else:
        other.update(stem=row["bundle"], bundle=None)
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    before = _snapshot(out)
    with pytest.raises(DatasetError, match="not as pisession writes it"):
        write_parquet(out, session_dir=root)
    assert _snapshot(out) == before


def test_a_manifest_int_past_64_bits_is_read_as_an_int(exported: tuple[Path, Path]) -> None:
    """An mtime before 1677 (NTFS's zero is 1601; tmpfs and btrfs keep such times) is an int of
    nanoseconds past 64 bits in the manifest: read as a float, it failed the check and every
    later run refused the folder."""
    root, out = exported
    manifest = _manifest(out)
    row = next(iter(manifest["sessions"].values()))
    row["fp"][3] = row["checked"] = -(2**63) - 5
    (out / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    report = write_parquet(out, session_dir=root)  # its mtime moved: read again
    assert (report.written, report.unchanged) == (1, 5)
    assert write_parquet(out, session_dir=root).unchanged == 6


def test_a_session_file_of_1601_is_exported_again_as_unchanged(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no tmpfs at /dev/shm")
    with tempfile.TemporaryDirectory(dir=shm) as where:
        root = _corpus(Path(where) / "sessions", sessions=2)
        path = root / "--proj--" / "s000.jsonl"
        old = -11_644_473_600 * 10**9  # 1601-01-01, NTFS's zero
        try:
            os.utime(path, ns=(old, old))
        except OSError:
            pytest.skip("this file system keeps no time that old")
        if path.stat().st_mtime_ns != old:
            pytest.skip("this file system keeps no time that old")
        out = tmp_path / "out"
        assert write_parquet(out, session_dir=root).written == 2
        assert write_parquet(out, session_dir=root).unchanged == 2


@pytest.mark.parametrize("damage", ["deleted", "a dangling link", "a link to a copy"])
@pytest.mark.parametrize("table", ["sessions", "usage"])
@pytest.mark.parametrize("own", [False, True])
def test_a_file_deleted_by_hand_is_written_again_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, own: bool, damage: str
) -> None:
    if own:  # every session in files of its own
        monkeypatch.setattr(_export, "OWN_FILE_BYTES", 1)
    root = _corpus(tmp_path / "sessions")
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=root).written == 6
    lost = sorted((out / table / PART).glob("*.parquet"))[0]
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(lost.read_bytes())
    lost.unlink()
    if damage != "deleted":  # a link in the file's place is no file of pisession's
        lost.symlink_to(copy if damage == "a link to a copy" else tmp_path / "nowhere.parquet")
    report = write_parquet(out, session_dir=root)  # no session changed
    assert (report.written, report.unchanged) == ((1, 5) if own else (6, 0))
    assert lost.is_file() and not lost.is_symlink()
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert _tables(out) == _tables(clean)


@pytest.mark.parametrize("damage", ["garbage", "another table", "missing", "a link"])
def test_a_bundle_that_cannot_be_read_back_is_rebuilt_from_its_sessions(
    exported: tuple[Path, Path], tmp_path: Path, damage: str
) -> None:
    root, out = exported
    (entries,) = (out / "entries" / PART).glob("bundle-*.parquet")
    if damage == "garbage":
        entries.write_bytes(b"PAR1 not really")
    elif damage == "another table":
        (usage,) = (out / "usage" / PART).glob("bundle-*.parquet")
        entries.write_bytes(usage.read_bytes())
    elif damage == "missing":
        entries.unlink()
    else:
        elsewhere = tmp_path / "elsewhere.parquet"
        elsewhere.write_bytes(entries.read_bytes())
        entries.unlink()
        entries.symlink_to(elsewhere)
    _append(root / "--proj--" / "s002.jsonl", "one more")
    write_parquet(out, session_dir=root)
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert _tables(out) == _tables(clean) and "feedf00d" in str(_tables(out))
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert write_parquet(out, session_dir=root).unchanged == 6


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        '{"format": 1}',
        '{"format": "1", "sessions": {}}',
        '{"format": 1, "sessions": []}',
        '{"format": 1, "sessions": {}, "more": 1}',
        '{"format": 1, "sessions": {}, "partitions": []}',
        "[" * 100_000,
        b"\xff\xfe".decode("latin-1"),
    ],
    ids=[
        "empty",
        "cut",
        "list",
        "no-sessions",
        "format-text",
        "sessions-list",
        "unknown",
        "partitions-list",
        "deep",
        "not-utf8",
    ],
)
def test_a_manifest_that_is_not_a_manifest_is_a_dataset_error(exported: tuple[Path, Path], text: str) -> None:
    root, out = exported
    (out / MANIFEST).write_bytes(text.encode("latin-1"))
    before = _snapshot(out)
    with pytest.raises(DatasetError) as raised:
        write_parquet(out, session_dir=root)
    assert str(out / MANIFEST) in str(raised.value) and "\n" not in str(raised.value)
    assert _snapshot(out) == before


def test_fields_a_manifest_may_hold_are_accepted(exported: tuple[Path, Path]) -> None:
    root, out = exported
    data = _manifest(out)
    for row in data["sessions"].values():
        assert {"ctime", "crc", "parent_ctime"} <= row.keys()  # what the export itself writes
        row.update(crc=None)  # an optional field may be null
    data["partitions"] = {"long": "project=lo~0123"}
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    assert write_parquet(out, session_dir=root).unchanged == 6


def test_two_rows_owning_one_file_are_refused(exported: tuple[Path, Path]) -> None:
    root, out = exported
    data = _manifest(out)
    row = next(iter(data["sessions"].values()))
    data["sessions"]["/elsewhere/copy.jsonl"] = dict(row)
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DatasetError, match="second row"):
        write_parquet(out, session_dir=root)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_in_place_of_the_manifest_is_refused_without_waiting(exported: tuple[Path, Path]) -> None:
    root, out = exported
    (out / MANIFEST).unlink()
    os.mkfifo(out / MANIFEST)
    with pytest.raises(DatasetError, match="not a regular file"):
        write_parquet(out, session_dir=root)


def test_the_cli_says_so_in_one_line(exported: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, out = exported
    data = _manifest(out)
    next(iter(data["sessions"].values()))["checked"] = "yesterday"
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    assert cli_main(["dataset", str(out), "--session-dir", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pisession: error: ") and err.count("\n") == 1 and str(out / MANIFEST) in err


def test_a_header_with_odd_text_is_read_back_from_the_manifest(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "sessions", sessions=1)
    path = root / "--proj--" / "s000.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.update(cwd="/a\x00b", parentSession="relative\x00.jsonl")
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    past = time.time() - 60
    os.utime(path, (past, past))
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=root).written == 1
    assert write_parquet(out, session_dir=root).unchanged == 1


def test_a_huge_bad_value_is_cut_short_in_the_message(exported: tuple[Path, Path]) -> None:
    root, out = exported
    data = _manifest(out)
    next(iter(data["sessions"].values()))["stem"] = "x/" * 500_000
    (out / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        write_parquet(out, session_dir=root)
    assert len(str(raised.value)) < 1_000


def test_every_stem_pisession_writes_passes_the_check(tmp_path: Path) -> None:
    for session_id in [
        "a",
        "019ad95a-d500-71af-a98a-7f381bc12a7c",
        "x" * 128,
        "x" * 129,
        "../x",
        "",
        "A.b_c-9",
    ]:
        stem = file_stem(session_id)
        assert STEM.fullmatch(stem) and STEM.fullmatch(f"{stem}-0123456789ab"), stem
    # hostile ids, two files of one id, names equal but for case: exported, then read back
    root = tmp_path / "sessions"
    folder = root / "--a=b%2F c#d--"
    folder.mkdir(parents=True)
    for name, session_id in [
        ("1", "../../../escape"),
        ("2", "same"),
        ("3", "same"),
        ("4", "SAME"),
        ("5", ""),
    ]:
        _session(folder / f"{name}.jsonl", session_id)
    past = time.time() - 60
    for path in folder.iterdir():
        os.utime(path, (past, past))
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=root).written == 5
    assert write_parquet(out, session_dir=root).unchanged == 5


def test_a_path_to_delete_is_checked_even_past_the_manifest(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = exported
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.parquet").write_bytes(b"mine")
    exporter = Exporter(str(out))
    with pytest.raises(DatasetError):
        exporter._unlink("--proj--", "../../../victim/data")
    assert (victim / "data.parquet").read_bytes() == b"mine"


# --------------------------------------------------------------------------- links and clean-up


def _bait(folder: Path) -> dict[str, bytes | str]:
    """A folder of the user's, with files named like temporaries, pisession's pattern included."""
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / ".draft.tmp").write_text("mine", encoding="utf-8")
    (folder / "sub" / ".session.parquet.1.0123456789ab.tmp").write_text("mine too", encoding="utf-8")
    (folder / ".session.parquet.1.0123456789ab.tmp").write_text("and mine", encoding="utf-8")
    return _snapshot(folder)


@pytest.mark.parametrize("where", ["table", "partition"])
def test_a_linked_folder_in_the_output_is_neither_cleaned_nor_written(
    exported: tuple[Path, Path], tmp_path: Path, where: str
) -> None:
    root, out = exported
    elsewhere = tmp_path / "elsewhere"
    before = _bait(elsewhere)
    link = out / "usage" if where == "table" else out / "usage" / PART
    for path in sorted(link.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    link.rmdir()
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(DatasetError, match="symbolic link"):
        write_parquet(out, session_dir=root, full=True)
    assert _snapshot(elsewhere) == before


def test_a_link_named_as_a_temporary_is_not_followed(exported: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = exported
    target = tmp_path / "precious"
    target.write_text("mine", encoding="utf-8")
    link = out / "sessions" / PART / ".session.parquet.1.0123456789ab.tmp"
    link.symlink_to(target)
    write_parquet(out, session_dir=root)
    assert target.read_text(encoding="utf-8") == "mine"


def test_a_linked_journal_is_refused_and_its_target_left(exported: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = exported
    target = tmp_path / "precious"
    target.write_text('["/work", "s000"]\n', encoding="utf-8")
    (out / ".pisession-dataset.pending").symlink_to(target)
    with pytest.raises(DatasetError, match="pending"):
        write_parquet(out, session_dir=root)
    assert target.read_text(encoding="utf-8") == '["/work", "s000"]\n'
    assert len(list((out / "usage" / PART).glob("*.parquet"))) == 1


# --------------------------------------------------------------------------- killed exports

# Runs one export in a subprocess that SIGKILLs itself at a chosen point: the `n`th call of
# `what` ("write": a data file written under its temporary name; "install": a data file renamed
# into place; "manifest": a manifest written halfway under its temporary name).
_KILLER = r"""
import os, signal, sys
from pisession.dataset import _export, write_parquet
what, n, out, root, every = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
_export.BUNDLE_BYTES = int(sys.argv[6])
if every == "0":
    _export._SAVE_EVERY = 0.0  # save after each session: killed later on, with saves behind it
calls = 0

def count():
    global calls
    calls += 1
    return calls == n

if what == "write":
    real_write = _export._write_parquet
    def write(table, path):
        real_write(table, path)
        if count():
            os.kill(os.getpid(), signal.SIGKILL)
    _export._write_parquet = write
elif what == "install":
    real_replace = os.replace
    def replace(src, dst, **kw):
        real_replace(src, dst, **kw)
        if str(dst).endswith(".parquet") and count():
            os.kill(os.getpid(), signal.SIGKILL)
    _export.os.replace = replace
elif what == "manifest":
    def write_bytes(path, data):
        with open(path, "wb") as handle:
            handle.write(data[: len(data) // 2])
        if count():
            os.kill(os.getpid(), signal.SIGKILL)
        with open(path, "wb") as handle:
            handle.write(data)
    _export._write_bytes = write_bytes
write_parquet(out, session_dir=root)
"""


def _env(**more: str) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else ""), **more}


def _killed(what: str, n: int, out: Path, root: Path, every: str = "2", bundle: int = 1) -> None:
    """``bundle``: the bytes of sessions a bundle gathers (1: one session in each)."""
    run = subprocess.run(
        [sys.executable, "-c", _KILLER, what, str(n), str(out), str(root), every, str(bundle)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr


# one session in each bundle (bundle 1), or all six in one (bundle 0: the default size)
KILL_POINTS = [
    ("write", 1, "2", 1),  # the first data file written, nothing installed
    ("install", 1, "2", 1),  # the first data file in place, no manifest saved since
    ("install", 8, "2", 1),  # a bundle and a half in place
    ("manifest", 1, "2", 1),  # the very first manifest, half written
    ("manifest", 4, "0", 1),  # a later manifest, half written
    ("install", 17, "0", 1),  # mid-way, with manifests saved behind it
    ("install", 3, "0", 0),  # half of the one bundle in place
    ("manifest", 2, "0", 0),  # the manifest naming the bundle, half written
]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="no SIGKILL")
@pytest.mark.parametrize(("what", "n", "every", "bundle"), KILL_POINTS)
def test_a_first_export_killed_at_any_point_is_resumed_into_a_clean_export(
    tmp_path: Path, what: str, n: int, every: str, bundle: int
) -> None:
    root = _corpus(tmp_path / "sessions")
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    out = tmp_path / "out"
    _killed(what, n, out, root, every, bundle or _export.BUNDLE_BYTES)
    report = write_parquet(out, session_dir=root)  # not "not empty and holds no pisession dataset"
    assert report.sessions == 6
    assert _tables(out) == _tables(clean)
    assert _leftovers(out) == []
    assert write_parquet(out, session_dir=root).unchanged == 6


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="no SIGKILL")
def test_files_installed_after_the_last_save_of_a_session_deleted_since_are_removed(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "sessions")
    out = tmp_path / "out"
    _killed("install", 12, out, root)  # two bundles and a part in place, none in the manifest
    assert len(list((out / "usage" / PART).glob("bundle-*.parquet"))) == 2
    (root / "--proj--" / "s000.jsonl").unlink()
    (root / "--proj--" / "s001.jsonl").unlink()
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert write_parquet(out, session_dir=root).written == 4
    assert _tables(out) == _tables(clean)
    assert _leftovers(out) == []


def _append(path: Path, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    entry = {
        "type": "message",
        "id": "feedf00d",
        "parentId": last["id"],
        "timestamp": "2025-01-01T00:00:09.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1735689609000},
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    past = time.time() - 30
    os.utime(path, (past, past))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="no SIGKILL")
@pytest.mark.parametrize("n", [1, 3, 5])
def test_a_bundle_killed_while_written_again_in_place_is_read_again(tmp_path: Path, n: int) -> None:
    root = _corpus(tmp_path / "sessions")
    out = tmp_path / "out"
    write_parquet(out, session_dir=root)  # the six sessions in one bundle
    (bundle,) = (out / "usage" / PART).glob("bundle-*.parquet")
    _append(root / "--proj--" / "s002.jsonl", "one more")
    # the bundle's files replaced in place, n of five, its manifest not saved: files and manifest
    # disagree on what the bundle holds
    _killed("install", n, out, root, "2", _export.BUNDLE_BYTES)
    (root / "--proj--" / "s004.jsonl").unlink()
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    report = write_parquet(out, session_dir=root)
    assert report.written == 5  # the bundle's sessions read again
    assert _tables(out) == _tables(clean)
    assert "feedf00d" in str(_tables(out)) and _leftovers(out) == []
    assert not bundle.exists() or write_parquet(out, session_dir=root).unchanged == 5


def _inodes(out: Path) -> dict[str, int]:
    """Each data file's inode: a file written again (renamed into place) has a new one."""
    return {str(p.relative_to(out)): p.stat().st_ino for p in out.rglob("*.parquet")}


def test_an_appended_session_rewrites_its_bundle_only(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "sessions", sessions=8)
    out = tmp_path / "out"
    one = (root / "--proj--" / "s000.jsonl").stat().st_size
    _export.BUNDLE_BYTES, size = 3 * one, _export.BUNDLE_BYTES  # three sessions in each
    try:
        assert write_parquet(out, session_dir=root).files_written == 15
        before = _inodes(out)
        _append(root / "--proj--" / "s004.jsonl", "one more")
        report = write_parquet(out, session_dir=root)
        assert (report.written, report.unchanged, report.files_written) == (1, 7, 5)
        after = _inodes(out)
        assert after.keys() == before.keys()
        changed = sorted(k for k in after if after[k] != before[k])
        assert len(changed) == 5 and len({Path(k).name for k in changed}) == 1  # one bundle, five tables
        (root / "--proj--" / "s005.jsonl").unlink()
        report = write_parquet(out, session_dir=root)
        assert (report.removed, report.files_written) == (1, 5)
        _corpus(tmp_path / "more", sessions=9)
        (tmp_path / "more" / "--proj--" / "s008.jsonl").rename(root / "--proj--" / "s008.jsonl")
        assert write_parquet(out, session_dir=root).written == 1
    finally:
        _export.BUNDLE_BYTES = size
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert _tables(out) == _tables(clean)
    assert write_parquet(out, session_dir=root).unchanged == 8


# --------------------------------------------------------------------------- nothing outlives it


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark``: the command and everything it started."""
    needle = f"PISESSION_TEST_MARK={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:  # gone meanwhile, or a zombie
            pass
    return found


def _wait_for(check: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


@pytest.mark.skipif(not LINUX, reason="walks /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_nothing_outlives_a_killed_dataset_command(tmp_path: Path, signum: int) -> None:
    root = _corpus(tmp_path / "sessions", sessions=64, entries=300, text=1000)  # ~20 MB: seconds of work
    out = tmp_path / "out"
    mark = uuid.uuid4().hex
    with open(tmp_path / "err.txt", "wb") as err:
        command = subprocess.Popen(
            [sys.executable, "-m", "pisession.cli", "dataset", str(out), "--session-dir", str(root)],
            env=_env(PISESSION_TEST_MARK=mark),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            # mid-export: the command, the forkserver, the resource tracker and two workers run,
            # and the first files are written
            started = _wait_for(
                lambda: (
                    (len(_marked(mark)) >= 5 and any(out.rglob("*.parquet"))) or command.poll() is not None
                ),
                120,
            )
            assert started and command.poll() is None, "the export ended before it could be killed"
            command.send_signal(signum)
            code = command.wait(60)
            # each process ends with the command (a bounded wait, not a timing assertion)
            assert _wait_for(lambda: not _marked(mark), 30), _marked(mark)
        finally:
            for pid in _marked(mark):  # only when the test failed: leave nothing running
                os.kill(pid, signal.SIGKILL)
            if command.poll() is None:
                command.kill()
                command.wait()
    after = _snapshot(out)
    time.sleep(1.0)
    assert _snapshot(out) == after  # nobody writes there any more
    if signum == signal.SIGTERM:
        assert code == 128 + signal.SIGTERM
        message = (tmp_path / "err.txt").read_text(encoding="utf-8")
        assert "terminated" in message and "Traceback" not in message
        # its own temporaries removed as it stopped (the journal stays: the next run needs it)
        assert [p for p in _leftovers(out) if p.endswith(".tmp")] == []
    else:
        assert code == -signal.SIGKILL
    report = write_parquet(out, session_dir=root)
    assert report.sessions == 64 and _leftovers(out) == []


@pytest.mark.skipif(not LINUX, reason="walks /proc")
def test_nothing_outlives_a_finished_dataset_command(tmp_path: Path) -> None:
    # the forkserver and the resource tracker the export started end with it, not a moment after
    root = _corpus(tmp_path / "sessions", sessions=40, entries=300, text=1000)  # in worker processes
    mark = uuid.uuid4().hex
    with open(tmp_path / "err.txt", "wb") as err:
        # not a pipe: reading one to its end would wait for every process holding it
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pisession.cli",
                "dataset",
                str(tmp_path / "out"),
                "--session-dir",
                str(root),
            ],
            env=_env(PISESSION_TEST_MARK=mark),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    left = _marked(mark)
    for pid in left:  # only when the test fails: leave nothing running
        os.kill(pid, signal.SIGKILL)
    assert done.returncode == 0, (tmp_path / "err.txt").read_text()
    assert left == []
