"""The full-text index and the plain scan find the same messages, whatever the characters (emoji
glued to words, a final sigma, marks, private use), and a snippet of a long message costs a
bounded look at its start, not a pass over all of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pisession.catalog._words as words_module
from pisession.catalog import Catalog
from tests.test_catalog import header, msg, write

TEXTS = [
    "hello🫠 world",  # an emoji newer than SQLite's unicode61 tables, glued to a word
    "🫠hello🥹there",
    "ΟΔΟΣ and οδος and οδοσ",  # final sigma
    "Straße STRASSE strasse",
    "e\u0301cole école ecole",  # a combining mark, and the precomposed letter
    "private\ue000use",
    "x\u0305y over-lined",
    "İstanbul istanbul",
    "snake_case kebab-case dotted.name",
    "中文词 日本語",
]
QUERIES = [
    "hello",
    "there",
    "οδος",
    "οδοσ",
    "ΟΔΟΣ",
    "straße",
    "strasse",
    "école",
    "ecole",
    "private\ue000use",
    "x\u0305y",
    "istanbul",
    "İstanbul",
    "snake",
    "case",
    "kebab case",
    "中文词",
    "world",
    "use",
]


def folder_with(tmp_path: Path, texts: list[str]) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir(exist_ok=True)
    write(
        folder / "s.jsonl",
        header("s"),
        *(msg(f"m{n}", "user", text, 1735787045000 + n) for n, text in enumerate(texts)),
    )
    return folder


def both(tmp_path: Path, folder: Path, query: str) -> tuple[list[object], list[object]]:
    found = []
    for fts in (True, False):
        with Catalog(tmp_path / f"catalog-{fts}.sqlite3", fts=fts) as catalog:
            found.append(catalog.search(query, session_dir=str(folder), limit=None))
    return found[0], found[1]


@pytest.mark.parametrize("query", QUERIES)
def test_the_index_and_the_plain_scan_agree(tmp_path: Path, query: str) -> None:
    folder = folder_with(tmp_path, TEXTS)
    indexed, scanned = both(tmp_path, folder, query)
    assert indexed == scanned


def test_words_glued_to_emoji_and_a_final_sigma_are_found(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, TEXTS)
    for fts in (True, False):
        with Catalog(tmp_path / f"c{fts}.sqlite3", fts=fts) as catalog:
            assert [h.entry_id for h in catalog.search("hello", session_dir=str(folder))] == ["m1", "m0"]
            assert [h.entry_id for h in catalog.search("οδοσ", session_dir=str(folder))] == ["m2"]
            hit = catalog.search("there", session_dir=str(folder))[0]
            assert hit.snippet[hit.marks[0][0] : hit.marks[0][1]] == "there"


ALPHABET = st.sampled_from(
    [
        *"ab AB.-_,'\"*",
        "\U0001fae0",
        "\u03c2",
        "\u03c3",
        "\u03a3",
        "\u00e9",
        "\u0301",
        "\u0305",
        "\ue000",
        "\u00df",
        "\u0130",
        "\u4e2d",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(ALPHABET, min_size=1, max_size=12), min_size=1, max_size=4), data=st.data())
def test_the_index_and_the_plain_scan_agree_on_any_text(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], data: st.DataObject
) -> None:
    tmp_path = tmp_path_factory.mktemp("agree")
    folder = folder_with(tmp_path, texts)
    source = data.draw(st.sampled_from(texts))
    spans = words_module.words(source)
    if not spans:
        return
    a, b = data.draw(st.sampled_from(spans))
    indexed, scanned = both(tmp_path, folder, source[a:b])
    assert indexed == scanned
    assert indexed  # the word's own message at least


def test_a_snippet_looks_only_at_the_start_of_a_long_message(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "the invoice is late " + "and the ledger and the rest " * 100_000  # 2.8 MB
    seen: list[int] = []
    real = words_module.words
    monkeypatch.setattr(words_module, "words", lambda part: seen.append(len(part)) or real(part))
    excerpt = words_module.excerpt(text, [["the"], ["invoice"], ["ledger"], ["and"], ["rest"]])
    assert excerpt.startswith("\x02the\x03 \x02invoice\x03 is late")
    assert max(seen) <= 4 * 4096


def test_a_snippet_finds_a_match_far_into_a_message() -> None:
    text = "filler " * 10_000 + "the needle here " + "filler " * 10
    excerpt = words_module.excerpt(text, [["needle"]])
    assert "\x02needle\x03" in excerpt and excerpt.startswith("…")
