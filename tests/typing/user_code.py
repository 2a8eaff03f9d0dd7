"""Code written the plain way against pisession, as a user would: it must pass ``mypy --strict``
(tests/test_typing.py and .ci/run check it) and it runs (tests/test_typing.py calls ``main``).

Lines marked ``# expect: T`` reveal the type mypy infers there; the test checks it is ``T``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from pisession import (
    AssistantMessage,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    FolderEntry,
    FolderFollower,
    LabelEntry,
    MalformedEntry,
    Message,
    MessageEntry,
    SessionInfo,
    SessionManager,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UnknownEntry,
    Unset,
    Usage,
    UserMessage,
    read_session,
)

if TYPE_CHECKING:
    from typing_extensions import reveal_type


def labels_on_branch(manager: SessionManager) -> dict[str, str]:
    labels = {}
    for entry in manager.get_branch():
        label = manager.get_label(entry.id)  # an entry's id is a str
        if label is not None:
            labels[entry.id] = label
    return labels


def roles(manager: SessionManager) -> list[str]:
    return [m.role for m in manager.build_session_context().messages]


def words(message: Message) -> int:
    count = 0
    if message.role == "assistant":
        if TYPE_CHECKING:
            reveal_type(message)  # expect: pisession._model.AssistantMessage
        for block in message.content:  # content is iterable as Pi types it: no None, no UNSET
            if block.type == "text":
                count += len(block.text.split())
    elif message.role == "user":
        content = message.content
        if isinstance(content, str):
            count += len(content.split())
        else:
            count += sum(len(b.text.split()) for b in content if isinstance(b, TextContent))
    return count


def tool_paths(entry: Entry) -> list[str]:
    if entry.type == "message":
        if TYPE_CHECKING:
            reveal_type(entry)  # expect: pisession._model.MessageEntry
        message = entry.message
        if message.role == "assistant":
            return [str(b.arguments.get("path")) for b in message.content if isinstance(b, ToolCall)]
    return []


def describe(entry: Entry) -> str:
    match entry.type:
        case "custom":
            if TYPE_CHECKING:
                reveal_type(entry)  # expect: pisession._model.CustomEntry
            return f"state {entry.custom_type}"
        case "label":
            return f"label {entry.target_id}"
    match entry:
        case MessageEntry(message=UserMessage(content=str(text))):
            return f"user: {text}"
        case MessageEntry(message=AssistantMessage(stop_reason=reason)):
            return f"assistant ({reason})"
        case CustomMessageEntry(custom_type=kind, display=shown):
            return f"{kind} {'shown' if shown else 'hidden'}"
        case CompactionEntry(tokens_before=tokens):
            return f"compaction of {tokens} tokens"
        case MalformedEntry():
            return "a line without an id"
        case UnknownEntry(wire_type=kind):
            return f"a newer Pi's {kind}"
        case _:
            return entry.type


def _never(value: NoReturn) -> NoReturn:
    raise AssertionError(value)


def exhaustive(message: Message) -> str:
    match message.role:
        case "user" | "assistant" | "toolResult" | "system":
            return "conversation"
        case "custom" | "bashExecution" | "branchSummary" | "compactionSummary":
            return "other"
        case "unknown":
            if TYPE_CHECKING:
                reveal_type(message)  # expect: pisession._model.UnknownMessage
            return f"unknown {message.wire_role}"
        case _:
            _never(message)


def latest_counter(manager: SessionManager) -> int:
    value = 0
    for entry in manager.get_branch():
        if isinstance(entry, CustomEntry) and entry.custom_type == "counter":
            value = int(entry.data["value"])
    return value


def newest_sessions(cwd: str) -> list[str]:
    infos = SessionManager.list(cwd)
    if TYPE_CHECKING:
        reveal_type(infos)  # expect: list[pisession._discovery.SessionInfo]
    everything: list[SessionInfo] = SessionManager.list_all()
    return [info.path for info in infos if info in everything]


def catalog_rows(catalog_path: str, cwd: str) -> tuple[list[str], bytes, int]:
    from pisession.catalog import Catalog
    from pisession.settings import PiSettings

    folder = PiSettings.load(cwd).session_dir
    with Catalog(catalog_path) as catalog:
        rows = catalog.list_all(folder)
        data = catalog.list_all_json(folder)
        report = catalog.last_report
    if TYPE_CHECKING:
        reveal_type(rows[0].modified)  # expect: datetime.datetime
        reveal_type(report.skipped)  # expect: tuple[pisession.catalog._refresh.SkippedFile, ...]
        reveal_type(data)  # expect: bytes
    return [info.first_message for info in rows], data, report.files


def header_cwd(manager: SessionManager) -> str:
    header = manager.get_header()
    return header.cwd if header is not None else ""


def tool_tokens(messages: Sequence[Message]) -> int:
    total = 0
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.usage:  # UNSET and None are falsy
            if TYPE_CHECKING:
                reveal_type(message.usage)  # expect: pisession._model.Usage
            total += message.usage.total_tokens
    return total


def label_text(entry: LabelEntry) -> str:
    label = entry.label
    if isinstance(label, Unset):
        return "(no label key)"
    if TYPE_CHECKING:
        reveal_type(label)  # expect: str | None
    return label or ""


def followed_custom_types(path: str) -> list[str]:
    """A read-only view of a session another program writes: what it appended since."""
    view = read_session(path)
    found = [e.custom_type for e in view.refresh() if isinstance(e, CustomEntry)]
    view.close()
    return found


def folder_events(directory: str) -> list[tuple[str, str]]:
    with FolderFollower(directory, from_start=True) as follower:
        events: list[FolderEntry] = follower.refresh()
        return [(path, entry.type) for path, entry in events]


def main(directory: str) -> None:
    manager = SessionManager.create("/work/project", directory)
    manager.append_message(UserMessage(content="Fix the failing test"))  # timestamp: now
    manager.append_message({"role": "user", "content": "hi"})  # no timestamp: still a UserMessage
    manager.append_message(
        AssistantMessage(
            content=[
                TextContent(text="Reading it."),
                ToolCall(id="c1", name="read", arguments={"path": "a.py"}),
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage=Usage(input=10, output=5, total_tokens=15),
        )
    )
    manager.append_custom_entry("counter", {"value": 1})
    manager.append_custom_message_entry("note", "Remember the deadline.", True)
    leaf = manager.get_leaf_id()
    assert leaf is not None
    manager.append_label_change(leaf, "checkpoint")

    entries = manager.get_entries()
    assert [type(e.message) for e in entries if isinstance(e, MessageEntry)] == [
        UserMessage,
        UserMessage,
        AssistantMessage,
    ]
    assert roles(manager) == ["user", "user", "assistant", "custom"]
    assert [tool_paths(e) for e in entries][2] == ["a.py"]
    assert labels_on_branch(manager) == {leaf: "checkpoint"}
    assert sum(words(m) for m in manager.build_session_context().messages) == 7
    assert latest_counter(manager) == 1
    assert describe(entries[1]) == "user: hi"
    assert describe(entries[3]) == "state counter"
    assert [exhaustive(m) for m in manager.build_session_context().messages][-1] == "other"
    assert header_cwd(manager) == "/work/project"
    assert Usage.zero() == Usage()
    assert tool_tokens(manager.build_session_context().messages) == 0
    assert [label_text(e) for e in entries if isinstance(e, LabelEntry)] == ["checkpoint"]
    manager.close()
    path = manager.get_session_file()
    assert path is not None
    assert followed_custom_types(path) == []
    assert [kind for _, kind in folder_events(directory)][:1] == ["message"]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(sys.argv[1] if len(sys.argv) > 1 else tmp)
    print("ok")
