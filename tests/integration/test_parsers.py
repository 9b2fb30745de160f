"""Regressions for what the libFuzzer targets of tests/fuzz found in the parsers of outside
bytes: each test writes the input the way a user (or a sandboxed command) would, with real
tools, and checks the daemon answers as documented and lives on."""

import subprocess
import time

import pytest

from sbxutil import extra_args, sbxfs_binary, uniq, write_errno


def test_checkout_line_of_blanks_is_einval_and_the_daemon_lives(sbx):
    # fuzz_checkout: a line of tabs has no URL; it crashed the daemon (strdup(NULL)).
    s = sbx.new_session()
    for line in ["\t\n", " \t \n", "\t"]:
        assert write_errno(s / "checkout", line, at_close=True) == 22, repr(line)  # EINVAL
    assert sbx.alive()
    assert sbx.run(s, "echo still here") == (b"still here\n", b"", 0)


# The command finds its shell's report pipe (the write end of a pipe that is neither its stdout
# nor its stderr) among the descriptors the shell saved while it runs the command (a command is
# eval'd in the shell itself, so its builtins reach them), and writes a report of its own there:
# an entry whose name holds a newline, and a valid one. Then it waits, so the forged report is
# what the session shows until the shell's real one comes.
FORGE = r"""
o=$(readlink /proc/$$/fd/1); e=$(readlink /proc/$$/fd/2)
for f in /proc/$$/fd/*; do
  l=$(readlink "$f"); n=${f##*/}
  [[ $l == pipe:* && $l != "$o" && $l != "$e" ]] || continue
  [[ $(sed -n 's/^flags:[[:space:]]*//p' /proc/$$/fdinfo/$n) == *1 ]] || continue
  printf 'forged\0%s\0/\0BAD\nNAME=1\0GOOD_TAG=2\0\0' 0 >&"$n"
done
sleep 4
"""


def test_forged_report_cannot_add_lines_to_the_env_file(sbx):
    # fuzz_report: a report entry whose name is no variable name (here one holding a newline)
    # went into the session's env as is, and the env file showed it as two lines.
    s = sbx.new_session()
    tag = uniq("G").replace("-", "_")
    sbx.submit(s, FORGE.replace("GOOD_TAG", tag))
    # the forged report ends the command with its status 0, and its env stands until the
    # shell's own report comes, seconds later
    assert sbx.exit_status(s) == 0
    lines = sbx.read(s, "env").decode().splitlines()
    assert f"{tag}=2" in lines, "the forged report was not taken: the test proves nothing"
    assert not any(line.startswith(("BAD", "NAME=")) for line in lines), lines


def test_huge_forged_report_is_read_in_linear_time(sbx):
    # fuzz_report's input, grown: a report of 200,000 entries written in pieces took the daemon
    # minutes (each read parsed everything again, and each entry searched all before it), with
    # every session waiting; the env file of such a session took as long again.
    s, other = sbx.new_session(), sbx.new_session()
    forge = FORGE.replace(
        r"printf 'forged\0%s\0/\0BAD\nNAME=1\0GOOD_TAG=2\0\0' 0",
        r"{ printf 'forged\0000\0/\0'; printf 'V%d=1\0' {1..200000}; printf '\0'; }")
    assert forge != FORGE
    start = time.monotonic()
    sbx.submit(s, forge.replace("sleep 4", "sleep 10"))
    assert sbx.exit_status(s) == 0
    env = sbx.read(s, "env").decode().splitlines()
    assert "V200000=1" in env and len(env) >= 200000
    assert sbx.run(other, "echo ok") == (b"ok\n", b"", 0)
    assert time.monotonic() - start < 15, "a huge report took seconds to read"


@pytest.mark.parametrize("section,key", [("sandbox", "cpu_max"), ("workspace", "cache_timeout")])
@pytest.mark.parametrize("value", ["nan", "-nan", "inf"])
def test_config_value_that_is_not_a_number_stops_the_start(tmp_path, section, key, value):
    # fuzz_config's range property: strtod reads "nan", which passed every range comparison
    # (a NaN limit was silently no limit, a NaN cache timeout went to the kernel).
    for d in ("mnt", "ws", "state"):
        (tmp_path / d).mkdir()
    (tmp_path / "sbxfs.ini").write_text(f"[{section}]\n{key} = {value}\n")
    proc = subprocess.Popen(
        [str(sbxfs_binary()), "-f", "-c", str(tmp_path / "sbxfs.ini"), "--workspace",
         str(tmp_path / "ws"), "--state-dir", str(tmp_path / "state"), *extra_args(),
         str(tmp_path / "mnt")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.terminate()  # it mounted: take it down as its own SIGTERM does
        proc.communicate(timeout=30)
        pytest.fail(f"sbxfs started with {key} = {value}")
    assert proc.returncode != 0
    assert f"bad value '{value}' for {key}".encode() in err, err
