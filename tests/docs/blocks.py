"""Code blocks of README.md and docs/*.md, and how the docs tests run them.

A shell or Python block is preceded by an HTML comment that says how it is tested::

    <!-- run: fast -->                       run in the default tier
    <!-- run: slow; tiny: k=v k2=v2 -->      run in the slow tier; `tiny` overrides are appended
                                             to every `python train.py` command of the block
    <!-- run: slow; needs: llm -->           ... needs the `llm` extra (llama-cpp-python, SmolLM2)
    <!-- run: no (why) -->                   not run (still composed: see test_docs.py)
    <!-- install: ... -->                    the install command (.ci/run runs it in a fresh venv)

Blocks of one page run in order in one working directory, as a reader would run them.
Lines ``--8<-- "path"`` (pymdownx.snippets) are replaced by the file they include.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
TAG = re.compile(r"<!--\s*((?:run|install):.*?)-->$", re.S)
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)
TESTED_LANGS = {"bash", "sh", "shell", "console", "python", "py"}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    tier: str | None                   # fast | slow | no | None (untagged)
    tiny: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def shell(self) -> bool:
        return self.lang in ("bash", "sh", "shell", "console")


def expand_snippets(text: str) -> str:
    return SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text().rstrip("\n"), text)


def parse_tag(tag: str | None) -> tuple[str | None, list[str], list[str]]:
    if tag is None:
        return None, [], []
    tier, tiny, needs = None, [], []
    for part in tag.split(";"):
        key, _, value = part.strip().partition(":")
        value = value.strip()
        if key == "run":
            tier = value.split()[0] if value else None
        elif key == "tiny":
            tiny = shlex.split(value)
        elif key == "needs":
            needs = value.split()
        elif key == "install":      # the install command: CI runs it in a fresh virtual environment
            tier = tier or "no"
    return tier, tiny, needs


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip()
        # the tag is the HTML comment right before the fence
        tag = TAG.match(before[before.rfind("<!--"):]) if before.endswith("-->") else None
        tag_text = tag.group(1) if tag else None
        tier, tiny, needs = parse_tag(tag_text)
        body = expand_snippets(m.group("body"))
        body = "\n".join(line[len(m.group("indent")):] for line in body.splitlines())
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang").lower(), body, tier, tiny, needs))
    return out


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def logical_lines(body: str) -> list[str]:
    """Shell lines with backslash continuations joined."""
    out, cur = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
        else:
            out.append(cur + line)
            cur = ""
    if cur:
        out.append(cur)
    return out


ENTRY = re.compile(r"^\s*python\s+(train|predict)\.py(\s|$)")


def entry_commands(block: Block) -> list[tuple[str, str]]:
    """(``train`` | ``predict``, the rest of the line) for every entry-point command of a shell block."""
    cmds = []
    for line in logical_lines(block.body):
        m = ENTRY.match(line)
        if m:
            cmds.append((m.group(1), line[m.end():]))
    return cmds


def with_tiny(body: str, tiny: list[str]) -> str:
    """``body`` with ``tiny`` overrides appended to each ``python train.py`` command."""
    if not tiny:
        return body
    extra = " " + " ".join(shlex.quote(t) for t in tiny)
    lines = []
    for line in logical_lines(body):
        if re.match(r"^\s*python\s+train\.py(\s|$)", line):
            code, amp = (line.rstrip()[:-1], " &") if line.rstrip().endswith("&") else (line, "")
            code = re.sub(r"\s+#[^'\"]*$", "", code)   # a trailing comment
            line = code.rstrip() + extra + amp
        lines.append(line)
    return "\n".join(lines)
