"""The exports take one snapshot of a session and read it in the form the file holds (issue 28,
point 4): no typed context built only to be turned back into JSON, the header not typed and
untyped again, and an append made meanwhile never half-seen."""

from __future__ import annotations

import pytest

import pisession
from pisession import SessionManager
from pisession._reading import SessionSnapshot
from pisession.export import to_html, to_markdown, to_static_html


@pytest.fixture
def manager() -> SessionManager:
    manager = SessionManager.in_memory("/project")
    manager.append_message(
        {"role": "system", "content": "Be brief.", "toolsAdded": [{"name": "read"}], "timestamp": 1}
    )
    manager.append_message({"role": "user", "content": "hello", "timestamp": 2})
    manager.append_label_change(manager.get_leaf_id() or "", "start")
    return manager


def _no_typed_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("typed and turned back into JSON")

    # Both are imported when called, so the patch reaches every caller.
    monkeypatch.setattr("pisession._projection.context_from_projection", refuse)
    monkeypatch.setattr("pisession._builders.get_current_system_message", refuse)


@pytest.mark.parametrize("export", [to_markdown, to_static_html])
def test_the_system_prompt_is_read_as_json(
    export: object, manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_typed_round_trip(monkeypatch)
    text = export(manager)  # type: ignore[operator]
    assert "Be brief." in text and "read" in text


def test_the_viewer_embeds_the_header_as_the_file_holds_it(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_typed_round_trip(monkeypatch)

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the header was typed and turned back into JSON")

    monkeypatch.setattr("pisession._codec.from_wire", refuse)
    page = to_html(manager)
    assert manager.get_session_id() in page


def test_the_system_prompt_matches_the_typed_one(manager: SessionManager) -> None:
    typed = pisession.get_current_system_message(manager.build_session_context().messages)
    assert typed is not None
    assert SessionSnapshot(manager)._system_message_wire() == pisession.to_wire(typed)


def test_a_snapshot_is_one_moment(manager: SessionManager) -> None:
    from pisession.export._markdown import to_markdown as markdown_of

    view = SessionSnapshot(manager)
    before = markdown_of(view)
    manager.append_message({"role": "user", "content": "later", "timestamp": 3})
    assert markdown_of(view) == before
    assert "later" in to_markdown(manager)
    assert view.get_leaf_id() != manager.get_leaf_id() and len(view.get_entries()) == 3
