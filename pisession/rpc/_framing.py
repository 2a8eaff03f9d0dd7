"""Pi's RPC framing: one JSON object per record, records end at LF and nowhere else.

A generic line reader does not do: ``str.splitlines()`` (and Node's ``readline``) also split on
U+2028, U+2029, U+0085 and more, which Pi writes raw inside JSON strings. LF (0x0A) never occurs
inside a UTF-8 multi-byte sequence, so bytes are split before they are decoded. A record has no
length limit (a ``get_entries`` answer holds the whole session).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JsonlDecoder", "encode_record"]


class JsonlDecoder:
    """Splits a byte stream into records exactly as Pi's ``attachJsonlLineReader`` does::

        decoder = JsonlDecoder()
        lines = decoder.feed(b'{"a": 1}\\n{"b"') + decoder.feed(b': 2}\\n')

    A CR before the LF is dropped; what is left at the end of the stream is one last record.
    """

    def __init__(self) -> None:
        # The pieces of an unfinished record; joined once its LF arrives, so a long record
        # costs one copy, not one per chunk.
        self._parts: list[bytes] = []

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            piece = data[start:newline]
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts = []
            lines.append(piece[:-1] if piece.endswith(b"\r") else piece)
            start = newline + 1
        if start < len(data):
            self._parts.append(data[start:])
        return lines

    def end(self) -> list[bytes]:
        """The last record, if the stream ended without an LF after it."""
        if not self._parts:
            return []
        piece = b"".join(self._parts)
        self._parts = []
        return [piece[:-1] if piece.endswith(b"\r") else piece]


def encode_record(record: Any) -> bytes:
    """One command as Pi reads it. ASCII-escaped: a lone surrogate in a Python string still makes
    valid JSON, and no byte Pi could take for a separator is sent raw."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
