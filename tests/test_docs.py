"""Every reference in the docs resolves: relative links (and their #anchors), named example files,
and the DESIGN.md sections code and docs cite; the README's command outputs are what the commands print.
"""

from __future__ import annotations

import re
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


def readme_session(command: str) -> list[str]:
    """The lines the README shows after `$ <command>` in a code block."""
    text = (ROOT / "README.md").read_text()
    block = text.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


@pytest.mark.parametrize(("command", "exit_code"), [
    ("modelplane validate examples/qwen3-8b/fleet.yaml docs/bad.yaml", 1),
    ("modelplane plan examples/qwen3-8b/fleet.yaml examples/scaled.yaml", 0),
])
def test_readme_examples_print_what_the_readme_shows(command: str, exit_code: int) -> None:
    run = subprocess.run([sys.executable, "-m", "modelplane.cli", *command.split()[1:]], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    printed = (run.stdout + run.stderr).splitlines()
    shown = [line for line in readme_session(command) if line != "..."]
    assert run.returncode == exit_code
    assert [line for line in shown if line not in printed] == []
