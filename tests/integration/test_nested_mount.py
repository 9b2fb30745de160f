"""A mount nested in the workspace (issue 30): the host's walks of the workspace stay on its own
mount. A host directory bind-mounted at WS/data (the same filesystem, so st_dev cannot tell it)
is not handed over to the sandbox's user at the start, not copied into a snapshot, not emptied
by a restore, and not put in an archive."""

import io
import os
import subprocess
import tarfile
import tempfile

import pytest

from sbxutil import SbxMount, isolation_none, read_bytes, started, stopped_cleanly, write_errno

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root"),
    pytest.mark.sbx_timeout(180),
]


@pytest.fixture
def nested():
    m = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-nested-"))
    host = m.tmp / "hostdata"
    host.mkdir()
    (host / "secret").write_text("host's own\n")
    (host / "sub").mkdir()
    (m.ws / "data").mkdir()
    (m.ws / "mine").write_text("the workspace's\n")
    subprocess.run(["mount", "--bind", str(host), str(m.ws / "data")], check=True, timeout=30)
    m.host = host
    try:
        yield started(m)
    finally:
        try:
            stopped_cleanly(m, "nested-mount sbxfs")
        finally:
            subprocess.run(["umount", "-l", str(m.ws / "data")], check=False, timeout=30)
            m.cleanup_tmp()


def owners(path):
    return {p: os.lstat(path / p).st_uid for p in ("", "secret", "sub")}


def test_host_walks_stay_on_the_workspaces_own_mount(nested):
    m = nested
    if not isolation_none():
        # the hand-over (before a command starts) gave the workspace's own files away, and
        # nothing of the nested mount
        assert m.run(m.new_session(), "true")[2] == 0
        assert os.stat(m.ws / "mine").st_uid == m.sandbox_ids()[0]
    assert owners(m.host) == {"": 0, "secret": 0, "sub": 0}
    # a snapshot copies none of it
    os.mkdir(m.mnt / "snapshots" / "s1")
    files = m.mnt / "snapshots" / "s1" / "files"
    assert (files / "mine").read_text() == "the workspace's\n"
    assert not os.path.lexists(files / "data")
    # nor its archive
    tar = tarfile.open(fileobj=io.BytesIO(read_bytes(m.mnt / "snapshots" / "s1" / "archive")))
    assert not [n for n in tar.getnames() if "secret" in n or n.lstrip("./").startswith("data/")]
    # a restore leaves it as it is (the snapshot has no data/: a restore removes what the
    # snapshot lacks, but not a mount)
    assert write_errno(m.mnt / "snapshots" / "s1" / "ctl", "restore force\n") == 0
    assert (m.host / "secret").read_text() == "host's own\n" and (m.host / "sub").is_dir()
    assert (m.ws / "data" / "secret").exists()
    assert owners(m.host) == {"": 0, "secret": 0, "sub": 0}
