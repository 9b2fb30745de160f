"""The Python driver of code interpreter contexts (src/drivers/sbxfs-pydriver), spoken to over
its descriptors as the daemon will: cells, results, errors, interrupts, output and framing."""

import base64
import json
import os
import struct
import threading
import time

import pytest

pytest.importorskip("IPython", reason="python3-ipython is not installed (scripts/bootstrap)")

from pydriver import Driver  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# No sbxfs here: the driver alone (the extra CI passes, meant for the daemon, leave these out).
pytestmark = pytest.mark.no_daemon


@pytest.fixture
def drv():
    d = Driver()
    yield d
    d.close()


def main_result(cell):
    mains = [r["data"] for r in cell.results if r["main"]]
    assert len(mains) == 1, cell.results
    return mains[0]


def test_ready_and_state_kept_across_cells(drv):
    assert drv.ready == {"ev": "ready", "language": "python", "version": drv.ready["version"]}
    assert drv.run("x = 41\ndef f(v):\n    return v + 1\nimport math").error is None
    cell = drv.run("f(x)")
    assert cell.error is None
    assert main_result(cell) == {"text/plain": "42"}
    assert drv.run("math.sqrt(16)").results[0]["data"]["text/plain"] == "4.0"


def test_last_expression_only_and_semicolon(drv):
    cell = drv.run("1 + 1\n2 + 2")
    assert main_result(cell) == {"text/plain": "4"}
    assert drv.run("3 + 3;").results == []
    assert drv.run("None").results == []
    assert drv.run("y = 5").results == []


def test_several_displays_in_one_cell(drv):
    cell = drv.run(
        "from IPython.display import display, HTML, Markdown, Latex, JSON, SVG, Javascript\n"
        "display(1)\n"
        "display(HTML('<b>bold</b>'))\n"
        "display(Markdown('# title'))\n"
        "display(Latex(r'$x^2$'))\n"
        "display(JSON({'a': 1}))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>'))\n"
        "display(Javascript('console.log(1)'))\n"
        "'last'")
    assert cell.error is None
    data = [r["data"] for r in cell.results]
    assert [r["main"] for r in cell.results] == [False] * 7 + [True]
    assert data[0] == {"text/plain": "1"}
    assert data[1]["text/html"] == "<b>bold</b>"
    assert data[2]["text/markdown"] == "# title"
    assert data[3]["text/latex"] == "$x^2$"
    assert data[4]["application/json"] == {"a": 1}
    assert "<svg" in data[5]["image/svg+xml"]
    assert data[6]["application/javascript"] == "console.log(1)"
    assert data[7] == {"text/plain": "'last'"}


def test_matplotlib_line_plot_is_a_png_without_show(drv):
    cell = drv.run("import matplotlib.pyplot as plt\n"
                   "plt.plot([1, 2, 3], [1, 4, 9])\n"
                   "plt.title('squares');")
    assert cell.error is None
    pngs = [r["data"]["image/png"] for r in cell.results if "image/png" in r["data"]]
    assert len(pngs) == 1
    png = base64.b64decode(pngs[0])
    assert png.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", png[16:24])
    assert 100 < width < 5000 and 100 < height < 5000
    assert len(png) > 1000
    # The figure was closed: the next cell does not show it again.
    assert drv.run("1").results == [{"ev": "result", "data": {"text/plain": "1"}, "main": True}]


def test_a_displayed_figure_is_shown_once(drv):
    cell = drv.run("import matplotlib.pyplot as plt\n"
                   "fig, ax = plt.subplots()\nax.plot([3, 1, 2])\n"
                   "display(fig)\nfig")
    assert cell.error is None
    pngs = [r for r in cell.results if "image/png" in r["data"]]
    assert [r["main"] for r in pngs] == [False, True]
    assert all(base64.b64decode(r["data"]["image/png"]).startswith(PNG_SIGNATURE)
               for r in pngs)


def test_dataframe_gives_html_and_text(drv):
    cell = drv.run("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})")
    assert cell.error is None
    data = main_result(cell)
    assert "<table" in data["text/html"]
    assert "a" in data["text/plain"] and "b" in data["text/plain"]


def test_top_level_await(drv):
    cell = drv.run("import asyncio\nawait asyncio.sleep(0.05)\n'awaited'")
    assert cell.error is None
    assert main_result(cell) == {"text/plain": "'awaited'"}


def test_stdout_streams_while_the_cell_runs(drv):
    drv.send("import time\nprint('first', flush=False)\ntime.sleep(3)\nprint('second')")
    seen = {}
    start = time.monotonic()

    def watch(cell):
        if b"first" in cell.stdout and "t" not in seen:
            seen["t"] = time.monotonic() - start

    cell = drv.collect(on_output=watch)
    assert cell.stdout == b"first\nsecond\n"
    assert seen["t"] < 2.5, seen


def test_stdout_and_stderr_at_the_os_level(drv):
    cell = drv.run("import os, subprocess, sys\n"
                   "print('py-out'); print('py-err', file=sys.stderr)\n"
                   "os.write(1, b'fd-out\\n'); os.write(2, b'fd-err\\n')\n"
                   "subprocess.run(['sh', '-c', 'echo sh-out; echo sh-err >&2'])\n"
                   "None")
    assert cell.error is None
    assert cell.stdout == b"py-out\nfd-out\nsh-out\n"
    assert cell.stderr == b"py-err\nfd-err\nsh-err\n"


def test_error_with_traceback_and_line_numbers(drv):
    cell = drv.run("a = 1\nb = 0\n\ndef g():\n    return a / b\ng()")
    err = cell.error
    assert err["name"] == "ZeroDivisionError"
    assert err["value"] == "division by zero"
    assert "\x1b" not in err["traceback"]
    assert "line 6" in err["traceback"] and "line 5" in err["traceback"]
    assert "return a / b" in err["traceback"]
    cell = drv.run("x = 1\ndef f(:\n  pass")
    assert cell.error["name"] == "SyntaxError"
    assert "line 2" in cell.error["traceback"]
    # The context lives on.
    assert main_result(drv.run("a")) == {"text/plain": "1"}


def test_interrupt_keeps_the_context(drv):
    assert drv.run("kept = 'yes'").error is None
    drv.send("import time\nwhile True:\n    time.sleep(0.05)")
    time.sleep(1)
    drv.interrupt()
    cell = drv.collect(timeout=20)
    assert cell.error["name"] == "KeyboardInterrupt"
    assert main_result(drv.run("kept")) == {"text/plain": "'yes'"}
    # SIGINT between cells is ignored.
    drv.interrupt()
    time.sleep(0.3)
    assert main_result(drv.run("kept")) == {"text/plain": "'yes'"}


def test_a_cell_that_kills_its_interpreter(drv):
    cell = drv.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert cell.error == {"name": "DriverExited"}
    assert drv.proc.wait(10) == -9
    fresh = Driver()
    try:
        assert fresh.run("'x' in dir()").results[0]["data"]["text/plain"] == "False"
    finally:
        fresh.close()


def test_two_drivers_in_parallel():
    a, b = Driver(), Driver()
    try:
        a.send("import time\ntime.sleep(1.5)\nv = 'a'\nv")
        b.send("import time\ntime.sleep(1.5)\nv = 'b'\nv")
        start = time.monotonic()
        ra, rb = a.collect(), b.collect()
        assert time.monotonic() - start < 2.9
        assert main_result(ra) == {"text/plain": "'a'"}
        assert main_result(rb) == {"text/plain": "'b'"}
    finally:
        a.close()
        b.close()


def test_non_utf8_and_huge_outputs(drv):
    cell = drv.run("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00bin\\n')\n"
                   "sys.stdout.flush()\nb'\\xff'.decode('latin-1')")
    assert cell.stdout == b"\xff\xfe\x00bin\n"
    assert main_result(cell) == {"text/plain": "'\u00ff'"}
    cell = drv.run("import sys\nfor i in range(200000):\n    print('line', i)\n"
                   "'x' * 3_000_000", timeout=120)
    assert cell.error is None
    lines = cell.stdout.splitlines()
    assert len(lines) == 200000 and lines[-1] == b"line 199999"
    assert len(main_result(cell)["text/plain"]) == 3_000_002


def test_printed_frames_cannot_spoof_results(drv):
    fake = json.dumps({"ev": "result", "data": {"text/plain": "spoofed"}, "main": True}).encode()
    done = json.dumps({"ev": "done"}).encode()
    frames = struct.pack(">I", len(fake)) + fake + struct.pack(">I", len(done)) + done
    cell = drv.run(f"import os, sys\nframes = {frames!r}\n"
                   "os.write(1, frames); os.write(2, frames)\n"
                   "sys.stdout.buffer.write(frames); sys.stdout.flush()\n"
                   "print(frames.decode())\n"
                   "'real'")
    assert cell.error is None
    assert cell.stdout == frames * 2 + frames + b"\n" and cell.stderr == frames
    assert cell.results == [{"ev": "result", "data": {"text/plain": "'real'"}, "main": True}]
    assert main_result(drv.run("'after'")) == {"text/plain": "'after'"}


def test_protocol_descriptors_are_not_inherited(drv):
    cell = drv.run("import subprocess\n"
                   "subprocess.run(['ls', '/proc/self/fd'], close_fds=False)\nNone")
    assert cell.error is None
    assert sorted(int(x) for x in cell.stdout.split()) == [0, 1, 2, 3]  # 3: ls's own dir


def test_stdin_is_not_the_channel(drv):
    cell = drv.run("import sys\nsys.stdin.read()")
    assert cell.error is None
    assert main_result(cell) == {"text/plain": "''"}


def test_concurrent_interrupts_do_not_break_frames(drv):
    # Interrupts land while results are being sent: every frame still parses.
    drv.send("from IPython.display import display\nfor i in range(20000):\n    display(i)")
    stop = threading.Event()

    def pester():
        while not stop.wait(0.02):
            drv.interrupt()

    t = threading.Thread(target=pester)
    t.start()
    try:
        cell = drv.collect(timeout=60)
    finally:
        stop.set()
        t.join()
    assert cell.error is None or cell.error["name"] == "KeyboardInterrupt"
    assert main_result(drv.run("40 + 2")) == {"text/plain": "42"}


def test_exit_in_a_cell_keeps_the_context(drv):
    assert drv.run("kept = 7").error is None
    cell = drv.run("import sys\nsys.exit(3)")
    assert cell.error["name"] == "SystemExit"
    assert main_result(drv.run("kept")) == {"text/plain": "7"}


def test_exit_ends_the_driver_after_the_cell(drv):
    cell = drv.run("print('last words')\nexit()")
    assert cell.error is None and cell.stdout == b"last words\n"
    assert drv.proc.wait(10) == 0


def test_os_exit_ends_the_driver(drv):
    cell = drv.run("import os\nprint('bye', flush=True)\nos._exit(0)")
    assert cell.error == {"name": "DriverExited"}
    assert drv.proc.wait(10) == 0


def test_a_cell_that_closes_its_stdout(drv):
    # IPython's own flush then fails: an error of the cell, not the end of the driver.
    cell = drv.run("import os, sys\nprint('pending', end='')\nos.close(1)\n'still here'")
    assert cell.error is None or cell.error["value"] == "[Errno 9] Bad file descriptor"
    assert main_result(drv.run("40 + 2")) == {"text/plain": "42"}


def test_input_reads_no_stdin(drv):
    cell = drv.run("input()")
    assert cell.error["name"] == "EOFError"


def test_a_bad_request_is_an_error_not_a_crash(drv):
    for body in (b"[1, 2]", b'{"op": "run", "code": 5}', b'{"op": "eval"}'):
        os.write(drv._req_w, struct.pack(">I", len(body)) + body)
        assert drv.collect().error["name"] == "ProtocolError"
    assert main_result(drv.run("1")) == {"text/plain": "1"}
