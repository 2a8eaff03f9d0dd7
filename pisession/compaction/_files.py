"""Which files a conversation read and changed, as Pi tracks them for summaries.

Pi looks only at ``read``, ``write`` and ``edit`` tool calls with a string ``path`` argument (and
at the calls a code-mode script recorded on its tool result), plus the ``readFiles`` /
``modifiedFiles`` details of the summaries it wrote earlier. The lists end every summary it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._js import js_join_item, js_string
from .._model import Message
from ._common import js_sort, wire

__all__ = [
    "FileOperations",
    "extract_file_ops_from_message",
    "compute_file_lists",
    "format_file_operations",
]


@attrs.define
class FileOperations:
    """The paths seen in ``read``, ``write`` and ``edit`` tool calls (Pi's ``FileOperations``)::

    ops = FileOperations()
    extract_file_ops_from_message(assistant_message, ops)
    read_files, modified_files = compute_file_lists(ops)
    """

    read: set[str] = attrs.field(factory=set)
    written: set[str] = attrs.field(factory=set)
    edited: set[str] = attrs.field(factory=set)
    # Values other than strings that an earlier summary's details listed: Pi's Sets keep them and
    # its lists, summaries and details carry them on, so pisession does too.
    _other_read: list[Any] = attrs.field(factory=list, init=False, repr=False)
    _other_edited: list[Any] = attrs.field(factory=list, init=False, repr=False)


def _add(tool_name: Any, args: Any, ops: FileOperations) -> None:
    path = args.get("path") if isinstance(args, Mapping) else None
    if not isinstance(path, str) or not path:
        return
    if tool_name == "read":
        ops.read.add(path)
    elif tool_name == "write":
        ops.written.add(path)
    elif tool_name == "edit":
        ops.edited.add(path)


def extract_file_ops_wire(message: Mapping[str, Any], ops: FileOperations) -> None:
    role = message.get("role")
    if role == "toolResult":
        # Calls made from code-mode scripts are recorded on the script's result.
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, Mapping) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, Mapping):
                _add(call.get("name"), call.get("arguments"), ops)
        return
    if role != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if (
            isinstance(block, Mapping)
            and block.get("type") == "toolCall"
            and "arguments" in block
            and "name" in block
        ):
            _add(block["name"], block["arguments"], ops)


def add_details_wire(details: Any, ops: FileOperations) -> None:
    """Fold a Pi-written summary's ``details`` into ``ops`` (modified files count as edited)."""
    if not isinstance(details, Mapping):
        return
    for key, target, other in (
        ("readFiles", ops.read, ops._other_read),
        ("modifiedFiles", ops.edited, ops._other_edited),
    ):
        files = details.get(key)
        if isinstance(files, list):
            for f in files:
                if isinstance(f, str):
                    target.add(f)
                elif isinstance(f, (dict, list)) or all(_same_value(f) != _same_value(o) for o in other):
                    other.append(f)  # an object or array is a new Set member every time


def _same_value(value: Any) -> tuple[Any, ...]:
    """A key equal for two JSON scalars exactly when JavaScript's Set takes them as one."""
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    return ("other", value)


def _js_sort_key(value: Any) -> bytes:
    # Array.prototype.sort() with no comparator compares String(value) by UTF-16 code units.
    return js_string(value).encode("utf-16-be", "surrogatepass")


def extract_file_ops_from_message(message: Message | Mapping[str, Any], file_ops: FileOperations) -> None:
    """Add the file operations of one message's tool calls to ``file_ops`` (Pi's
    ``extractFileOpsFromMessage``); other roles add nothing."""
    extract_file_ops_wire(wire(message), file_ops)


def compute_file_lists(file_ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(read_files, modified_files)``: files only read, and files written or edited, each
    sorted as JavaScript sorts strings::

        read_files, modified_files = compute_file_lists(preparation.file_ops)
    """
    modified = file_ops.edited | file_ops.written
    read_only = js_sort(f for f in file_ops.read if f not in modified)
    if not file_ops._other_read and not file_ops._other_edited:
        return read_only, js_sort(modified)
    modified_other = {_same_value(f) for f in file_ops._other_edited}
    read_other = [f for f in file_ops._other_read if _same_value(f) not in modified_other]
    # Values that are not strings come only from a summary's details; typed as the paths they
    # stand beside, they are written back where Pi writes them.
    return (
        sorted([*read_only, *read_other], key=_js_sort_key),
        sorted([*modified, *file_ops._other_edited], key=_js_sort_key),
    )


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` sections Pi appends to a summary ("" if none)."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(map(js_join_item, read_files)) + "\n</read-files>")
    if modified_files:
        joined = "\n".join(map(js_join_item, modified_files))
        sections.append("<modified-files>\n" + joined + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
