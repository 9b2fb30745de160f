"""The Node client (clients/node): its own `node --test` suites against a mount and a fleet they
start, and
`tsc --noEmit` on its declarations and on a file written against them."""

import os
import shutil
import subprocess

import pytest

from sbxutil import REPO_ROOT, isolation_none, sbxfs_binary

pytestmark = pytest.mark.client

NODE_DIR = REPO_ROOT / "clients" / "node"


def _run(argv, timeout, env=None):
    """argv in clients/node; past `timeout` it gets SIGTERM (on which the node tests unmount
    their sbxfs), then SIGKILL."""
    env = dict(os.environ, SBXFS_BIN=str(sbxfs_binary()), **(env or {}))
    with subprocess.Popen(argv, cwd=NODE_DIR, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                out, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            pytest.fail(f"{' '.join(argv)}: still running after {timeout}s\n{out[-8000:]}\n"
                        f"{err[-4000:]}")
    assert proc.returncode == 0, (f"{' '.join(argv)}: exit {proc.returncode}\n"
                                  f"{out[-8000:]}\n{err[-4000:]}")
    return out


def _node_suite(file, timeout, env=None):
    """node --test FILE in clients/node; its output, once it passed with no failure."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (scripts/bootstrap installs nodejs)")
    out = _run(["node", "--test", file], timeout=timeout, env=env)
    assert "# fail 0" in out and "# pass " in out, out[-4000:]
    return out


@pytest.mark.sbx_timeout(240)
def test_node_suite():
    _node_suite("test/client.test.mjs", 220)


@pytest.mark.sbx_timeout(240)
@pytest.mark.skipif(os.geteuid() != 0 or isolation_none(),
                    reason="over HTTP the suite's sandbox is a fleet's: root's, isolated")
def test_node_suite_over_http():
    """The same suite with getSandbox(URL, {token}): a sandbox of a fleet through sbxfs-bridge's
    tree routes, every call a request."""
    out = _node_suite("test/client.test.mjs", 220, env={"SBXFS_CLIENT_TRANSPORT": "http"})
    assert "# skipped 0" in out, out[-2000:]


@pytest.mark.sbx_timeout(180)
def test_node_fleet_suite():
    out = _node_suite("test/fleet.test.mjs", 160)
    if os.geteuid() == 0 and not isolation_none():
        assert "# skipped 0" in out, "the fleet suite was skipped as root"


@pytest.mark.no_daemon
@pytest.mark.sbx_timeout(120)
def test_declarations_typecheck():
    if not shutil.which("tsc"):
        pytest.skip("tsc is not installed (scripts/bootstrap installs node-typescript)")
    _run(["tsc", "--noEmit", "-p", "test/tsconfig.json"], timeout=110)
