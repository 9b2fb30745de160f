"""The Python driver of code interpreter contexts run from a session: inside the sandbox, as its
user, under its filter and limits."""

import json
import shutil

import pytest

pytest.importorskip("IPython", reason="python3-ipython is not installed (scripts/bootstrap)")

import pydriver  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

SANDBOX_PROBE = r"""
import base64, json, sys
sys.path.insert(0, ".")
from pydriver import Driver
d = Driver(env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"}, driver="sbxfs-pydriver")
cell = d.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('in')\n1 + 1")
png = [base64.b64decode(r["data"]["image/png"]) for r in cell.results if "image/png" in r["data"]]
d.close()
print(json.dumps({"ready": d.ready["ev"], "stdout": cell.stdout.decode(),
                  "main": [r["data"] for r in cell.results if r["main"]],
                  "png": [p[:8].hex() for p in png], "error": cell.error}))
"""


def test_the_driver_runs_inside_the_sandbox(sbx):
    """As the sandbox's user, under its filter and limits: IPython and matplotlib work."""
    shutil.copy(pydriver.DRIVER, sbx.ws / "sbxfs-pydriver")
    shutil.copy(pydriver.__file__, sbx.ws / "pydriver.py")
    (sbx.ws / "probe.py").write_text(SANDBOX_PROBE)
    s = sbx.new_session()
    out, err, code = sbx.run(s, "/usr/bin/python3 probe.py", timeout=60)
    assert code == 0, err
    got = json.loads(out)
    assert got == {"ready": "ready", "stdout": "in\n", "main": [{"text/plain": "2"}],
                   "png": [PNG_SIGNATURE.hex()], "error": None}
