"""Words as the search finds them: tokenizing, matching a query, and the snippets shown for a hit.

Letters, numbers, marks and private-use characters make words, everything else separates them;
words compare case-folded. The plain scan and the full-text index both use these words (the index
holds them pre-split, see :func:`index_text`), so both find the same messages.
"""

from __future__ import annotations

import re
import unicodedata

from .._errors import CatalogError

MARK_OPEN, MARK_CLOSE = "\x02", "\x03"
SNIPPET_TOKENS = 16

_ALNUM_RUNS = re.compile(r"[^\W_]+")  # str.isalnum() is exactly Unicode's letters and numbers
_ODD = re.compile(r"[^\w\x00-\x7f]")  # not a letter or number, not ASCII: maybe a mark


def _is_word_char(char: str) -> bool:
    return char.isalnum() or unicodedata.category(char)[0] == "M" or unicodedata.category(char) == "Co"


_WORD_CACHE: dict[str, bool] = {}


def words(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the words of ``text``: runs of letters, numbers, marks and
    private-use characters. The regular expression engine finds them unless a mark or a
    private-use character is among them (rare), which needs a look at each character."""
    cache = _WORD_CACHE
    for odd in _ODD.finditer(text):
        char = odd.group()
        known = cache.get(char)
        if known is None:
            known = cache.setdefault(char, _is_word_char(char))
        if known:
            return _words_slowly(text)
    return [match.span() for match in _ALNUM_RUNS.finditer(text)]


def _words_slowly(text: str) -> list[tuple[int, int]]:
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
    """A word as compared: each character case-folded where that gives one character (a final
    sigma matches a sigma; ``ß`` stays itself)."""
    if word.isascii():
        return word.lower()
    return "".join(c if len(c.casefold()) != 1 else c.casefold() for c in word)


def _folded_words(text: str, spans: list[tuple[int, int]]) -> list[str]:
    if text.isascii():
        lowered = text.lower()
        return [lowered[a:b] for a, b in spans]
    folded = text.casefold()
    if len(folded) == len(text):  # every character folded to one: the positions still hold
        return [folded[a:b] for a, b in spans]
    return [fold(text[a:b]) for a, b in spans]


_ASCII_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def _word_list(text: str) -> list[str]:
    """The folded words of ``text`` (ASCII text: split by C string methods alone)."""
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    return _folded_words(text, words(text))


def index_text(text: str) -> str:
    """What the full-text index holds for a message: its folded words, one space apart.

    The index's tokenizer (FTS5's ``ascii``: every non-ASCII character is part of a word) then
    finds exactly these words, so the index and the plain scan agree on every text.
    """
    return " ".join(_word_list(text))


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


def _starts(folded: list[str], term: list[str]) -> list[int]:
    size = len(term)
    first = term[0]
    return [i for i, word in enumerate(folded) if word == first and folded[i : i + size] == term]


def matches(text: str, terms: list[list[str]]) -> bool:
    """Whether ``text`` holds every phrase."""
    lowered = text.lower()
    for term in terms:
        for word in term:
            # lower() and the fold agree on ASCII, so a missing ASCII word rules the text out
            if word.isascii() and word not in lowered:
                return False
    folded = _word_list(text)
    present = set(folded)
    for term in terms:
        if any(word not in present for word in term):
            return False
        if len(term) > 1 and not _starts(folded, term):
            return False
    return True


_SNIPPET_SCAN = 4096  # characters tokenized first when looking for where a snippet starts


def excerpt(text: str, terms: list[list[str]]) -> str:
    """A one-line excerpt of ``text`` around its first matching word, every match in it marked
    (between MARK_OPEN and MARK_CLOSE). Only as much of the text as it takes to find that word
    is split into words: a search over long messages does not tokenize each one whole."""
    longest = max(len(term) for term in terms)
    size = _SNIPPET_SCAN
    while True:
        whole = size >= len(text)
        part = text if whole else text[:size]
        spans = words(part)
        if not whole and spans and spans[-1][1] == len(part):
            spans.pop()  # a word the cut may have split
        folded = _folded_words(part, spans)
        found: set[int] = set()
        for term in terms:
            for i in _starts(folded, term):
                found.update(range(i, i + len(term)))
        first = min(found, default=None)
        # a phrase found near the cut could still hide an earlier one across it: read on
        if whole or (first is not None and first + longest + SNIPPET_TOKENS <= len(spans)):
            break
        size *= 4
    if first is None:
        first = 0
    lo = 0 if len(spans) <= SNIPPET_TOKENS else max(0, first - SNIPPET_TOKENS // 4)
    hi = min(len(spans), lo + SNIPPET_TOKENS)
    more = hi < len(spans) or not whole
    start = spans[lo][0] if lo else 0
    end = spans[hi - 1][1] if more else len(part)
    out = ["…" if lo else ""]
    at = start
    for index in range(lo, hi):
        if index in found:
            a, b = spans[index]
            out += [part[at:a], MARK_OPEN, part[a:b], MARK_CLOSE]
            at = b
    out.append(part[at:end])
    if more:
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
