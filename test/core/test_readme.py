"""The README's quick start runs as written.

The README's library snippet (its one fenced ``python`` block) is run in a fresh
interpreter from the repository root, where its relative world path points. It must
exit 0 and print exactly the fenced ``text`` block that follows it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
SNIPPET_TIMEOUT_S = 900.0     # a cold numba cache compiles every kernel first
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced block of the README, in order."""
    with open(README, encoding="utf-8") as stream:
        return FENCE.findall(stream.read())


def library_snippet_and_output() -> tuple[str, str]:
    """The one ``python`` block of the README and the ``text`` block right after it."""
    blocks = readme_blocks()
    python_at = [k for k, (language, _) in enumerate(blocks) if language == "python"]
    assert len(python_at) == 1, f"the README should hold one python block, found {len(python_at)}"
    k = python_at[0]
    assert k + 1 < len(blocks) and blocks[k + 1][0] == "text", "the python block should be followed by its output"
    return blocks[k][1], blocks[k + 1][1]


def test_the_readme_starts_with_the_two_make_commands():
    with open(README, encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    commands = [line.split("#")[0].strip() for line in lines if line.startswith("    ")][:2]
    assert commands == ["make demo", "make test"]


def test_the_readme_library_snippet_runs_and_prints_what_the_readme_says():
    snippet, expected = library_snippet_and_output()
    run = subprocess.run([sys.executable, "-c", snippet], cwd=REPO, env=dict(os.environ),
                         capture_output=True, text=True, timeout=SNIPPET_TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == expected.strip()


def test_the_readme_links_to_docs_that_exist():
    with open(README, encoding="utf-8") as stream:
        text = stream.read()
    targets = {link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", text)}
    local = sorted(t for t in targets if not re.match(r"[a-z]+://", t))
    assert "docs/architecture.md" in local
    missing = [t for t in local if not os.path.exists(os.path.join(REPO, t))]
    assert not missing, missing


def test_the_docs_pages_link_to_files_that_exist():
    docs = os.path.join(REPO, "docs")
    missing = []
    for name in sorted(os.listdir(docs)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(docs, name), encoding="utf-8") as stream:
            links = re.findall(r"\]\(([^)\s]+)\)", stream.read())
        for link in links:
            target = link.split("#")[0]
            if target and not re.match(r"[a-z]+://", target) and not os.path.exists(os.path.join(docs, target)):
                missing.append(f"{name}: {link}")
    assert not missing, missing
