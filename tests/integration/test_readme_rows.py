"""The mount's README lists exactly its files: the parts make it from their rows (each row's
one-line help), and a walk of a mount with one of everything (a session with a command, a
background process, a terminal, a context with a cell and a displayed value, an exposed port,
a snapshot) finds every path it lists and no path it does not. docs/files.md's table and the
README.md's name only paths the mount's README lists.
"""

import os
import re
import socket
import stat
from pathlib import Path

import pytest

from sbxutil import read_bytes, wait_until, write_bytes

REPO = Path(__file__).resolve().parents[2]
HELP_COLUMN = 32

# Names the walk cannot see: an import exists only while its tar is written.
UNSEEN = {"snapshots/import/NAME"}


def readme_paths(text):
    """The paths of the README's lines: PATH, spaces to the help column, and its help; a path
    too long for that is alone on its line, its help on the next."""
    lines = text.split("\n\n")[2].splitlines()
    paths = []
    for i, line in enumerate(lines):
        if line.startswith(" "):
            assert line[HELP_COLUMN:].strip() and line[:HELP_COLUMN].isspace(), line
            continue
        if i + 1 < len(lines) and lines[i + 1].startswith(" "):
            assert len(line) >= HELP_COLUMN, line
            paths.append(line)
            continue
        path, help_text = line[:HELP_COLUMN].rstrip(), line[HELP_COLUMN:]
        assert help_text.strip() and not help_text.startswith(" "), f"no help: {line!r}"
        paths.append(path)
    return paths


# What each directory's own names stand for in the README: (pattern of the directory, the
# placeholder of its variable names, the names it has as they are).
PLACEHOLDERS = [
    (r"sessions", "ID", {"clone"}),
    (r"sessions/ID/runs", "N", set()),
    (r"sessions/ID/procs", "NAME", {"ctl"}),
    (r"sessions/ID/terms", "NAME", set()),
    (r"procs", "SESSION:NAME", {"ctl"}),
    (r"contexts", "NAME", {"clone"}),
    (r"contexts/NAME/cells", "N", set()),
    (r"contexts/NAME(/cells/N)?/results", "K.FORMAT", set()),
    (r"ports", "PORT", {"expose"}),
    (r"snapshots", "NAME", {"clone", "ctl", "import"}),
    (r"snapshots/import", "NAME", set()),
]


def pattern_of(parent, name):
    for dir_pattern, placeholder, fixed in PLACEHOLDERS:
        if re.fullmatch(dir_pattern, parent) and name not in fixed:
            return placeholder
    return name


def walk(mnt):
    """The README path of everything in the mount but workspace/'s and files/'s contents."""
    seen = set()

    def go(real, shown):
        for name in sorted(os.listdir(real)):
            path = os.path.join(real, name)
            rel = (shown + "/" if shown else "") + pattern_of(shown, name)
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
            seen.add(rel + ("/" if is_dir else ""))
            if is_dir and rel != "workspace" and not rel.endswith("/files"):
                go(path, rel)

    go(str(mnt), "")
    return seen


@pytest.fixture(scope="module")
def everything(sbx):
    pytest.importorskip("IPython", reason="python3-ipython is not installed (scripts/bootstrap)")
    mnt = sbx.mnt
    session = sbx.new_session()
    s = session.name
    sbx.run(session, "true")
    os.mkdir(mnt / "sessions" / s / "procs" / "p")
    write_bytes(mnt / "sessions" / s / "procs" / "p" / "cmd", b"sleep 600\n")
    os.mkdir(mnt / "sessions" / s / "terms" / "t")
    os.mkdir(mnt / "contexts" / "c")
    write_bytes(mnt / "contexts" / "c" / "code", b"'shown'\n")
    read_bytes(mnt / "contexts" / "c" / "cells" / "1" / "result", timeout=60)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    os.mkdir(mnt / "ports" / str(port))
    os.mkdir(mnt / "snapshots" / "snap")
    wait_until(lambda: b"state ready" in read_bytes(mnt / "snapshots" / "snap" / "status"),
               60, "the snapshot is ready")
    yield mnt
    write_bytes(mnt / "sessions" / s / "procs" / "p" / "ctl", b"kill KILL\n")
    for d in ("snapshots/snap", f"ports/{port}", "contexts/c", f"sessions/{s}"):
        os.rmdir(mnt / d)


def test_the_readme_lists_exactly_the_files_of_the_mount(everything):
    listed = readme_paths(read_bytes(everything / "README").decode())
    assert len(listed) == len(set(listed)), "a path is listed twice"
    found = walk(everything)
    assert sorted(set(listed) - found - UNSEEN) == [], "listed, not in the mount"
    assert sorted(found - set(listed)) == [], "in the mount, not listed"


def test_the_readme_is_in_the_order_of_its_paths(everything):
    listed = readme_paths(read_bytes(everything / "README").decode())
    assert listed == sorted(listed)


def as_listed(path):
    """A path as the README writes it: its variable names by their placeholders."""
    shown = ""
    for name in path.rstrip("/").split("/"):
        shown = (shown + "/" if shown else "") + pattern_of(shown, name)
    return shown + ("/" if path.endswith("/") else "")


def documented_paths(page):
    """The paths in the first column of the page's tables, as the README writes them; a name
    after a path in the same cell (`ports/PORT/url`, `address`) is that path's sibling."""
    paths = set()
    for row in re.findall(r"^\| (`[^|]*`)[^|]* \|", page.read_text(), re.MULTILINE):
        names = re.findall(r"`([^`]+)`", row)
        first = names[0].rstrip("/")
        parent = first.rsplit("/", 1)[0] + "/" if "/" in first else ""
        for path in names:
            paths.add(as_listed(path if path is names[0] or "/" in path else parent + path))
    return paths


@pytest.mark.parametrize("page", ["docs/files.md", "README.md"])
def test_the_docs_tables_name_only_files_of_the_mount(sbx, page):
    listed = set(readme_paths(read_bytes(sbx.mnt / "README").decode()))
    names = listed | {p.rstrip("/") for p in listed} | {os.path.basename(p.rstrip("/"))
                                                       for p in listed}
    bad = []
    for path in documented_paths(REPO / page):
        # docs/files.md writes a run's and a process's files as runs/N/ and NAME/.
        if path not in names and path.rstrip("/") not in names:
            bad.append(path)
    assert bad == []


def test_docs_files_md_has_a_row_for_every_directory_and_its_files(sbx):
    """Every directory of the mount has its row in docs/files.md, and every file its own row
    or its directory's (a run's files are the session's, read-only: one row says so)."""
    listed = readme_paths(read_bytes(sbx.mnt / "README").decode())
    documented = documented_paths(REPO / "docs/files.md")

    def has_row(path):
        return path in documented or path.rstrip("/") in documented

    def parent(path):
        return path.rstrip("/").rsplit("/", 1)[0] + "/" if "/" in path.rstrip("/") else ""

    missing = [p for p in listed
               if not has_row(p) and (p.endswith("/") or not has_row(parent(p)))]
    assert missing == []
