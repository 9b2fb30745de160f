"""The layers of the C sources, checked over their `#include "..."` lines.

A folder of src/ or fs/ may include headers of its own folder and of the folders its row of
LAYERS names, and of the folders below those (the rows are followed down):

  folder                              may include
  src/util                            libc only
  src/core                            util
  src/isolation                       core and below
  src/launch                          isolation and below
  src/shell                           launch and below
  src/expose                          launch and below
  src/net                             launch and below
  src/session                         shell, net and below (never job, term or context)
  src/job, src/term, src/context      session and below (never each other)
  src/sandbox                         job, term, context, expose and below
  src/snapshot                        src/sandbox and below
  src/fleet                           core and below (the fleet's supervisor runs sbxfs
                                      programs, and reads their configs for its budgets)
  src/launcher, src/git, src/attach   util only
  src/netproxy                        util only
  fs/base                             src/core and below
  fs/workspace                        fs/base, src/core and below
  fs/contexts                         fs/base, src/context and below
  fs/control, fs/terms, fs/ports      fs/base, src/sandbox and below (never fs/workspace,
                                      fs/contexts, or each other)
  fs/snapshots                        fs/base, fs/workspace (its id swap), src/snapshot and
                                      below
  fs/fleet                            src/fleet and below (sbxfs-fleet: its own tree, not a
                                      part of a sandbox's)
  fs (main.c, ops.c, root.c, ...)     anything

The FUSE side is made of parts, one folder each (PARTS): a part serves the inodes its tag in
ino.h names, through one `const struct fuse_lowlevel_ops` that fs/ops.c forwards to, and owns
its kinds: the enumerators its headers declare are named by no fs/ file outside it.

So nothing in src/ includes anything in fs/. Every quoted include must name a header of one
folder (its own folder's first, as the compiler looks there first), no include may cross
folders in a cycle, and each folder's meson.build may depend only on the libraries of the
folders it may include, so that the compiler refuses what this test would.

The test starts no sbxfs: it reads the source tree.
"""

import re
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_daemon

REPO = Path(__file__).resolve().parents[2]

# Each folder and the folders right below it; ANY: the folder may include anything.
ANY = "*"
LAYERS = {
    "src/util": [],
    "src/core": ["src/util"],
    "src/isolation": ["src/core"],
    "src/launch": ["src/isolation"],
    "src/shell": ["src/launch"],
    "src/expose": ["src/launch"],
    "src/net": ["src/launch"],
    "src/session": ["src/shell", "src/net"],
    "src/job": ["src/session"],
    "src/term": ["src/session"],
    "src/context": ["src/session"],
    "src/sandbox": ["src/job", "src/term", "src/context", "src/expose"],
    "src/snapshot": ["src/sandbox"],
    "src/fleet": ["src/core"],
    "src/launcher": ["src/util"],
    "src/git": ["src/util"],
    "src/attach": ["src/util"],
    "src/netproxy": ["src/util"],
    "fs/base": ["src/core"],
    "fs/workspace": ["fs/base"],
    "fs/contexts": ["fs/base", "src/context"],
    "fs/control": ["fs/base", "src/sandbox"],
    "fs/terms": ["fs/base", "src/sandbox"],
    "fs/ports": ["fs/base", "src/sandbox"],
    "fs/snapshots": ["fs/base", "fs/workspace", "src/snapshot"],
    "fs/fleet": ["src/fleet"],
    "fs": [ANY],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def below(folder):
    """The folders folder may include, its own not counted; {ANY} for anything."""
    seen, todo = set(), list(LAYERS[folder])
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(LAYERS.get(f, []))
    return seen


def sources():
    """Every C source and header of src/ and fs/, by the folder that holds it."""
    return sorted(p for top in ("src", "fs") for p in (REPO / top).rglob("*")
                  if p.suffix in (".c", ".h"))


def folder_of(path):
    return path.parent.relative_to(REPO).as_posix()


def headers():
    """Header name -> the folders holding a header of that name."""
    where = defaultdict(set)
    for p in sources():
        if p.suffix == ".h":
            where[p.name].add(folder_of(p))
    return where


def includes():
    """(file, folder, included header, the header's folder or None if none or several)."""
    where = headers()
    for p in sources():
        own = folder_of(p)
        for name in INCLUDE.findall(p.read_text()):
            if (p.parent / name).is_file():
                target = own
            else:
                found = where.get(Path(name).name, set()) if "/" not in name else set()
                target = next(iter(found)) if len(found) == 1 else None
            yield p.relative_to(REPO).as_posix(), own, name, target


def test_every_folder_has_a_rule():
    folders = {folder_of(p) for p in sources()}
    assert sorted(folders - LAYERS.keys()) == []


def test_every_include_names_a_header_of_one_folder():
    bad = [f"{path}: \"{name}\"" for path, _, name, target in includes() if target is None]
    assert bad == []


def test_includes_follow_the_layers():
    bad = []
    for path, own, name, target in includes():
        allowed = below(own)
        if target is None or target == own or ANY in allowed:
            continue
        if target not in allowed:
            bad.append(f"{path} includes \"{name}\" of {target}")
    assert bad == []


def test_src_includes_nothing_of_fs():
    bad = [f"{path}: \"{name}\"" for path, own, name, target in includes()
           if own.startswith("src/") and target and (target == "fs" or target.startswith("fs/"))]
    assert bad == []


def folder_graph():
    graph = defaultdict(set)
    for _, own, _, target in includes():
        if target and target != own:
            graph[own].add(target)
    return graph


def test_no_include_cycle_between_folders():
    graph = folder_graph()
    state, cycles = {}, []

    def visit(f, stack):
        state[f] = "open"
        stack.append(f)
        for g in sorted(graph[f]):
            if state.get(g) == "open":
                cycles.append(" -> ".join(stack[stack.index(g):] + [g]))
            elif g not in state:
                visit(g, stack)
        stack.pop()
        state[f] = "done"

    for f in sorted(graph):
        if f not in state:
            visit(f, [])
    assert cycles == []


DECLARE = re.compile(r"^(\w+_dep)\s*=\s*declare_dependency\(", re.MULTILINE)
LIBRARY = re.compile(r"(?:static_library|executable|declare_dependency)\((.*?)\)\n", re.DOTALL)
DEPS = re.compile(r"dependencies\s*:\s*\[([^\]]*)\]")


def test_meson_dependencies_follow_the_layers():
    """What a folder's library or program is built against is what its rule allows, so a
    wrong include does not compile."""
    builds = {folder_of(p): p.read_text() for top in ("src", "fs")
              for p in (REPO / top).rglob("meson.build")}
    dep_folder = {m: f for f, text in builds.items() for m in DECLARE.findall(text)}
    bad = []
    for folder, text in builds.items():
        allowed = below(folder) if folder in LAYERS else set()
        for call in LIBRARY.findall(text):
            for deps in DEPS.findall(call):
                for dep in (d.strip() for d in deps.split(",")):
                    target = dep_folder.get(dep)
                    if target and target != folder and ANY not in allowed \
                            and target not in allowed:
                        bad.append(f"{folder}/meson.build: {dep} ({target})")
    assert bad == []


# Each part's folder of the FUSE side and its operation tables (snapshots/ and the files/ view
# of each snapshot share one folder).
PARTS = {
    "fs/workspace": ["ws_ops"],
    "fs/control": ["ctl_ops"],
    "fs/terms": ["term_ops"],
    "fs/ports": ["port_ops"],
    "fs/contexts": ["ctx_ops"],
    "fs/snapshots": ["snap_ops", "view_ops"],
}
TABLE = re.compile(r"^const struct fuse_lowlevel_ops (\w+) = \{", re.MULTILINE)
ENUM = re.compile(r"\benum\s+\w*\s*\{([^}]*)\}", re.DOTALL)
ENUMERATOR = re.compile(r"^\s*([A-Z][A-Z0-9_]*)\b", re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def test_each_part_has_one_ops_table_that_ops_c_forwards_to():
    tables = defaultdict(list)
    for p in sources():
        for name in TABLE.findall(p.read_text()):
            tables[folder_of(p)].append(name)
    ops_c = (REPO / "fs/ops.c").read_text()
    assert {f: sorted(names) for f, names in tables.items() if f in PARTS} == \
        {f: sorted(names) for f, names in PARTS.items()}
    assert [name for names in PARTS.values() for name in names if f"&{name}" not in ops_c] == []


def part_kinds(folder):
    """The enumerators a part's headers declare."""
    names = set()
    for p in (REPO / folder).glob("*.h"):
        for body in ENUM.findall(COMMENT.sub("", p.read_text())):
            names.update(ENUMERATOR.findall(body))
    return names


def test_no_fs_file_outside_a_part_names_its_kinds():
    bad = []
    # The workspace's inodes are the host's files: it has no kinds.
    assert [f for f in PARTS if not part_kinds(f)] == ["fs/workspace"]
    for folder in PARTS:
        kinds = part_kinds(folder) or {"NO_KIND"}
        word = re.compile(r"\b(" + "|".join(sorted(kinds)) + r")\b")
        for p in sources():
            if folder_of(p) == folder or not folder_of(p).startswith("fs"):
                continue
            for m in word.finditer(COMMENT.sub("", p.read_text())):
                bad.append(f"{p.relative_to(REPO)} names {m.group(1)} of {folder}")
    assert bad == []
