"""Fenced code blocks of the repository's Markdown files, for the tests that run them.

A page's ```python blocks are read in order; a tutorial's blocks build on each other,
so a page is run as one module made of all its blocks (as a reader copying them in
order would). Blocks fenced as ```py are illustrations that are not run (none so far).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def blocks(text: str, lang: str) -> list[str]:
    """The blocks fenced as ```<lang> in a Markdown text, in order."""
    fence = re.compile(rf"^```{re.escape(lang)}\n(.*?)^```$", re.DOTALL | re.MULTILINE)
    return [m.group(1) for m in fence.finditer(text)]


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return blocks(text, "python")


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a line such as "## Writing a controller") up to the
    next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    m = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: m.start()] if m else rest
