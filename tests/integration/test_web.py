"""sbxfs-web (clients/node/web), the browser view: its node --test suites on this module's mount.

The server suites (the WebSocket against bad frames; the API, terminals, token, Origin and
path traversal against the mount) need node and the package's node_modules (`npm ci`, which
scripts/bootstrap runs); the browser suite needs Debian's chromium too. Screenshots of the
browser suite go to a temporary directory, printed at the end.
"""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from sbxutil import REPO_ROOT

WEB = REPO_ROOT / "clients" / "node" / "web"
CHROMIUM = os.environ.get("SBXFS_CHROMIUM", "/usr/bin/chromium")


def _missing():
    if shutil.which("node") is None:
        return "node is not installed (scripts/bootstrap installs it)"
    if not (WEB / "node_modules" / "@xterm" / "xterm").is_dir():
        return f"{WEB}/node_modules is missing: run `npm ci` there (scripts/bootstrap does)"
    return None


pytestmark = [pytest.mark.client,
              pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


def run_suite(sbx, files, env=None, timeout=150):
    res = subprocess.run(["node", "--test", "--test-concurrency=1", *files], cwd=WEB,
                         env={**os.environ, "SBXFS_WEB_MOUNT": str(sbx.mnt), **(env or {})},
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        pytest.fail(f"node --test {' '.join(files)}: exit {res.returncode}\n"
                    f"{res.stdout[-12000:]}\n{res.stderr[-4000:]}", pytrace=False)
    return res.stdout


@pytest.mark.sbx_timeout(120)
def test_web_server(sbx):
    out = run_suite(sbx, ["test/ansi.test.js", "test/ws.test.js", "test/server.test.js",
                          "test/peers.test.js"])
    assert "# fail 0" in out and "# pass 0" not in out


@pytest.mark.sbx_timeout(180)
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                    reason=f"{CHROMIUM} is not installed: the browser tests need Debian's chromium "
                           "(scripts/bootstrap installs it)")
def test_web_browser(sbx, request):
    artifacts = os.environ.get("SBXFS_WEB_ARTIFACTS") or tempfile.mkdtemp(
        prefix="sbxfs-web-artifacts-")
    try:
        out = run_suite(sbx, ["test/browser.test.js"], {"SBXFS_WEB_ARTIFACTS": artifacts})
    finally:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_line(f"\nsbxfs-web screenshots: {artifacts}")
    # Only the context test may be skipped (a mount without contexts/), never the browser.
    assert "# fail 0" in out and re.search(r"^# skipped [01]$", out, re.M), out[-3000:]
    assert int(re.search(r"^# pass (\d+)$", out, re.M).group(1)) >= 7, out[-3000:]
