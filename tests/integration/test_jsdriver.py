"""The JavaScript and TypeScript driver of code interpreter contexts (src/drivers/sbxfs-jsdriver),
spoken to over its descriptors as the daemon will: cells, results, errors, interrupts, output
and framing."""

import json
import os
import shutil
import struct
import threading
import time

import pytest

from pydriver import JSDRIVER, Driver

NODE = "/usr/bin/node"
TYPESCRIPT = "/usr/share/nodejs/typescript"

# No sbxfs here: the driver alone (the extra CI passes, meant for the daemon, leave these out).
pytestmark = [pytest.mark.no_daemon,
              pytest.mark.skipif(not os.path.exists(NODE),
                                 reason="nodejs is not installed (scripts/bootstrap)")]

needs_ts = pytest.mark.skipif(not os.path.isdir(TYPESCRIPT),
                              reason="node-typescript is not installed (scripts/bootstrap)")


def js_driver(language="javascript", prefix=()):
    return Driver(cmd=[*prefix, str(JSDRIVER), language])


@pytest.fixture
def js():
    d = js_driver()
    yield d
    d.close()


@pytest.fixture
def ts():
    d = js_driver("typescript")
    yield d
    d.close()


def main_result(cell):
    assert cell.error is None, cell.error
    mains = [r["data"] for r in cell.results if r["main"]]
    assert len(mains) == 1, cell.results
    return mains[0]["text/plain"]


def test_ready_and_state_kept_across_cells(js):
    assert js.ready == {"ev": "ready", "language": "javascript",
                        "version": js.ready["version"]}
    assert int(js.ready["version"].split(".")[0]) >= 18
    cell = js.run("const a = 40;\nlet b = 1;\nfunction f(v) { return v + a + b; }\n"
                  "class Point { constructor(x) { this.x = x; } }")
    assert cell.error is None and cell.results == []
    assert main_result(js.run("b += 1; f(0)")) == "42"
    assert main_result(js.run("new Point(3).x + f(1)")) == "46"
    # A const stays a const.
    assert js.run("a = 1").error["name"] == "TypeError"
    assert main_result(js.run("a")) == "40"


def test_last_expression_is_the_result(js):
    assert main_result(js.run("1 + 1\n'two'")) == "'two'"
    assert main_result(js.run("({x: [1, {y: 2}]})")) == "{ x: [ 1, { y: 2 } ] }"
    assert js.run("undefined").results == []
    assert js.run("let z = 5").results == []
    assert js.run("function g() {}").results == []
    assert main_result(js.run("null")) == "null"


def test_several_displays_in_one_cell(js):
    cell = js.run("display(1, 'two');\ndisplay([3]);\n"
                  "display.mime({'text/html': '<b>bold</b>', 'text/plain': 'bold'});\n"
                  "display.mime({'image/png': 'iVBORw0KGgo=', 'application/json': {a: 1}});\n"
                  "'last'")
    assert cell.error is None
    assert [r["main"] for r in cell.results] == [False] * 5 + [True]
    assert [r["data"] for r in cell.results] == [
        {"text/plain": "1"}, {"text/plain": "'two'"}, {"text/plain": "[ 3 ]"},
        {"text/html": "<b>bold</b>", "text/plain": "bold"},
        {"image/png": "iVBORw0KGgo=", "application/json": {"a": 1}},
        {"text/plain": "'last'"}]
    err = js.run("display.mime({'text/nope': 'x'})").error
    assert err["name"] == "TypeError" and "text/nope" in err["value"]


def test_stdout_and_stderr_at_the_os_level(js):
    cell = js.run("console.log('log-out', {a: 1}); console.error('log-err');\n"
                  "process.stdout.write('w-out\\n'); process.stderr.write('w-err\\n');\n"
                  "require('fs').writeSync(1, 'fd-out\\n');\n"
                  "require('fs').writeSync(2, 'fd-err\\n');\n"
                  "require('child_process').execSync('echo sh-out; echo sh-err >&2', "
                  "{stdio: 'inherit'});\nundefined")
    assert cell.error is None
    assert cell.stdout == b"log-out { a: 1 }\nw-out\nfd-out\nsh-out\n"
    assert cell.stderr == b"log-err\nw-err\nfd-err\nsh-err\n"


def test_all_output_is_written_before_done(js):
    # Much more than a pipe holds: the cell's writes, its child's, all in the pipes before done.
    cell = js.run("process.stdout.write(Buffer.alloc(3000000, 'y'));\n"
                  "require('child_process').execSync('head -c 3000000 /dev/zero', "
                  "{stdio: 'inherit'});\n"
                  "console.error('e'.repeat(1000000));\nundefined", timeout=60)
    assert cell.error is None
    assert cell.stdout == b"y" * 3000000 + b"\0" * 3000000
    assert cell.stderr == b"e" * 1000000 + b"\n"


def test_concurrent_interrupts_do_not_break_frames(js):
    # Interrupts land while results are being made and sent: every frame still parses.
    js.send("for (let i = 0; i < 20000; i++) display(i);\n"
            "await null;\nfor (let i = 0; i < 2000; i++) display(i);")
    stop = threading.Event()

    def pester():
        while not stop.wait(0.02):
            js.interrupt()

    t = threading.Thread(target=pester)
    t.start()
    try:
        cell = js.collect(timeout=60)
    finally:
        stop.set()
        t.join()
    assert cell.error is None or cell.error["name"] == "Interrupted"
    assert main_result(js.run("40 + 2")) == "42"


def test_errors_with_name_value_and_cell_lines(js):
    cell = js.run("let q = 1;\nfunction g() {\n  return nope + q;\n}\ng()")
    err = cell.error
    assert err["name"] == "ReferenceError" and err["value"] == "nope is not defined"
    assert "at g (<cell 1>:3:3)" in err["traceback"]
    assert "<cell 1>:5:1" in err["traceback"]
    assert "sbxfs-jsdriver" not in err["traceback"] and "node:vm" not in err["traceback"]
    # A function of an earlier cell keeps its cell's name in later stacks.
    assert "at g (<cell 1>:3:3)" in js.run("\n\ng()").error["traceback"]
    err = js.run("const ok = 1;\nfunction (x {").error
    assert err["name"] == "SyntaxError" and err["traceback"].startswith("<cell 3>:2\n")
    err = js.run("throw 5").error
    assert err == {"ev": "error", "name": "Uncaught", "value": "5", "traceback": "Uncaught 5"}
    # The context lives on; the failed cell declared nothing.
    assert main_result(js.run("typeof ok + ' ' + q")) == "'undefined 1'"


def test_await_and_promise_results(js):
    cell = js.run("const sleep = ms => new Promise(r => setTimeout(r, ms));\n"
                  "await sleep(50);\nconst late = await Promise.resolve('kept');\n"
                  "let count = 2;\nclass K {}\nfunction h() { return count * 21; }\nlate")
    assert main_result(cell) == "'kept'"
    assert main_result(js.run("[late, count, h(), typeof K]")) == "[ 'kept', 2, 42, 'function' ]"
    assert main_result(js.run("sleep(20).then(() => 'resolved')")) == "'resolved'"
    err = js.run("await sleep(10);\n\nthrow new RangeError('after await')").error
    assert err["name"] == "RangeError" and err["value"] == "after await"
    assert "<cell 4>:3:" in err["traceback"]
    assert js.run("Promise.reject(new TypeError('no'))").error["name"] == "TypeError"


def test_interrupt_keeps_the_context(js):
    assert js.run("const kept = 'yes'").error is None
    for code in ("while (true) {}", "await new Promise(() => {})"):
        js.send(code)
        time.sleep(0.5)
        js.interrupt()
        cell = js.collect(timeout=20)
        assert cell.error["name"] == "Interrupted", cell.error
        assert main_result(js.run("kept")) == "'yes'"
    # SIGINT between cells is ignored.
    js.interrupt()
    time.sleep(0.3)
    assert main_result(js.run("kept")) == "'yes'"


def test_interrupts_at_cell_boundaries_do_not_kill_the_driver(js):
    # vm's SIGINT watchdog, started and stopped around each cell, left SIGINT fatal at both
    # ends: at 200 interrupts a second, short cells killed Node within 20 cells.
    stop = threading.Event()

    def pester():
        while not stop.wait(0.005):
            js.interrupt()

    t = threading.Thread(target=pester)
    t.start()
    try:
        names = [js.run("for (let i = 0; i < 1e5; i++);\n'ok'").error for _ in range(150)]
    finally:
        stop.set()
        t.join()
    names = {e and e["name"] for e in names}
    assert names <= {None, "Interrupted"}, names
    assert main_result(js.run("40 + 2")) == "42"


def test_process_exit_ends_the_driver_after_the_cell(js):
    cell = js.run("console.log('last words');\ndisplay('shown');\nprocess.exit()")
    assert cell.error is None and cell.stdout == b"last words\n"
    assert cell.results == [{"ev": "result", "data": {"text/plain": "'shown'"}, "main": False}]
    assert js.proc.wait(10) == 0
    d = js_driver()
    try:
        assert d.run("process.exit(3)").error is None
        assert d.proc.wait(10) == 3
    finally:
        d.close()


def test_a_cell_that_kills_its_interpreter(js):
    cell = js.run("process.kill(process.pid, 'SIGKILL')")
    assert cell.error == {"name": "DriverExited"}
    assert js.proc.wait(10) == -9


def test_uncaught_errors_of_timers_go_to_stderr(js):
    cell = js.run("setTimeout(() => { throw new Error('late boom'); }, 0);\n"
                  "await new Promise(r => setTimeout(r, 100));\n'after'")
    assert main_result(cell) == "'after'"
    assert b"Uncaught Error: late boom" in cell.stderr
    assert main_result(js.run("1 + 1")) == "2"


def test_non_utf8_and_huge_outputs(js):
    cell = js.run("process.stdout.write(Buffer.from([0xff, 0xfe, 0, 0x62, 0x0a]));\n"
                  "Buffer.from([0xff]).toString('latin1')")
    assert cell.stdout == b"\xff\xfe\x00b\n"
    assert main_result(cell) == "'\u00ff'"
    cell = js.run("for (let i = 0; i < 200000; i++) console.log('line', i);\n"
                  "'x'.repeat(3000000)", timeout=120)
    lines = cell.stdout.splitlines()
    assert len(lines) == 200000 and lines[-1] == b"line 199999"
    assert len(main_result(cell)) == 3_000_002


def test_printed_frames_cannot_spoof_results(js):
    fake = json.dumps({"ev": "result", "data": {"text/plain": "spoofed"}, "main": True}).encode()
    done = json.dumps({"ev": "done"}).encode()
    frames = struct.pack(">I", len(fake)) + fake + struct.pack(">I", len(done)) + done
    cell = js.run(f"const frames = Buffer.from('{frames.hex()}', 'hex');\n"
                  "process.stdout.write(frames); process.stderr.write(frames);\n"
                  "require('fs').writeSync(1, frames);\n"
                  "console.log(frames.toString('latin1'));\n"
                  "'real'")
    assert cell.stdout == frames * 2 + frames + b"\n" and cell.stderr == frames
    assert cell.results == [{"ev": "result", "data": {"text/plain": "'real'"}, "main": True}]
    assert main_result(js.run("'after'")) == "'after'"


def test_protocol_descriptors_are_not_inherited(js):
    cell = js.run("require('child_process').execSync('ls /proc/self/fd', "
                  "{stdio: ['ignore', 'inherit', 'inherit']});\nundefined")
    assert cell.error is None
    assert sorted(int(x) for x in cell.stdout.split()) == [0, 1, 2, 3]  # 3: ls's own dir


def test_a_bad_request_is_an_error_not_a_crash(js):
    for body in (b"[1, 2]", b'{"op": "run", "code": 5}', b'{"op": "eval"}', b"null"):
        os.write(js._req_w, struct.pack(">I", len(body)) + body)
        assert js.collect().error["name"] == "ProtocolError"
    assert main_result(js.run("1")) == "1"


def test_an_unknown_language_fails_at_start():
    d = js_driver("cobol")
    try:
        assert d.ready["ev"] == "error" and "cobol" in d.ready["value"]
        assert d.proc.wait(10) == 1
    finally:
        d.close()


@needs_ts
def test_typescript_types_generics_and_state(ts):
    assert ts.ready == {"ev": "ready", "language": "typescript", "version": ts.ready["version"]}
    cell = ts.run("interface Shape { area(): number }\n"
                  "class Square implements Shape {\n"
                  "  constructor(private side: number) {}\n"
                  "  area(): number { return this.side ** 2; }\n}\n"
                  "function first<T>(items: T[]): T | undefined { return items[0]; }\n"
                  "const shapes: Shape[] = [new Square(3)];\n"
                  "let total: number = 0;\n"
                  "enum Color { Red, Green }\n"
                  "first(shapes)?.area()")
    assert main_result(cell) == "9"
    assert main_result(ts.run("total += first<number>([5]) ?? 0;\n"
                              "[total, Color.Green, shapes.length]")) == "[ 5, 1, 1 ]"
    # Types are not checked: a type error runs.
    assert main_result(ts.run("const n: number = 'not a number' as any as string as any;\n"
                              "const s: string = 42 as unknown as string;\ns")) == "42"
    assert main_result(ts.run("const w: number = await Promise.resolve(total * 2);\nw")) == "10"


@needs_ts
def test_typescript_imports_stay_for_later_cells(ts):
    cell = ts.run("import * as os from 'os';\n"
                  "import path, {\n  join as j,\n  sep } from 'path';\n"
                  "import { readFileSync } from 'fs';\nimport type { Stats } from 'fs';\n"
                  "const none: Stats | null = null;\n"
                  "throw new Error('line 8');")
    assert "<cell 1>:8:7" in cell.error["traceback"]
    assert main_result(ts.run("[typeof os.cpus, typeof path.join, j('a', 'b'), sep, "
                              "typeof readFileSync]")) == \
        "[ 'function', 'function', 'a/b', '/', 'function' ]"
    # Importing again works, as in Python.
    assert main_result(ts.run("import * as os from 'os';\nos.EOL")) == "'\\n'"


@needs_ts
def test_typescript_syntax_and_runtime_errors(ts):
    err = ts.run("const ok: number = 1;\nlet bad = (;\n").error
    assert err["name"] == "SyntaxError" and err["value"] == "Expression expected."
    assert "<cell 1>:2:12" in err["traceback"]
    # The cell did not run.
    assert ts.run("ok").error["name"] == "ReferenceError"
    # Runtime positions are the TypeScript cell's, not the transpiled JavaScript's.
    err = ts.run("interface A { x: number }\ntype B = string;\n"
                 "function boom(a: A): never {\n    throw new Error('b' + a.x);\n}\n"
                 "interface Z {}\nboom({x: 1})").error
    assert err["name"] == "Error" and err["value"] == "b1"
    assert "at boom (<cell 3>:4:11)" in err["traceback"]
    assert "<cell 3>:7:1" in err["traceback"]
    assert err["traceback"].startswith("<cell 3>:4\n    throw new Error('b' + a.x);\n")


@needs_ts
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="hiding node-typescript needs root and unshare")
def test_typescript_missing_is_a_clear_error_at_start():
    # A mount namespace where /usr/share/nodejs is empty.
    hide = ["unshare", "-m", "sh", "-c",
            "mount --make-rprivate / && mount -t tmpfs none /usr/share/nodejs && exec \"$@\"",
            "hide"]
    d = js_driver("typescript", prefix=hide)
    try:
        assert d.ready["ev"] == "error" and d.ready["name"] == "DriverStartError"
        assert "node-typescript" in d.ready["value"]
        assert d.proc.wait(10) == 1
        assert b"sbxfs-jsdriver: cannot load the TypeScript compiler" in d.started.stderr
    finally:
        d.close()
