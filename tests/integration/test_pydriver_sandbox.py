"""The context drivers (Python, JavaScript, TypeScript) run from a session: inside the sandbox, as
its user, under its filter and limits."""

import importlib.util
import json
import os
import shutil

import pytest

import pydriver

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

JS_PROBE = r"""
import json, sys
sys.path.insert(0, ".")
from pydriver import Driver
got = {}
for language, code in (("javascript", "const a = await Promise.resolve(20);\nconsole.log('in')"),
                       ("typescript", "const a: number = await Promise.resolve(20);\n"
                                      "console.log('in')")):
    d = Driver(env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"}, cmd=["./sbxfs-jsdriver", language])
    first = d.run(code)
    second = d.run("require('child_process').execSync('echo child', {stdio: 'inherit'});\n"
                   "a * 2 + 2")
    d.close()
    got[language] = {"ready": d.ready["language"],
                     "stdout": (first.stdout + second.stdout).decode(),
                     "main": [r["data"] for r in second.results if r["main"]],
                     "errors": [first.error, second.error]}
print(json.dumps(got))
"""


@pytest.mark.skipif(importlib.util.find_spec("IPython") is None,
                    reason="python3-ipython is not installed (scripts/bootstrap)")
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


@pytest.mark.skipif(not os.path.isdir("/usr/share/nodejs/typescript"),
                    reason="nodejs and node-typescript are not installed (scripts/bootstrap)")
def test_the_js_driver_runs_inside_the_sandbox(sbx):
    """Node, the vm context, top-level await, child processes and the TypeScript compiler work
    as the sandbox's user."""
    shutil.copy(pydriver.JSDRIVER, sbx.ws / "sbxfs-jsdriver")
    shutil.copy(pydriver.__file__, sbx.ws / "pydriver.py")
    (sbx.ws / "jsprobe.py").write_text(JS_PROBE)
    s = sbx.new_session()
    out, err, code = sbx.run(s, "/usr/bin/python3 jsprobe.py", timeout=60)
    assert code == 0, err
    expected = {"stdout": "in\nchild\n", "main": [{"text/plain": "42"}], "errors": [None, None]}
    assert json.loads(out) == {"javascript": {"ready": "javascript", **expected},
                               "typescript": {"ready": "typescript", **expected}}
