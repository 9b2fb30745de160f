"""Randomized differential test of workspace/ file data against a native file.

The same random sequence of operations is applied to a file in workspace/ and to a file in a
native directory (next to the backing directory, same filesystem), and their contents and
sizes are compared after every step; every COMPARE_BACKING_EVERY steps the backing file itself
is compared too (what the sandbox would read). Operations: pwrite at random offsets (plain, and
through O_DIRECT with a misaligned buffer on the mount side), O_APPEND writes, ftruncate and
truncate by path, fallocate in every mode, writes through a MAP_SHARED mapping, copy_file_range
within the file and from a second file, and preads of random ranges.

Environment:
  SBXFS_FUZZ_SEED   seed (default 4242); a failure prints the seed and the step
  SBXFS_FUZZ_STEPS  steps of the main run (default 20000); the runs with daemon I/O and
                    without caching do a quarter of it each
"""

import errno
import mmap
import os
import random
import tempfile

import pytest

from posixops import (FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE,
                      FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE, fallocate)
from posixutil import start_mount
from sbxutil import stopped_cleanly

pytestmark = pytest.mark.host_side

SEED = int(os.environ.get("SBXFS_FUZZ_SEED", "4242"))
STEPS = int(os.environ.get("SBXFS_FUZZ_STEPS", "20000"))
MAX_SIZE = 256 * 1024
BLOCK = 4096
COMPARE_BACKING_EVERY = 25

CONFIGS = {
    "kernel": (None, STEPS),
    "fuse": ("[workspace]\nmount = fuse\n", STEPS),
    "fuse-daemon-io": ("[workspace]\nmount = fuse\npassthrough = no\n", max(1, STEPS // 4)),
    "fuse-uncached": ("[workspace]\nmount = fuse\npassthrough = no\ncache = no\n",
                      max(1, STEPS // 4)),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def fm(request):
    config, steps = CONFIGS[request.param]
    m = start_mount("sbxfs-fuzz-", config)
    m.fuzz_steps = steps
    m.fuzz_name = request.param
    try:
        yield m
    finally:
        stopped_cleanly(m)


class Side:
    """One file (and a second one, the copy source) opened for the whole run."""

    def __init__(self, directory, mount_side):
        self.dir = directory
        self.path = os.path.join(directory, "f")
        self.src = os.path.join(directory, "src")
        # mount_side: O_DIRECT with a misaligned buffer (the FUSE workspace takes it; a
        # kernel-mounted one answers as the backing filesystem does, so both sides use it).
        self.mount_side = mount_side
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.afd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.sfd = os.open(self.src, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        # The mount side's O_DIRECT writes use a misaligned buffer; the native side writes
        # the same bytes without O_DIRECT (its filesystem wants alignment).
        self.dfd = (os.open(self.path, os.O_RDWR | os.O_DIRECT) if mount_side else self.fd)

    def close(self):
        for fd in {self.fd, self.afd, self.sfd, self.dfd}:
            os.close(fd)

    def content(self):
        size = os.fstat(self.fd).st_size
        return os.pread(self.fd, size + 1, 0), size


def misaligned(data):
    m = mmap.mmap(-1, len(data) + 2 * BLOCK)
    m[1:1 + len(data)] = data
    return m, memoryview(m)[1:1 + len(data)]


def apply(side, op, rnd_args):
    """Applies op to side; returns its outcome (a value or an errno) for comparison."""
    kind = op[0]
    try:
        if kind == "pwrite":
            _, off, data = op
            return os.pwrite(side.fd, data, off)
        if kind == "direct":
            _, off, data = op
            if side.mount_side:
                m, view = misaligned(data)
                try:
                    return os.pwritev(side.dfd, [view], off)
                finally:
                    view.release()
                    m.close()
            return os.pwrite(side.fd, data, off)
        if kind == "append":
            return os.write(side.afd, op[1])
        if kind == "ftruncate":
            os.ftruncate(side.fd, op[1])
            return 0
        if kind == "truncate":
            os.truncate(side.path, op[1])
            return 0
        if kind == "fallocate":
            _, mode, off, length = op
            return fallocate(side.fd, mode, off, length)
        if kind == "mmap":
            _, off, data = op
            size = os.fstat(side.fd).st_size
            if off + len(data) > size:
                return "skip"
            m = mmap.mmap(side.fd, size)
            try:
                m[off:off + len(data)] = data
                m.flush()
            finally:
                m.close()
            return 0
        if kind == "cfr_self":
            _, src_off, dst_off, length = op
            return os.copy_file_range(side.fd, side.fd, length, src_off, dst_off)
        if kind == "cfr_src":
            _, src_off, dst_off, length = op
            return os.copy_file_range(side.sfd, side.fd, length, src_off, dst_off)
        if kind == "src_write":
            _, off, data = op
            return os.pwrite(side.sfd, data, off)
        if kind == "pread":
            _, off, length = op
            return os.pread(side.fd, length, off)
        if kind == "fsync":
            os.fsync(side.fd)
            return 0
    except OSError as e:
        return ("errno", e.errno)
    raise AssertionError(f"unknown op {op!r}")


def random_op(rnd, size):
    k = rnd.random()
    off = rnd.randrange(0, MAX_SIZE - 1)
    small = rnd.choice((1, 7, 100, 511, 4096, 5000, 16384, 65536))
    length = min(small, MAX_SIZE - off)
    if k < 0.24:
        return ("pwrite", off, rnd.randbytes(length))
    if k < 0.30:
        return ("direct", off, rnd.randbytes(length))
    if k < 0.36:
        if size + length > MAX_SIZE:
            return ("ftruncate", rnd.randrange(0, MAX_SIZE // 2))
        return ("append", rnd.randbytes(length))
    if k < 0.42:
        return ("ftruncate", rnd.randrange(0, MAX_SIZE))
    if k < 0.45:
        return ("truncate", rnd.randrange(0, MAX_SIZE))
    if k < 0.60:
        mode = rnd.choice((0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                           FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                           FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE))
        if mode in (FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE):
            off, length = off // BLOCK * BLOCK, max(BLOCK, length // BLOCK * BLOCK)
        return ("fallocate", mode, off, max(1, min(length, MAX_SIZE - off)))
    if k < 0.72:
        if size == 0:
            return ("pwrite", off, rnd.randbytes(length))
        moff = rnd.randrange(0, size)
        return ("mmap", moff, rnd.randbytes(min(rnd.randrange(1, 9000), size - moff)))
    if k < 0.78 and size > 0:
        src = rnd.randrange(0, size)
        n = rnd.randrange(1, 40000)
        dst = rnd.randrange(0, MAX_SIZE - n)
        if not (src + n <= dst or dst + n <= src):
            dst = min(MAX_SIZE - n, src + n)
            if dst < src + n:
                return ("pread", src, n)
        return ("cfr_self", src, dst, n)
    if k < 0.82:
        return ("cfr_src", rnd.randrange(0, 70000), off, min(rnd.randrange(1, 70000),
                                                            MAX_SIZE - off))
    if k < 0.86:
        return ("src_write", rnd.randrange(0, 65536), rnd.randbytes(rnd.randrange(1, 8192)))
    if k < 0.87:
        return ("fsync",)
    return ("pread", off, rnd.randrange(1, 70000))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def test_random_operations_match_a_native_file(fm):
    steps = fm.fuzz_steps
    native_dir = tempfile.mkdtemp(prefix="native-", dir=fm.tmp)
    mount_dir = str(fm.workspace / "fuzz")
    os.mkdir(mount_dir)
    backing = str(fm.ws / "fuzz" / "f")
    rnd = random.Random(SEED)
    kernel = fm.kernel_workspace()
    ws, nat = Side(mount_dir, True), Side(native_dir, kernel)
    history = []
    try:
        for step in range(steps):
            size = os.fstat(nat.fd).st_size
            op = random_op(rnd, size)
            history.append(op)
            want = apply(nat, op, rnd)
            got = apply(ws, op, rnd)
            where = (f"[{fm.fuzz_name}] seed {SEED} (SBXFS_FUZZ_SEED), step {step} of {steps}, "
                     f"op {describe(op)}; last ops: "
                     f"{', '.join(describe(o) for o in history[-8:-1])}")
            if not kernel and op[0] == "fallocate" and op[1] in (FALLOC_FL_COLLAPSE_RANGE,
                                                                 FALLOC_FL_INSERT_RANGE):
                # The kernel's FUSE module takes neither: EOPNOTSUPP, file unchanged. The
                # native file did it, so redo the native file from the mount's content.
                assert got == ("errno", errno.EOPNOTSUPP), f"{where}: got {got!r}"
                data, _ = ws.content()
                os.ftruncate(nat.fd, 0)
                os.pwrite(nat.fd, data, 0)
            else:
                assert got == want, f"{where}: outcome {got!r} != native {want!r}"
            a, asize = ws.content()
            b, bsize = nat.content()
            assert asize == bsize, f"{where}: size {asize} != native {bsize}"
            if a != b:
                i = first_difference(a, b)
                pytest.fail(f"{where}: content differs at offset {i} "
                            f"(mount {a[i:i + 16]!r}, native {b[i:i + 16]!r})", pytrace=False)
            if step % COMPARE_BACKING_EVERY == 0 or step == steps - 1:
                with open(backing, "rb") as f:
                    c = f.read()
                if c != b:
                    i = first_difference(c, b)
                    pytest.fail(f"{where}: the backing file differs at offset {i} "
                                f"(backing {c[i:i + 16]!r}, native {b[i:i + 16]!r})",
                                pytrace=False)
    finally:
        ws.close()
        nat.close()


def describe(op):
    return "(" + ", ".join(f"<{len(x)} bytes>" if isinstance(x, bytes) else repr(x)
                           for x in op) + ")"
