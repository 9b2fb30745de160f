"""The documentation's links: every relative link in README.md and docs/*.md names a file that
exists, and every #anchor a heading of its target (GitHub's slug rule); the README stays short,
keeps its two commands at the top, and links every page of docs/. Reads files only: no build,
no mount."""

import re
from pathlib import Path

import pytest

from sbxutil import REPO_ROOT

pytestmark = pytest.mark.no_daemon

README = REPO_ROOT / "README.md"
README_MAX_LINES = 260
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).+?\1")
# The target of [text](target "title") and ![alt](target), found by its "](" alone, since the
# text may begin on an earlier line.
INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def links(path):
    """(line number, target) of every Markdown link of a page, code spans left out."""
    for n, line in prose_lines(path):
        if m := REFDEF.match(line):
            yield n, m.group(1)
            continue
        for m in INLINE.finditer(CODE_SPAN.sub("", line)):
            yield n, m.group(1)


def slug(heading):
    """GitHub's anchor of a heading: its text (links and markup gone) lowercased, every
    character but letters, digits, '_', '-' and spaces dropped, spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path):
    """Every anchor of a page's headings, repeats numbered as GitHub numbers them."""
    seen, out = {}, set()
    for _, line in prose_lines(path):
        if m := HEADING.match(line):
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def is_external(target):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None


def test_pages_exist():
    assert README.is_file()
    assert DOCS, "docs/ holds no Markdown page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for n, target in links(page):
        if is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        where = f"{page.relative_to(REPO_ROOT)}:{n}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where}: no heading with that anchor")
    assert not broken, "\n".join(broken)


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; its details belong in docs/"


def test_readme_starts_with_its_two_commands():
    """The title, then the first two commands a reader meets: mount with the default config in
    the foreground, and run every test (both on a fresh Debian 12 machine, as root)."""
    text = README.read_text()
    assert text.startswith("# sbxfs\n"), "the README does not start with its title"
    blocks = re.findall(r"^```sh\n(.*?)\n```", text, re.M | re.S)
    assert blocks[:2] == ["scripts/bootstrap && build/sbxfs -f /mnt/sbx",
                          "scripts/bootstrap --test && tests/run-all"]
    assert text.index(blocks[1]) < 600, "the two commands are not at the top"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_doc_page_shape(page):
    """A title, a one-line statement of what the page covers, and a way back to the README;
    and the README links the page."""
    lines = page.read_text().splitlines()
    assert lines[0].startswith("# "), f"{page.name} does not start with a title"
    intro = next(line for line in lines[1:] if line.strip())
    assert "](../README.md)" in intro, f"{page.name}: no link back to the README under its title"
    linked = {(README.parent / t.partition("#")[0]).resolve()
              for _, t in links(README) if not is_external(t)}
    assert page.resolve() in linked, f"README.md does not link docs/{page.name}"


def test_slug_rule():
    assert slug("Status / limits") == "status--limits"
    assert slug("A bounded workspace (`[sandbox] workspace_max`)") == \
        "a-bounded-workspace-sandbox-workspace_max"
    assert slug("Run handles, result and output") == "run-handles-result-and-output"
    assert slug("The [JavaScript](x.md) drivers") == "the-javascript-drivers"


# A repository path named in a code span: it begins with one of the repository's folders.
REPO_PATH = re.compile(r"`((?:src|fs|tests|conf|examples|clients|scripts|docs|\.ci)/[^`\s]+)`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_repository_paths_in_the_docs_exist(page):
    """`src/core/loop.c` and the like name files that are there; a pattern (`*`, NAME, <...>,
    {...}, $VAR, ...) stands for many and is left out."""
    missing = []
    for n, line in enumerate(page.read_text().splitlines(), 1):
        for m in REPO_PATH.finditer(line):
            path = m.group(1).rstrip(".,:;").split("#")[0]
            if any(c in path for c in "*<>{}$") or "NAME" in path or "..." in path:
                continue
            if not (REPO_ROOT / path).exists():
                missing.append(f"{page.relative_to(REPO_ROOT)}:{n}: {path}")
    assert not missing, "paths that are not in the repository:\n" + "\n".join(missing)
