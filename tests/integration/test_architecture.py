"""docs/architecture.md's map against the code: every function its walk of one command names
is defined in a file that step names, and every part it names has the operation table it says.
(That every repository path written in docs/ exists is test_docs_links.py's.)

The test starts no sbxfs: it reads the source tree.
"""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_daemon

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"


def walk_steps():
    text = DOC.read_text()
    walk = text[text.index("## The walk of one command"):]
    return re.split(r"\n(?=\d+\. )", walk)[1:]


def defines(path, name):
    """Whether the C file defines the function (its name at the start of a definition)."""
    return re.search(rf"^\w[\w\s\*]*\b{name}\([^;]*\)\n\{{", path.read_text(), re.MULTILINE)


def test_the_walk_has_its_steps():
    assert len(walk_steps()) >= 5


def test_each_function_of_the_walk_is_defined_in_a_file_its_step_names():
    bad = []
    for step in walk_steps():
        files = [REPO / f for f in re.findall(r"`((?:src|fs)/[\w/]+\.c)`", step)]
        names = [n for n in re.findall(r"`([a-z]\w*)`", step) if "_" in n]
        assert files and names, step
        for name in names:
            if not any(defines(f, name) for f in files):
                bad.append(f"{name} (step: {step[:40]}...)")
    assert bad == []


def test_each_part_it_names_has_that_table():
    text = DOC.read_text()
    tables = re.findall(r"`(\w+_ops)`", text[text.index("## The parts"):])
    assert len(tables) >= 7
    defined = {m for p in (REPO / "fs").rglob("*.c")
               for m in re.findall(r"^const struct fuse_lowlevel_ops (\w+) = \{",
                                   p.read_text(), re.MULTILINE)}
    assert sorted(set(tables) - defined) == []
