"""Every reference in the docs resolves: relative links (and their #anchors), named example files,
and the DESIGN.md sections code and docs cite; every command-output block of the README and docs/ (a fenced
block that starts with `$ <command>`) is exactly what the command prints.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = sorted({ROOT / "README.md", ROOT / "DESIGN.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("examples/**/*.md")})
SOURCES = sorted({*DOCS, *ROOT.glob("modelplane/**/*.py"), *ROOT.glob("tests/**/*.py"),
                  *ROOT.glob("examples/**/*.y*ml")} - {Path(__file__)})

LINK = re.compile(r"\]\(([^)\s]+)\)")
EXAMPLE_FILE = re.compile(r"(?<![\w/.])examples/[\w.-]+(?:/[\w.-]+)*")
DESIGN_SECTION = re.compile(r"DESIGN(?:\.md)? section (\d+)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in markdown.read_text().splitlines() if line.startswith("#")}


def links(markdown: Path) -> list[str]:
    return [target for target in LINK.findall(markdown.read_text()) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("markdown", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(markdown: Path) -> None:
    broken = []
    for target in links(markdown):
        path, _, anchor = target.partition("#")
        resolved = (markdown.parent / path).resolve() if path else markdown
        if not resolved.exists() or (anchor and resolved.suffix == ".md" and anchor not in anchors(resolved)):
            broken.append(target)
    assert broken == []


def test_named_example_files_exist() -> None:
    named = {(source.relative_to(ROOT), name.rstrip(".")) for source in SOURCES
             for name in EXAMPLE_FILE.findall(source.read_text())}
    assert sorted((str(source), name) for source, name in named if not (ROOT / name).exists()) == []


def test_cited_design_sections_exist() -> None:
    sections = {match.group(1) for line in (ROOT / "DESIGN.md").read_text().splitlines()
                if (match := re.match(r"## (\d+)\. ", line))}
    cited = {(str(source.relative_to(ROOT)), number) for source in SOURCES
             for number in DESIGN_SECTION.findall(source.read_text())}
    assert cited, "the scan finds the citations"
    assert sorted(c for c in cited if c[1] not in sections) == []


SESSION = re.compile(r"^```[a-z]*\n\$ (?P<command>.+?)\n(?P<shown>.*?)^```", re.S | re.M)
"""A command-output block: a fenced block whose first line is `$ <command>`, then what it prints."""
OUTPUT_DOCS = sorted({ROOT / "README.md", *ROOT.glob("docs/**/*.md")})


def sessions(markdown: Path) -> list[tuple[str, str]]:
    """(command, what the block shows it prints) for every command-output block of a document."""
    return [(m["command"], m["shown"]) for m in SESSION.finditer(markdown.read_text())]


E2E_SESSIONS = {"make demo": ROOT / "tests" / "e2e" / "test_demo.py"}
"""Blocks of commands that need the local servers and the real engine: `make e2e` runs and compares them."""
CLI_SESSIONS = [(markdown, command, shown) for markdown in OUTPUT_DOCS for command, shown in sessions(markdown)
                if command not in E2E_SESSIONS]


def test_every_command_output_block_is_run_by_a_test() -> None:
    commands = [command for markdown in OUTPUT_DOCS for command, _ in sessions(markdown)]
    assert [c for c in commands if shlex.split(c)[0] != "modelplane" and c not in E2E_SESSIONS] == [], \
        "only modelplane commands run here; the others are run by the e2e module E2E_SESSIONS names"
    assert all(f"$ {command}" in test.read_text() for command, test in E2E_SESSIONS.items())
    assert len(CLI_SESSIONS) >= 4


FENCE = re.compile(r"^```(?P<language>[a-z]*)\n(?P<body>.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!-- output of (?P<test>tests/[\w/]+\.py): (?P<label>[^>]+?) -->\n$")
"""The line above an output block that a test other than a `$` session compares (its label names the block)."""


def test_every_output_block_is_compared_by_a_test() -> None:
    """A fenced block without a language is what a command prints: a `$` session (compared above, or by
    the module E2E_SESSIONS names) or a block under an `<!-- output of TEST: LABEL -->` line whose test
    module reads it by that label. Listings, diagrams and synopses are marked `text`."""
    unchecked = []
    for markdown in OUTPUT_DOCS:
        text = markdown.read_text()
        for fence in FENCE.finditer(text):
            if fence["language"] or fence["body"].startswith("$ "):
                continue
            marker = MARKER.search(text[:fence.start()].rsplit("\n\n", 1)[-1])
            if not (marker and (ROOT / marker["test"]).is_file()
                    and marker["label"] in (ROOT / marker["test"]).read_text()):
                unchecked.append(f"{markdown.relative_to(ROOT)}:{text[:fence.start()].count(chr(10)) + 1}")
    assert unchecked == []


@pytest.mark.parametrize(("markdown", "command", "shown"), CLI_SESSIONS,
                         ids=[f"{m.relative_to(ROOT)}: {c}" for m, c, _ in CLI_SESSIONS])
def test_command_output_blocks_are_what_the_commands_print(markdown: Path, command: str, shown: str) -> None:
    run = subprocess.run([sys.executable, "-m", "modelplane.cli", *shlex.split(command)[1:]], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert run.stdout == shown
