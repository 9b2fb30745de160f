#!/usr/bin/python3
"""sdk-python.py: the hosted Sandbox SDK's session example in Python naming, against a local
sbxfs mount with clients/python (sbxfs, standard library only).

usage: examples/sdk-python.py [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
       SBXFS_TOKEN=SECRET examples/sdk-python.py http://HOST:8024/v1/sandbox/ID   (over sbxfs-bridge)
with sbxfs importable: installed (docs/clients.md), or from the tree with
    PYTHONPATH=clients/python examples/sdk-python.py [MOUNTPOINT]
"""

import sys

try:
    import sbxfs as sdk
except ModuleNotFoundError:
    sys.exit("sdk-python.py: no sbxfs module: install clients/python (docs/clients.md) or run "
             "with PYTHONPATH=clients/python")

sandbox = sdk.get_sandbox(sys.argv[1] if len(sys.argv) > 1 else "/mnt/sbx")
session = sandbox.create_session(id="example-py", env={"APP_ENV": "test"},
                                 cwd="/workspace/example-py", command_timeout_ms=5000)
try:
    session.write_file("/workspace/example-py/hello.py",
                       'import os\nprint("hello from", os.environ["APP_ENV"])\n')
    r = session.exec("python3 hello.py")
    print(r.exit_code, r.stdout.strip(), f"{r.duration} ms")

    for ev in session.exec_stream("for i in 1 2 3; do echo $i; sleep 0.2; done"):
        if ev["type"] == "stdout":
            print("streamed:", ev["data"], end="")

    web = session.start_process("python3 -m http.server 8000 --bind 127.0.0.1", process_id="web")
    web.wait_for_port(8000, timeout=10000)
    page = session.exec('python3 -c "import urllib.request as u; '
                        "print(u.urlopen('http://127.0.0.1:8000/').status)\"")
    print("GET / ->", page.stdout.strip())
    web.kill()

    try:
        session.exec("sleep 10", timeout=1000)
    except sdk.CommandTimeoutError as err:
        print("timed out, exit", err.result.exit_code)
finally:
    sandbox.delete_session("example-py")
