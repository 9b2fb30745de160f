#!/usr/bin/python3
"""handles.py: exec() over sbxfs files with run handles, from several threads at once.

exec(session, command) opens the session's cmd read-write, writes the command and reads back
its run number N from the same file; runs/N/result then gives one JSON object (success,
exitCode, stdout, stderr, duration, ...) once the command has ended. Runs from different
threads never see each other's output. Creates a session with sessions/clone and removes it.

usage: examples/handles.py [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
"""

import base64
import json
import os
import sys
import threading


def exec_result(sdir, command):
    """Runs command in the session at sdir and returns its result as a dict."""
    with open(os.path.join(sdir, "cmd"), "r+") as f:
        f.write(command)
        f.flush()
        n = int(f.read())
    with open(os.path.join(sdir, "runs", str(n), "result"), "rb") as f:
        res = json.load(f)
    for field in ("stdout", "stderr"):  # output that is not UTF-8 comes as base64
        if res[field + "Encoding"] == "base64":
            res[field] = base64.b64decode(res[field]).decode(errors="replace")
    return res


def main():
    mnt = sys.argv[1] if len(sys.argv) > 1 else "/mnt/sbx"
    if not os.path.isdir(os.path.join(mnt, "sessions")):
        sys.exit(f"no sbxfs mount at {mnt}")
    with open(os.path.join(mnt, "sessions", "clone")) as f:
        sid = f.read().strip()
    sdir = os.path.join(mnt, "sessions", sid)
    print(f"session {sid}")
    results = {}

    def worker(i):
        results[i] = [exec_result(sdir, f"echo thread {i} run {k}; exit {k % 2}")
                      for k in range(5)]

    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in sorted(results):
            for k, res in enumerate(results[i]):
                assert res["stdout"] == f"thread {i} run {k}\n", res
                print(f"run {res['run']:3}: {res['stdout'].strip():18} exit {res['exitCode']}"
                      f" in {res['duration']} ms")
    finally:
        os.rmdir(sdir)


if __name__ == "__main__":
    main()
