"""Every script in examples/ runs as its usage line says, against a test mount, and exits 0: an
example that no longer works fails here (issue 35). A new script is picked up by its suffix."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from sbxutil import REPO_ROOT, isolation_none

# The examples are client code (the SDK examples are the clients'), written for the sandbox:
# their paths are /workspace/...; CI's extra passes leave clients out.
pytestmark = [
    pytest.mark.client,
    pytest.mark.skipif(isolation_none(), reason="the examples run commands in /workspace"),
]

EXAMPLES = sorted(p for p in (REPO_ROOT / "examples").iterdir()
                  if p.suffix in (".sh", ".py", ".mjs") and p.is_file())


def command(script, mnt, out):
    if script.suffix == ".mjs":
        return ["node", str(script), str(mnt)]
    if script.name == "contexts-plot.sh":
        return [str(script), str(mnt), str(out / "plot.png")]
    return [str(script), str(mnt)]


@pytest.mark.sbx_timeout(300)
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(sbx, script):
    if script.suffix == ".mjs" and not shutil.which("node"):
        pytest.skip("node is not installed (scripts/bootstrap installs nodejs)")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "clients" / "python"))
    with tempfile.TemporaryDirectory(prefix="sbxfs-example-") as out:
        res = subprocess.run(command(script, sbx.mnt, Path(out)),
                             cwd=out, env=env, capture_output=True, timeout=240,
                             stdin=subprocess.DEVNULL)
        assert res.returncode == 0, (f"{script.name} exited {res.returncode}\n"
                                     f"stdout:\n{res.stdout.decode(errors='replace')[-3000:]}\n"
                                     f"stderr:\n{res.stderr.decode(errors='replace')[-3000:]}")
        assert res.stdout, f"{script.name} printed nothing"
        if script.name == "contexts-plot.sh":
            assert (Path(out) / "plot.png").read_bytes()[:8] == \
                b"\x89PNG\r\n\x1a\n"
