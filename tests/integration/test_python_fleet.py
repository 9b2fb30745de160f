"""The Python client's fleet calls (clients/python/sbxfs/fleet.py) against a real sbxfs-fleet:
create, list, connect, get_sandbox, kill, set_keep_alive with sleep and wake, the bound, and
bad ids."""

import os
import subprocess
import sys
import time

import pytest

from sbxutil import REPO_ROOT, isolation_none, read_bytes, wait_until
from test_fleet import fleet, sleepy

sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

import sbxfs as sdk  # noqa: E402

pytestmark = [pytest.mark.client,
              pytest.mark.skipif(os.geteuid() != 0 or isolation_none(),
                                 reason="a fleet's sandboxes are root's mounts, isolated")]


def test_the_lifecycle_calls_and_their_errors(tmp_path):
    with fleet("--max", "4", "--sandbox-config", str(sleepy(tmp_path, 3600))) as f:
        fl = sdk.get_fleet(f.mnt)
        web = fl.create("web")
        assert web.sandbox_id == "web"
        assert web.exec("echo ok").stdout == "ok\n"
        fresh = fl.create()
        assert fresh.sandbox_id.startswith("s") and fresh.sandbox_id[1:].isdigit()
        assert [i["sandbox_id"] for i in fl.list()] == sorted([fresh.sandbox_id, "web"])
        assert all(i["state"] == "running" and i["pid"] > 0 for i in fl.list())
        with pytest.raises(sdk.SandboxAlreadyExistsError):
            fl.create("web")
        with pytest.raises(sdk.SandboxNotFoundError):
            fl.connect("nope")
        for bad in ("../etc", "a/b", "", "x" * 65):
            with pytest.raises(sdk.ValidationError):
                fl.create(bad)
        assert fl.connect("web").exec("echo again").stdout == "again\n"
        made = fl.get_sandbox("cf")
        assert fl.get_sandbox("cf").sandbox_id == "cf"
        assert made.get_info()["state"] == "running"
        four = fl.create("four", config="[sandbox]\nmemory_max = 1G\n")
        assert four.get_config() == "[sandbox]\nmemory_max = 1G\n"
        assert f"memory_max {1 << 30}\n" in read_bytes(f.mnt / "four" / "fs" / "limits").decode()
        with pytest.raises(sdk.ValidationError):
            four.set_config("[sandbox]\nmemory_max = lots\n")
        assert four.get_config() == "[sandbox]\nmemory_max = 1G\n"
        with pytest.raises(sdk.SandboxLimitError):
            fl.create("big", config="[sandbox]\nmemory_max = 1G\n")  # past --max: nothing made
        with pytest.raises(sdk.SandboxLimitError):
            fl.create("five")
        assert "max is 4" in fl.status()["refused"]
        fresh.kill()
        fl.kill("four")
        made.destroy()
        assert [i["sandbox_id"] for i in fl.list()] == ["web"]
        with pytest.raises(sdk.SandboxNotFoundError):
            fl.kill("four")
        # a template: a tar of a directory of this host's becomes the workspace
        src = tmp_path / "tmpl"
        (src / "app").mkdir(parents=True)
        (src / "app" / "index.js").write_text("console.log(1)\n")
        subprocess.run(["tar", "-C", str(src), "-cf", str(tmp_path / "tmpl.tar"), "."], check=True)
        t = fl.create("fromtmpl", template=str(tmp_path / "tmpl.tar"))
        assert t.exec("cat /workspace/app/index.js").stdout == "console.log(1)\n"
        (tmp_path / "bad.tar").write_bytes(b"not a tar" * 100)
        with pytest.raises(sdk.SandboxError):
            fl.create("badtmpl", template=str(tmp_path / "bad.tar"))
        assert "badtmpl" not in [i["sandbox_id"] for i in fl.list()]  # destroyed again
        t.kill()
        with pytest.raises(sdk.SandboxError):
            sdk.get_fleet("/proc")


def test_keep_alive_then_sleep_and_a_wake_by_use(tmp_path):
    with fleet("--sandbox-config", str(sleepy(tmp_path))) as f:
        fl = sdk.get_fleet(f.mnt)
        sbx = fl.create("web")
        sbx.set_keep_alive(True)
        assert read_bytes(f.mnt / "web" / "keep_alive") == b"yes\n"
        sbx.exec("export KEPT=1")
        time.sleep(2.5)
        assert sbx.get_info()["state"] == "running"
        with pytest.raises(sdk.ValidationError):
            sbx.set_keep_alive("yes")
        sbx.set_keep_alive(False)
        wait_until(lambda: sbx.get_info()["state"] == "sleeping", 15, "web asleep")
        assert sbx.get_info()["pid"] == 0
        assert sbx.exec('echo "woke $KEPT"').stdout == "woke 1\n"
        assert sbx.get_info()["state"] == "running"
