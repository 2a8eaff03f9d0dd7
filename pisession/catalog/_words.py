"""Words as the search finds them: tokenizing, matching a query, and the snippets shown for a hit.

The plain scan tokenizes as FTS5's unicode61 tokenizer (remove_diacritics 0) does, closely enough
that both find the same messages: letters, digits, marks and private-use characters make words,
everything else separates them; words compare lower-cased.
"""

from __future__ import annotations

import re
import unicodedata

from .._errors import CatalogError

MARK_OPEN, MARK_CLOSE = "\x02", "\x03"
SNIPPET_TOKENS = 16


def _is_word_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LNM" or category == "Co"


_WORD_CACHE: dict[str, bool] = {}


def words(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = -1
    cache = _WORD_CACHE
    for index, char in enumerate(text):
        if char < "\x80":
            word = char.isalnum()
        else:
            known = cache.get(char)
            word = cache.setdefault(char, _is_word_char(char)) if known is None else known
        if word:
            if start < 0:
                start = index
        elif start >= 0:
            spans.append((start, index))
            start = -1
    if start >= 0:
        spans.append((start, len(text)))
    return spans


def fold(word: str) -> str:
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in word)


def terms(query: str) -> list[list[str]]:
    out = []
    for part in query.split():
        found = [fold(part[a:b]) for a, b in words(part)]
        if found:
            out.append(found)
    if not out:
        raise CatalogError(f"search query {query!r} has no words to look for")
    return out


def fts_query(terms: list[list[str]]) -> str:
    return " AND ".join('"' + " ".join(words).replace('"', '""') + '"' for words in terms)


def match(text: str, terms: list[list[str]]) -> list[tuple[int, int]] | None:
    """Spans of the words of every phrase found in ``text``, or None when one is missing."""
    lowered = text.lower()
    for term in terms:
        for word in term:
            # lower() and the per-character fold agree on ASCII, so a missing ASCII word rules the text out
            if word.isascii() and word not in lowered:
                return None
    spans = words(text)
    folded = [fold(text[a:b]) for a, b in spans]
    found: list[tuple[int, int]] = []
    for term in terms:
        size = len(term)
        hits = [i for i in range(len(folded) - size + 1) if folded[i : i + size] == term]
        if not hits:
            return None
        for i in hits:
            found.extend(spans[i : i + size])
    return sorted(set(found))


def plain_snippet(text: str, found: list[tuple[int, int]]) -> str:
    spans = words(text)
    first = next(i for i, span in enumerate(spans) if span == found[0])
    lo = 0 if len(spans) <= SNIPPET_TOKENS else max(0, first - SNIPPET_TOKENS // 4)
    hi = min(len(spans), lo + SNIPPET_TOKENS)
    start = spans[lo][0] if lo else 0
    end = spans[hi - 1][1] if hi < len(spans) else len(text)
    marked = set(found)
    out = ["…" if lo else ""]
    at = start
    for span in spans[lo:hi]:
        if span in marked:
            out += [text[at : span[0]], MARK_OPEN, text[span[0] : span[1]], MARK_CLOSE]
            at = span[1]
    out.append(text[at:end])
    if hi < len(spans):
        out.append("…")
    return "".join(out)


_SPACES = re.compile(r"\s+")


def parse_snippet(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    raw = _SPACES.sub(" ", raw).strip()
    text: list[str] = []
    marks: list[tuple[int, int]] = []
    length = 0
    start = -1
    for piece in re.split(f"([{MARK_OPEN}{MARK_CLOSE}])", raw):
        if piece == MARK_OPEN:
            start = length
        elif piece == MARK_CLOSE:
            if start >= 0 and length > start:
                marks.append((start, length))
            start = -1
        else:
            text.append(piece)
            length += len(piece)
    return "".join(text), tuple(marks)
