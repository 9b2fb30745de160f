"""`output` is stdout and stderr in the order they came. While only one of them has written,
`output` reads that stream's spool file instead of copying each byte; the first byte
of the other has it copy what it holds into its own file. Checked from outside: the bytes of
`output` are exact across that switch, in either order, under the output cap, and for a reader
that waits at the end of `output` while a command writes."""

import os
import tempfile

import pytest

from sbxutil import Background, ConfMount, read_bytes, started, stopped_cleanly

CAP = 100000


def seq(first, last):
    return b"".join(b"%d\n" % i for i in range(first, last + 1))


def test_stdout_alone_is_output_byte_for_byte(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "seq 1 300000")
    assert (out, err, code) == (seq(1, 300000), b"", 0)
    assert read_bytes(s / "output") == out
    assert os.stat(s / "output").st_size == len(out)


def test_stderr_after_stdout_keeps_the_order(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "seq 1 50000; echo middle >&2; seq 50001 60000; echo end >&2")
    assert code == 0 and err == b"middle\nend\n"
    assert out == seq(1, 60000)
    assert read_bytes(s / "output") == seq(1, 50000) + b"middle\n" + seq(50001, 60000) + b"end\n"
    # the next command's output starts from nothing
    assert sbx.run(s, "seq 3") == (b"1\n2\n3\n", b"", 0)
    assert read_bytes(s / "output") == b"1\n2\n3\n"


def test_stdout_after_stderr_keeps_the_order(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "seq 1 40000 >&2; echo middle; seq 40001 45000 >&2")
    assert code == 0 and out == b"middle\n" and err == seq(1, 45000)
    assert read_bytes(s / "output") == seq(1, 40000) + b"middle\n" + seq(40001, 45000)


def test_interleaved_writes_keep_each_streams_order_and_2to1_keeps_all(sbx):
    """1,000 echos alternating between stdout and stderr: output holds every line once, each
    stream's lines in their order (the order across the two is what the daemon read: see
    docs/sessions.md, output), and the same script run as `2>&1` reads back in the true order."""
    s = sbx.new_session()
    script = "for i in $(seq 1 500); do echo o$i; echo e$i >&2; done"
    out, err, code = sbx.run(s, script)
    want_out = b"".join(b"o%d\n" % i for i in range(1, 501))
    want_err = b"".join(b"e%d\n" % i for i in range(1, 501))
    assert (out, err, code) == (want_out, want_err, 0)
    lines = read_bytes(s / "output").splitlines(keepends=True)
    assert sorted(lines) == sorted(want_out.splitlines(True) + want_err.splitlines(True))
    assert b"".join(l for l in lines if l.startswith(b"o")) == want_out
    assert b"".join(l for l in lines if l.startswith(b"e")) == want_err
    out, err, code = sbx.run(s, f"{{ {script}; }} 2>&1")
    assert (err, code) == (b"", 0)
    assert out == b"".join(b"o%d\ne%d\n" % (i, i) for i in range(1, 501))


def test_a_reader_waiting_on_output_gets_every_byte(sbx):
    s = sbx.new_session()
    sbx.submit(s, "read -r _ < /dev/null; sleep 0.2; seq 1 100000; sleep 0.2; seq 100001 200000")
    reader = Background(read_bytes, s / "output", what="cat output")
    assert reader.result() == seq(1, 200000)
    assert sbx.exit_status(s) == 0


@pytest.fixture(scope="module")
def capped():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-mirror-"), f"[session]\noutput_cap = {CAP}\n")
    started(m)
    try:
        yield m
    finally:
        stopped_cleanly(m, "output_cap sbxfs")


def test_output_of_one_stream_stops_at_the_cap(capped):
    s = capped.new_session()
    out, err, code = capped.run(s, "seq 1 100000; echo late >&2")
    assert code == 0 and out == seq(1, 100000)[:CAP] and err == b"late\n"
    assert read_bytes(s / "output") == out
    assert os.stat(s / "output").st_size == CAP
