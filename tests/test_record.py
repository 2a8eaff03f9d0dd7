"""The read-only value classes that the listing, the catalog's report and Pi's settings are made
of (``pisession._record.Record``): what attrs' frozen classes gave them, kept."""

from __future__ import annotations

import copy
import pickle
from datetime import datetime, timezone

import pytest

from pisession import SessionInfo
from pisession._record import ReadOnlyError, Record, replace
from pisession.catalog import RefreshReport, SkippedFile
from pisession.settings import PiSettings, SessionDirChoice, SettingsFileError


class Point(Record):
    x: int
    y: int = 0
    label: str = "p"


def info(**changes: object) -> SessionInfo:
    values: dict[str, object] = dict(
        path="/s/a.jsonl",
        id="a",
        cwd="/w",
        name=None,
        parent_session_path=None,
        created=None,
        modified=datetime(2025, 1, 2, tzinfo=timezone.utc),
        message_count=2,
        first_message="hi",
        all_messages_text="hi there",
    )
    values.update(changes)
    return SessionInfo(**values)  # type: ignore[arg-type]


def test_fields_by_position_by_name_and_defaults() -> None:
    assert Point(1) == Point(x=1) == Point(1, 0, "p") == Point(label="p", x=1)
    assert (Point(1, 2).x, Point(1, 2).y, Point(1, 2).label) == (1, 2, "p")
    assert Point.__match_args__ == ("x", "y", "label")
    match Point(3, 4):
        case Point(x, y):
            assert (x, y) == (3, 4)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument 'x'"),
        ((1, 2, "a", 4), {}, "takes 3 positional arguments but 4 were given"),
        ((1,), {"x": 2}, "multiple values for argument 'x'"),
        ((1,), {"z": 2}, "unexpected keyword argument 'z'"),
    ],
)
def test_wrong_arguments_are_refused_as_python_refuses_them(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)  # type: ignore[arg-type]


def test_values_are_read_only() -> None:
    point = Point(1)
    with pytest.raises(ReadOnlyError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):  # ReadOnlyError is one, as attrs' FrozenInstanceError is
        del point.y  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.other = 1  # type: ignore[attr-defined]
    assert point == Point(1)


def test_equality_hashing_and_repr() -> None:
    assert Point(1) != Point(2) and Point(1) != (1, 0, "p")
    assert len({Point(1), Point(1), Point(2)}) == 2
    assert repr(Point(1, label="q")) == "Point(x=1, y=0, label='q')"
    assert Point(1).__eq__(object()) is NotImplemented

    class Other(Record):
        x: int
        y: int = 0
        label: str = "p"

    assert Point(1) != Other(1)  # another class with the same fields is another value


def test_replace_copy_and_pickle_keep_the_value() -> None:
    point = Point(1, 2)
    assert replace(point, y=5) == Point(1, 5) and point == Point(1, 2)
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(point, z=1)
    assert copy.copy(point) == point and copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point
    row = info()
    assert pickle.loads(pickle.dumps(row)) == row
    assert replace(row, all_messages_text="").all_messages_text == "" and row.all_messages_text == "hi there"


def test_a_field_without_a_default_cannot_follow_one_with_a_default() -> None:
    with pytest.raises(TypeError, match="without a default follows a default"):

        class Bad(Record):
            a: int = 1
            b: int


def test_a_subclass_adds_fields_after_its_bases_and_may_take_a_default_away() -> None:
    class Labelled(Point):
        note: str = ""

    assert Labelled(1, 2, "q", "n") == Labelled(x=1, y=2, label="q", note="n")
    assert Labelled.__match_args__ == ("x", "y", "label", "note")

    class Required(Record):
        a: int
        b: int = 2

    class StillRequired(Required):
        b: int  # declared again without a default: now required, as in a dataclass

    with pytest.raises(TypeError, match="missing required argument 'b'"):
        StillRequired(1)
    assert StillRequired(1, 3).b == 3


def test_the_public_values_made_with_it() -> None:
    """The classes that moved off attrs keep their fields, equality and read-only instances."""
    assert info() == info() and hash(info()) == hash(info()) and info() != info(name="n")
    assert repr(info()).startswith("SessionInfo(path='/s/a.jsonl', id='a'")
    assert RefreshReport() == RefreshReport(0, 0, 0, 0, ()) and RefreshReport(files=2).files == 2
    assert RefreshReport(skipped=(SkippedFile("/x", "why"),)).skipped[0].reason == "why"
    error = SettingsFileError("global", "/a/settings.json", "bad")
    assert str(error) == "/a/settings.json: bad"
    settings = PiSettings("/w", "/a", True, "/a/s.json", "/w/.pi/s.json", (error,), {"sessionDir": "x"}, {})
    same = PiSettings("/w", "/a", True, "/a/s.json", "/w/.pi/s.json", (error,), {"sessionDir": "y"}, {})
    assert settings == same  # what the files hold is not compared, as before
    assert settings.value("sessionDir") == "x" and "sessionDir" not in repr(settings)
    assert pickle.loads(pickle.dumps(settings)).value("sessionDir") == "x"
    assert replace(settings, cwd="/v").value("sessionDir") == "x"
    choice = SessionDirChoice("/s", "explicit", None)
    for value in (info(), RefreshReport(), error, settings, choice):
        with pytest.raises(AttributeError):
            value.path = "x"  # type: ignore[misc, union-attr]
