"""The viewer's Markdown renderer under Node (no browser needed): it stays linear on input built
to make its regular expressions backtrack, and still renders ordinary Markdown. Skipped where
``node`` is missing. The bound below only detects a hang; it asserts no timing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pisession import _viewer

HARNESS = Path(__file__).parent / "browser" / "render_markdown.mjs"
VIEWER_JS = Path(_viewer.__file__).parent / "viewer.js"
SIZE = 400_000
HANG = 30  # seconds: before the fix each of these took minutes; after it, well under one

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def render(texts: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        ["node", str(HARNESS), str(VIEWER_JS)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=HANG,
        check=True,
    )
    out: dict[str, str] = json.loads(done.stdout)
    return out


def repeat(unit: str) -> str:
    return unit * (SIZE // len(unit))


ADVERSARIAL = {
    "**a ": "<strong>",  # an opening mark with no closer, 100,000 times
    "__a ": "<strong>",
    "~~a ": "<del>",
    "[": "<a ",  # a label that never closes
    '[a](b "x ': "<a ",  # a title that never closes
}


@pytest.fixture(scope="module")
def adversarial_html() -> dict[str, str]:
    return render({unit: repeat(unit) for unit in ADVERSARIAL})  # one node process for all


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_one_huge_adversarial_message_renders(unit: str, adversarial_html: dict[str, str]) -> None:
    html = adversarial_html[unit]
    assert ADVERSARIAL[unit] not in html
    assert len(html) >= SIZE  # every character is still there, escaped


def test_ordinary_markdown_still_renders() -> None:
    html = render(
        {
            "m": '**bold** __strong__ ~~gone~~ *em* _em2_ [link](https://a.example/x "T") ![pic](p.png)'
            " ***mixed*** [a [b](https://b.example) snake_case_name"
        }
    )["m"]
    assert "<strong>bold</strong>" in html
    assert "<strong>strong</strong>" in html
    assert "<del>gone</del>" in html
    assert "<em>em</em>" in html and "<em>em2</em>" in html
    assert '<a href="https://a.example/x" title="T"' in html
    assert "🖼 pic" in html
    assert '<a href="https://b.example"' in html
    assert "snake_case_name" in html


def test_marks_spanning_the_whole_huge_message_still_pair() -> None:
    html = render({"m": "**" + "a " * (SIZE // 2) + "b**"})["m"]
    assert html.count("<strong>") == 1
