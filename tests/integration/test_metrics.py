"""The metrics files (docs/metrics.md): `metrics` at the root, in a session and in a background
process, in Prometheus's text format, checked by `promtool check metrics` and parsed by
prometheus_client's parser as a scrape would; their values are the cgroup's."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sbxutil import isolation_none, procs_matching, read_bytes, sleep_tag, wait_until, write_bytes

parser = pytest.importorskip("prometheus_client.parser",
                             reason="python3-prometheus-client (scripts/bootstrap --test)")


def parse(path):
    """{(name, labels as a sorted tuple): value} of a metrics file."""
    out = {}
    for fam in parser.text_string_to_metric_families(read_bytes(path).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def promtool_check(path):
    if not shutil.which("promtool"):
        pytest.fail("promtool missing: scripts/bootstrap --test installs Debian's prometheus")
    res = subprocess.run(["promtool", "check", "metrics"], input=read_bytes(path),
                         capture_output=True, timeout=30)
    assert res.returncode == 0, res.stdout.decode() + res.stderr.decode()
    assert res.stdout.strip() == b"" and res.stderr.strip() == b"", "no lint warning"


@pytest.fixture
def busy(sbx):
    """A session with a background process that sleeps: its processes are known."""
    s = sbx.new_session()
    tag = sleep_tag()
    os.mkdir(s / "procs" / "w")
    write_bytes(s / "procs" / "w" / "cmd", f"exec sleep {tag}".encode())
    pids = wait_until(lambda: procs_matching(f"sleep {tag}"), 10, "the sleep")
    yield s, pids[0]
    write_bytes(s / "procs" / "ctl", b"kill\n")


def test_every_metrics_file_passes_promtool_and_parses(sbx, busy):
    s, _ = busy
    for path in (sbx.mnt / "metrics", s / "metrics", s / "procs" / "w" / "metrics"):
        promtool_check(path)
        assert parse(path), path


def test_the_root_has_the_sandbox_and_every_session(sbx, busy):
    s, _ = busy
    got = parse(sbx.mnt / "metrics")
    scopes = {dict(labels).get("session", dict(labels).get("scope")) for _, labels in got}
    assert {"sandbox", "default", s.name} <= scopes
    assert value(got, "sbxfs_network_bytes_total", scope="sandbox", direction="out") >= 0


def cgroup_dir(pid, controller):
    """The directory of pid's group in controller's hierarchy (v1) or in v2."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(",") and ctrls:
            return Path(f"/sys/fs/cgroup/{controller}{path}")
        if ctrls == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path(f"/sys/fs/cgroup{path}")
    return None


@pytest.mark.skipif(isolation_none(), reason="checked against the sandbox's cgroups")
def test_values_are_the_cgroup_files(sbx, busy):
    s, pid = busy
    proc = parse(s / "procs" / "w" / "metrics")
    labels = {"session": s.name, "proc": "w"}
    assert value(proc, "sbxfs_pids", **labels) == 1
    assert value(proc, "sbxfs_open_files", **labels) >= 0
    pids_dir = cgroup_dir(pid, "pids")
    if pids_dir is None or not (pids_dir / "pids.current").exists():
        pytest.skip("no pids controller for the sandbox's groups")
    # the process's group is below its session's
    sess = parse(s / "metrics")
    assert value(sess, "sbxfs_pids", session=s.name) == int(
        (pids_dir.parent / "pids.current").read_text())
    assert value(sess, "sbxfs_pids_max", session=s.name) == int(
        (pids_dir.parent / "pids.max").read_text())
    mem_dir = cgroup_dir(pid, "memory")
    if mem_dir and (mem_dir.parent / "memory.limit_in_bytes").exists():
        assert value(sess, "sbxfs_memory_max_bytes", session=s.name) == int(
            (mem_dir.parent / "memory.limit_in_bytes").read_text())
    elif mem_dir and (mem_dir.parent / "memory.max").exists():
        assert value(sess, "sbxfs_memory_max_bytes", session=s.name) == int(
            (mem_dir.parent / "memory.max").read_text())


def test_cpu_time_grows_with_work(sbx):
    s = sbx.new_session()
    before = value(parse(s / "metrics"), "sbxfs_cpu_seconds_total", session=s.name)
    sbx.run(s, "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
    after = value(parse(s / "metrics"), "sbxfs_cpu_seconds_total", session=s.name)
    assert after > before + 0.1, (before, after)


def test_a_label_value_is_escaped(sbx):
    # names are restricted, so the escaping is checked on what the format allows to reach it
    s = sbx.new_session("a.b-c_d")
    text = read_bytes(s / "metrics").decode()
    assert 'session="a.b-c_d"' in text
    promtool_check(s / "metrics")
