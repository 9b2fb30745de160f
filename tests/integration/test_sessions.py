"""Sessions: running commands, their output and status, persistence, isolation, ordering."""

import errno
import os
import re
import select
import signal
import subprocess
import time

import pytest

from sbxutil import (Background, bounded, errname, errno_of, kill_quietly, pid_alive,
                     proc_comm, proc_parent, proc_state, procs_matching, read_bytes,
                     read_fd_to_eof, read_pipe_until, run_proc, sha256, sha256_file, sleep_tag,
                     uniq, wait_file_sh, wait_until, write_bytes, write_errno, cat_pipe,
                     assert_sigint_ends)


# --- output and exit status --------------------------------------------------------------------


def test_echo_goes_to_stdout_with_empty_stderr(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "echo hello") == (b"hello\n", b"", 0)


def test_output_files_can_be_read_again(sbx):
    s = sbx.new_session()
    sbx.run(s, "echo again; echo err >&2")
    for _ in range(3):
        assert sbx.read(s, "stdout") == b"again\n"
        assert sbx.read(s, "stderr") == b"err\n"
        assert sbx.read(s, "exit") == b"0\n"


def test_redirect_to_stderr_goes_to_stderr_only(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "echo oops >&2") == (b"", b"oops\n", 0)


def test_stdout_and_stderr_are_kept_apart(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "echo o1; echo e1 >&2; echo o2; echo e2 >&2")
    assert (out, err, code) == (b"o1\no2\n", b"e1\ne2\n", 0)


def test_false_exits_1(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "false") == (b"", b"", 1)


def test_exit_file_holds_status_and_newline(sbx):
    s = sbx.new_session()
    sbx.submit(s, "(exit 42)")
    assert sbx.read(s, "exit") == b"42\n"


def test_status_of_a_command_killed_by_a_signal(sbx):
    s = sbx.new_session()
    _, _, code = sbx.run(s, "sh -c 'kill -KILL $$'")
    assert code == 128 + signal.SIGKILL


def test_unknown_command_gives_127_and_not_found(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "no_such_command_sbxfs_xyz")
    assert code == 127
    assert out == b""
    assert b"not found" in err


def test_thousand_lines_arrive_exact(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, 'for i in $(seq 1 1000); do echo "line $i of output"; done')
    assert code == 0 and err == b""
    assert out == b"".join(b"line %d of output\n" % i for i in range(1, 1001))


@pytest.mark.sbx_timeout(300)
def test_50mb_binary_output_is_byte_exact(sbx):
    s = sbx.new_session()
    name = uniq("big") + ".bin"
    try:
        out, err, code = sbx.run(s, f"head -c 50000000 /dev/urandom | tee {name}", timeout=240)
        assert code == 0, err
        assert err == b""
        assert len(out) == 50_000_000
        assert b"\0" in out
        assert sha256(out) == sha256_file(sbx.ws / name)
    finally:
        (sbx.ws / name).unlink(missing_ok=True)


def test_binary_stderr_is_byte_exact(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, r"printf 'a\000b\377\000' >&2")
    assert (out, err, code) == (b"", b"a\0b\xff\0", 0)


def test_no_trailing_newline_and_invalid_utf8_are_exact(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, r"printf 'abc\377\376\300\200 end'")
    assert (out, err, code) == (b"abc\xff\xfe\xc0\x80 end", b"", 0)


def test_output_imitating_framing_does_not_confuse(sbx):
    s = sbx.new_session()
    tricky = rb"printf '\000\000r1\000'; printf 'r1\n\000\000'; printf '\000\000' >&2; echo r1 >&2"
    out, err, code = sbx.run(s, tricky.decode() + "; (exit 3)")
    assert out == b"\0\0r1\0r1\n\0\0"
    assert err == b"\0\0r1\n"
    assert code == 3
    # the session is still in sync afterwards
    assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    out, err, code = sbx.run(s, r"printf '0\n\000exit 0\n'; printf '\000'")
    assert (out, err, code) == (b"0\n\0exit 0\n\0", b"", 0)
    assert sbx.run(s, "echo after") == (b"after\n", b"", 0)


# --- scripts -----------------------------------------------------------------------------------


def test_quoted_heredoc(sbx):
    s = sbx.new_session()
    cmd = "cat <<'EOF'\nliteral $HOME `x`\n  indented\nEOF\necho done\n"
    assert sbx.run(s, cmd) == (b"literal $HOME `x`\n  indented\ndone\n", b"", 0)


def test_unquoted_heredoc_expands(sbx):
    s = sbx.new_session()
    cmd = "V=world\ncat <<EOF\nhello $V $((1+2))\nEOF\n"
    assert sbx.run(s, cmd) == (b"hello world 3\n", b"", 0)


def test_multiline_script(sbx):
    s = sbx.new_session()
    cmd = """
total=0
for i in 1 2 3 4; do
    total=$((total + i))
done
if [ "$total" -eq 10 ]; then
    echo "total ok"
else
    echo "total bad" >&2
fi
sq() {
    echo $(( $1 * $1 ))
}
sq 7
false
"""
    assert sbx.run(s, cmd) == (b"total ok\n49\n", b"", 1)


def test_large_script_spanning_many_writes(sbx):
    s = sbx.new_session()
    n = 30000
    script = "".join(f"echo line-{i:05d}\n" for i in range(n))  # ~500 KB
    out, err, code = sbx.run(s, script, timeout=60)
    assert code == 0 and err == b""
    assert out == script.replace("echo ", "").encode()


def test_cat_without_input_returns(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "cat; echo after-cat", timeout=15) == (b"after-cat\n", b"", 0)


def test_stdin_is_at_eof(sbx):
    s = sbx.new_session()
    out, _, code = sbx.run(s, 'read line; echo "rc=$? line=[$line]"', timeout=15)
    assert (out, code) == (b"rc=1 line=[]\n", 0)


def test_cmd_reads_back_the_latest_command(sbx):
    s = sbx.new_session()
    sbx.run(s, "echo first")
    sbx.run(s, "echo second\necho third\n")
    assert sbx.read(s, "cmd") == b"echo second\necho third\n"


# --- persistence ---------------------------------------------------------------------------------


def test_shell_variables_persist(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "MYVAR=value42") == (b"", b"", 0)
    assert sbx.run(s, 'echo "$MYVAR"') == (b"value42\n", b"", 0)


def test_exported_variables_persist(sbx):
    s = sbx.new_session()
    sbx.run(s, "export EXPVAR=exported")
    assert sbx.run(s, 'sh -c \'echo "$EXPVAR"\'') == (b"exported\n", b"", 0)


def test_cd_persists(sbx):
    s = sbx.new_session()
    d = uniq("cd")
    assert sbx.run(s, f"mkdir -p {d}/inner && cd {d}/inner")[2] == 0
    out, _, code = sbx.run(s, "pwd -P")
    assert (out, code) == (f"{sbx.cmd_ws}/{d}/inner\n".encode(), 0)


def test_functions_persist(sbx):
    s = sbx.new_session()
    sbx.run(s, 'greet() { echo "hi $1"; }')
    assert sbx.run(s, "greet there") == (b"hi there\n", b"", 0)


def test_new_session_starts_in_workspace(sbx):
    s = sbx.new_session()
    assert os.path.realpath(sbx.read(s, "cwd").decode().rstrip("\n")) == sbx.cmd_ws
    assert sbx.read(s, "cwd").endswith(b"\n")
    out, _, code = sbx.run(s, "pwd -P")
    assert (out, code) == (f"{sbx.cmd_ws}\n".encode(), 0)


def test_clean_initial_environment(sbx):
    s = sbx.new_session()
    out, err, code = sbx.run(s, "env")
    assert code == 0, err
    env = dict(line.split("=", 1) for line in out.decode().splitlines())
    assert env.get("TERM") == "dumb"
    for name in ("PATH", "HOME", "LANG"):
        assert name in env, f"{name} missing from the session environment {env}"
    assert sbx.canary not in out.decode(), "daemon environment leaked into the session"
    # bash itself adds PWD, SHLVL, _ (and OLDPWD); with the sandbox's proxy (docs/network.md),
    # every one of its variables, pointing at the sandbox's loopback
    proxy = {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
             "NO_PROXY", "no_proxy", "npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY",
             "NODE_USE_ENV_PROXY"}
    if "HTTP_PROXY" in env:
        assert proxy <= set(env), f"a proxy variable is missing: {sorted(proxy - set(env))}"
        # with the session's credential (docs/network.md)
        assert re.fullmatch(r"http://sbxfs:[0-9a-f]{32}@127\.0\.0\.1:\d+", env["HTTP_PROXY"]), \
            env["HTTP_PROXY"]
    else:
        proxy = set()
    extra = set(env) - {"PATH", "HOME", "LANG", "TERM", "PWD", "OLDPWD", "SHLVL", "_"} - proxy
    assert not extra, f"unexpected variables in a new session: {sorted(extra)}"


# --- sessions: isolation, sharing, parallelism ----------------------------------------------------


def test_sessions_keep_separate_env_and_cwd_but_share_files(sbx):
    a, b = sbx.new_session(), sbx.new_session()
    d, f = uniq("dirA"), uniq("shared") + ".txt"
    out, err, code = sbx.run(a, f"export ONLY_A=yes; ONLY_A_SHELL=1; only_a() {{ :; }}; "
                                f"mkdir {d}; cd {d}; echo from-a > ../{f}; pwd -P")
    assert code == 0, err
    assert out == f"{sbx.cmd_ws}/{d}\n".encode()
    out, err, code = sbx.run(b, 'echo "${ONLY_A-unset} ${ONLY_A_SHELL-unset}"; '
                                "type only_a >/dev/null 2>&1 || echo no-func; "
                                f"pwd -P; cat {f}")
    assert (out, err, code) == (f"unset unset\nno-func\n{sbx.cmd_ws}\nfrom-a\n".encode(),
                                b"", 0)
    assert read_bytes(sbx.workspace / f) == b"from-a\n"
    # a's state is untouched by b
    assert sbx.run(a, 'echo "$ONLY_A"; pwd -P') == (f"yes\n{sbx.cmd_ws}/{d}\n".encode(), b"", 0)


def test_file_written_through_workspace_is_read_by_command(sbx):
    s = sbx.new_session()
    f = uniq("in") + ".txt"
    with open(sbx.workspace / f, "wb") as fh:
        fh.write(b"written via mount\n")
    assert sbx.run(s, f"cat {f}") == (b"written via mount\n", b"", 0)


def test_file_written_by_command_is_read_through_workspace(sbx):
    s = sbx.new_session()
    f = uniq("out") + ".txt"
    assert sbx.run(s, f"printf 'from command\\n' > {f}")[2] == 0
    assert read_bytes(sbx.workspace / f) == b"from command\n"
    assert (sbx.ws / f).read_bytes() == b"from command\n"


def test_back_to_back_commands_run_in_order(sbx):
    s = sbx.new_session()
    f = uniq("order") + ".txt"
    # The first one is the slowest: if they ran concurrently, the order in f would break.
    sbx.submit(s, f"sleep 0.5; echo one >> {f}")
    sbx.submit(s, f"sleep 0.2; echo two >> {f}")
    sbx.submit(s, f"echo three >> {f}; cat {f}")
    assert sbx.read(s, "stdout") == b"one\ntwo\nthree\n"
    assert sbx.exit_status(s) == 0
    assert (sbx.ws / f).read_bytes() == b"one\ntwo\nthree\n"


def test_two_sessions_run_at_the_same_time(sbx):
    a, b = sbx.new_session(), sbx.new_session()
    ma, mb = uniq("a-ready"), uniq("b-ready")
    try:
        sbx.submit(a, f"touch {ma}; {wait_file_sh(mb, 20)} && echo a-saw-b")
        sbx.submit(b, f"touch {mb}; {wait_file_sh(ma, 20)} && echo b-saw-a")
        assert sbx.read(a, "stdout") == b"a-saw-b\n"
        assert sbx.read(b, "stdout") == b"b-saw-a\n"
        assert sbx.exit_status(a) == 0 and sbx.exit_status(b) == 0
    finally:
        sbx.touch(ma)
        sbx.touch(mb)


def test_default_session_exists_and_runs_commands(sbx):
    d = sbx.sessions / "default"
    assert d.is_dir()
    out, _, code = sbx.run(d, "echo in-default")
    assert (out, code) == (b"in-default\n", 0)


def test_session_directory_contents(sbx):
    s = sbx.new_session()
    names = set(bounded(os.listdir, s))
    assert {"cmd", "stdout", "stderr", "exit", "env", "cwd"} <= names


def test_files_are_empty_before_the_first_command(sbx):
    s = sbx.new_session()
    for name in ("stdout", "stderr", "exit"):
        assert sbx.read(s, name, timeout=5) == b"", name


def test_clone_creates_a_session(sbx):
    first = read_bytes(sbx.sessions / "clone")
    second = read_bytes(sbx.sessions / "clone")
    for data in (first, second):
        assert data.endswith(b"\n") and data.count(b"\n") == 1, data
        sid = data[:-1].decode()
        assert (sbx.sessions / sid).is_dir()
        assert sid in bounded(os.listdir, sbx.sessions)
    assert first != second
    s = sbx.sessions / first[:-1].decode()
    assert sbx.run(s, "echo cloned") == (b"cloned\n", b"", 0)


def test_ls_sessions_lists_created_sessions_and_default(sbx):
    a, b = sbx.new_session(), sbx.new_session()
    names = bounded(os.listdir, sbx.sessions)
    assert {"default", a.name, b.name} <= set(names)
    res = run_proc(["ls", str(sbx.sessions)], timeout=20)
    assert res.returncode == 0
    assert {"default", a.name, b.name} <= set(res.stdout.decode().split())


def test_max_length_session_id_is_accepted(sbx):
    name = uniq("m")
    name = name + "x" * (64 - len(name))
    s = sbx.new_session(name)
    assert s.is_dir()
    assert sbx.run(s, "echo ok") == (b"ok\n", b"", 0)


# --- rmdir ----------------------------------------------------------------------------------------


def _parent_shell(pid):
    parent = proc_parent(pid)
    return parent if parent and proc_comm(parent) == "bash" else None


def test_rmdir_kills_the_running_command(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    sbx.submit(s, f"sleep {tag}")
    pids = wait_until(lambda: procs_matching(f"sleep {tag}"), 10, f"sleep {tag} to start")
    shell = _parent_shell(pids[0])
    try:
        bounded(os.rmdir, s, timeout=15)
        wait_until(lambda: not procs_matching(f"sleep {tag}"), 5, "sleep to die after rmdir")
        if shell is not None:
            wait_until(lambda: not pid_alive(shell), 5, f"session shell {shell} to die")
        assert s.name not in bounded(os.listdir, sbx.sessions)
        assert not os.path.exists(s)
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))


def test_rmdir_kills_background_jobs(sbx):
    s = sbx.new_session()
    bg, fg = sleep_tag(), sleep_tag()
    sbx.submit(s, f"sleep {bg} >/dev/null 2>&1 &\nsleep {fg}")
    try:
        wait_until(lambda: procs_matching(f"sleep {bg}") and procs_matching(f"sleep {fg}"),
                   10, "both sleeps to start")
        bounded(os.rmdir, s, timeout=15)
        wait_until(lambda: not procs_matching(f"sleep {fg}"), 5, "foreground sleep to die")
        wait_until(lambda: not procs_matching(f"sleep {bg}"), 5, "background sleep to die")
    finally:
        kill_quietly(procs_matching(f"sleep {bg}") + procs_matching(f"sleep {fg}"))


def test_rmdir_of_idle_session_and_recreate_is_fresh(sbx):
    s = sbx.new_session()
    sbx.run(s, "export OLDVAR=1; OLDSHELL=1")
    bounded(os.rmdir, s)
    assert s.name not in bounded(os.listdir, sbx.sessions)
    s2 = sbx.new_session(s.name)
    assert sbx.read(s2, "stdout") == b""
    assert sbx.read(s2, "exit") == b""
    assert sbx.run(s2, 'echo "${OLDVAR-unset} ${OLDSHELL-unset}"') == (b"unset unset\n", b"", 0)


# --- env ------------------------------------------------------------------------------------------


def test_env_shows_written_and_exported_variables(sbx):
    s = sbx.new_session()
    write_bytes(s / "env", "WRITTEN_VAR=from-env-file\n")
    sbx.run(s, "export EXPORTED_VAR=from-command")
    env = sbx.read_env(s)
    assert env.get("WRITTEN_VAR") == "from-env-file"
    assert env.get("EXPORTED_VAR") == "from-command"
    assert env.get("TERM") == "dumb"


def test_env_read_is_stable_from_session_creation(sbx):
    # Read at once after mkdir (the shell may still be starting), then after a command that
    # changes nothing: the environment the next command starts with is the same.
    s = sbx.new_session()
    at_creation = sbx.read(s, "env")
    assert sbx.run(s, "true") == (b"", b"", 0)
    assert sbx.read(s, "env") == at_creation


def test_env_write_applies_to_the_next_command(sbx):
    s = sbx.new_session()
    write_bytes(s / "env", "GREETING=hello world\nWITH_EQ=a=b=c\n")
    out, _, code = sbx.run(s, 'echo "[$GREETING] [$WITH_EQ]"; sh -c \'echo "$GREETING"\'')
    assert (out, code) == (b"[hello world] [a=b=c]\nhello world\n", 0)


def test_env_minus_name_unsets(sbx):
    s = sbx.new_session()
    write_bytes(s / "env", "TO_DROP=1\n")
    assert sbx.run(s, 'echo "${TO_DROP-unset}"')[0] == b"1\n"
    sbx.run(s, "export CMD_SET=2")
    write_bytes(s / "env", "-TO_DROP\n-CMD_SET\n")
    env = sbx.read_env(s)
    assert "TO_DROP" not in env and "CMD_SET" not in env
    assert sbx.run(s, 'echo "${TO_DROP-unset} ${CMD_SET-unset}"')[0] == b"unset unset\n"


def test_env_empty_lines_are_ignored(sbx):
    s = sbx.new_session()
    assert write_errno(s / "env", "\nEA=1\n\n\nEB=2\n\n") == 0
    env = sbx.read_env(s)
    assert env.get("EA") == "1" and env.get("EB") == "2"


@pytest.mark.parametrize("line", ["1X=2", "=x", "FOO", "-1X", "A-B=1", "FOO BAR=1", "-"])
def test_env_bad_line_is_einval_and_changes_nothing(sbx, line):
    s = sbx.new_session()
    before = sbx.read(s, "env")
    err = write_errno(s / "env", line + "\n")
    assert err == errno.EINVAL, f"write({line!r}) gave {errname(err)}"
    assert sbx.read(s, "env") == before


def test_env_bad_line_among_good_ones_changes_nothing(sbx):
    s = sbx.new_session()
    before = sbx.read(s, "env")
    err = write_errno(s / "env", "GOOD_BEFORE=1\n1BAD=2\nGOOD_AFTER=3\n")
    assert err == errno.EINVAL, errname(err)
    assert sbx.read(s, "env") == before
    assert sbx.run(s, 'echo "${GOOD_BEFORE-unset} ${GOOD_AFTER-unset}"')[0] == b"unset unset\n"


def test_sessions_do_not_share_env_writes(sbx):
    a, b = sbx.new_session(), sbx.new_session()
    write_bytes(a / "env", "ONLY_IN_A=1\n")
    assert "ONLY_IN_A" not in sbx.read_env(b)
    assert sbx.run(b, 'echo "${ONLY_IN_A-unset}"')[0] == b"unset\n"


# --- cwd ------------------------------------------------------------------------------------------


def test_cwd_write_then_pwd(sbx):
    s = sbx.new_session()
    d = uniq("cwd")
    (sbx.ws / d / "deeper").mkdir(parents=True)
    write_bytes(s / "cwd", f"{d}\n")
    assert os.path.realpath(sbx.read(s, "cwd").decode().rstrip("\n")) == f"{sbx.cmd_ws}/{d}"
    write_bytes(s / "cwd", "deeper")  # relative to the current one
    assert sbx.run(s, "pwd -P") == (f"{sbx.cmd_ws}/{d}/deeper\n".encode(), b"", 0)


def test_cwd_file_follows_cd_in_a_command(sbx):
    s = sbx.new_session()
    d = uniq("cdcwd")
    sbx.run(s, f"mkdir {d} && cd {d}")
    cwd = sbx.read(s, "cwd")
    assert cwd.endswith(b"\n")
    assert os.path.realpath(cwd.decode()[:-1]) == f"{sbx.cmd_ws}/{d}"


def test_cwd_missing_directory_is_enoent(sbx):
    s = sbx.new_session()
    before = sbx.read(s, "cwd")
    err = write_errno(s / "cwd", uniq("missing") + "\n")
    assert err == errno.ENOENT, errname(err)
    assert sbx.read(s, "cwd") == before


def test_cwd_a_file_is_enotdir(sbx):
    s = sbx.new_session()
    f = uniq("afile")
    (sbx.ws / f).write_bytes(b"x")
    before = sbx.read(s, "cwd")
    err = write_errno(s / "cwd", f + "\n")
    assert err == errno.ENOTDIR, errname(err)
    assert sbx.read(s, "cwd") == before


def test_cwd_write_waits_for_the_running_command(sbx):
    s = sbx.new_session()
    base, started, go = uniq("cwdq"), uniq("started"), uniq("go")
    (sbx.ws / base / "a").mkdir(parents=True)
    (sbx.ws / base / "b").mkdir()
    try:
        # The command cds into a; the queued write "../b" is relative to where it ends up.
        sbx.submit(s, f"cd {base}/a; touch ../../{started}; {wait_file_sh('../../' + go)}")
        sbx.wait_ws_file(started)
        writer = Background(write_bytes, s / "cwd", "../b\n", what="write cwd")
        assert not writer.wait(0.5), "write to cwd returned while the command was running"
        sbx.touch(go)
        writer.result(15)
        assert sbx.run(s, "pwd -P") == (f"{sbx.cmd_ws}/{base}/b\n".encode(), b"", 0)
    finally:
        sbx.touch(go)


# --- bad input: mkdir, rmdir, cmd -------------------------------------------------------------


def test_mkdir_existing_session_is_eexist(sbx):
    s = sbx.new_session()
    err = errno_of(os.mkdir, s)
    assert err == errno.EEXIST, errname(err)
    err = errno_of(os.mkdir, sbx.sessions / "default")
    assert err == errno.EEXIST, errname(err)


@pytest.mark.parametrize("name", ["bad id", "x" * 65, "a:b", "a*b", "tab\there", "ü", "a\nb"])
def test_mkdir_bad_session_id_is_einval(sbx, name):
    before = set(bounded(os.listdir, sbx.sessions))
    err = errno_of(os.mkdir, os.path.join(sbx.sessions, name))
    assert err == errno.EINVAL, f"mkdir {name!r}: {errname(err)}"
    assert set(bounded(os.listdir, sbx.sessions)) == before


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_mkdir_dot_names_fail(sbx, name):
    # The kernel answers these itself (EEXIST) before sbxfs sees them; they must fail anyway.
    before = set(bounded(os.listdir, sbx.sessions))
    err = errno_of(os.mkdir, str(sbx.sessions) + "/" + name)
    assert err in (errno.EEXIST, errno.EINVAL), f"mkdir {name!r}: {errname(err)}"
    assert set(bounded(os.listdir, sbx.sessions)) == before


def test_rmdir_default_is_ebusy(sbx):
    err = errno_of(os.rmdir, sbx.sessions / "default")
    assert err == errno.EBUSY, errname(err)
    assert (sbx.sessions / "default").is_dir()


def test_cmd_with_nul_is_einval(sbx):
    s = sbx.new_session()
    err = write_errno(s / "cmd", b"echo a\0b\n")
    assert err == errno.EINVAL, errname(err)
    # nothing was submitted
    assert sbx.read(s, "exit", timeout=5) == b""
    assert sbx.read(s, "stdout", timeout=5) == b""
    # and the session still works
    assert sbx.run(s, "echo fine") == (b"fine\n", b"", 0)


# --- blocking, latest-command semantics --------------------------------------------------------


def test_exit_blocks_until_the_command_ends(sbx):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; (exit 7)")
        reader = Background(read_bytes, s / "exit", what="read exit")
        sbx.wait_ws_file(started)
        assert not reader.wait(0.5), "exit returned while the command was still running"
        sbx.touch(go)
        assert reader.result(15) == b"7\n"
    finally:
        sbx.touch(go)


def test_stdout_read_blocks_until_more_output_or_end(sbx):
    s = sbx.new_session()
    go = uniq("go")
    try:
        sbx.submit(s, f"echo early; {wait_file_sh(go)}; echo late")
        reader = Background(read_bytes, s / "stdout", what="read stdout")
        assert not reader.wait(0.5), "stdout hit EOF while the command was still running"
        sbx.touch(go)
        assert reader.result(15) == b"early\nlate\n"
    finally:
        sbx.touch(go)


def test_reader_keeps_the_command_current_at_open(sbx):
    s = sbx.new_session()
    sbx.run(s, "echo one")
    fd = bounded(os.open, s / "stdout", os.O_RDONLY)
    try:
        sbx.submit(s, "echo two")
        assert sbx.exit_status(s) == 0
        assert read_fd_to_eof(fd) == b"one\n"
    finally:
        os.close(fd)
    assert sbx.read(s, "stdout") == b"two\n"


def test_shell_redirect_then_cat_never_races(sbx):
    s = sbx.new_session()
    script = 'cd "$1" || exit 99; for i in $(seq 1 25); do echo "echo n$i" > cmd; cat stdout; done'
    res = run_proc(["bash", "-c", script, "x", str(s)], timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == b"".join(b"n%d\n" % i for i in range(1, 26))


def test_stdout_size_grows_while_the_command_prints(sbx):
    s = sbx.new_session()
    tag = uniq("grow")
    steps = 4
    script = "\n".join(
        f"echo line{i}; touch {tag}.step{i}; {wait_file_sh(f'{tag}.go{i}')}"
        for i in range(1, steps + 1))
    expected = 0
    try:
        sbx.submit(s, script)
        for i in range(1, steps + 1):
            sbx.wait_ws_file(f"{tag}.step{i}")
            expected += len(f"line{i}\n")
            wait_until(lambda: os.stat(s / "stdout").st_size == expected, 5,
                       f"stat(stdout).st_size == {expected}",
                       show=lambda: f"st_size is {os.stat(s / 'stdout').st_size}")
            sbx.touch(f"{tag}.go{i}")
    finally:
        for i in range(1, steps + 1):
            sbx.touch(f"{tag}.go{i}")
    assert sbx.exit_status(s) == 0
    assert sbx.read(s, "stdout") == b"line1\nline2\nline3\nline4\n"
    assert os.stat(s / "stdout").st_size == expected


def test_select_on_stdout_wakes_when_output_arrives(sbx):
    s = sbx.new_session()
    go1, go2 = uniq("go1"), uniq("go2")
    sbx.submit(s, f"{wait_file_sh(go1)}; echo late; {wait_file_sh(go2)}")
    # A plain open of a still-empty running output waits for its first byte (so that GNU
    # tail -f follows it); an event loop opens with O_NONBLOCK to get the fd at once.
    fd = bounded(os.open, s / "stdout", os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready = bounded(select.select, [fd], [], [], 0.5, timeout=10)[0]
        assert ready == [], "select says readable but there is no output and no EOF yet"
        sbx.touch(go1)
        ready = bounded(select.select, [fd], [], [], 10, timeout=15)[0]
        assert ready == [fd], "select did not report the new output"
        assert bounded(os.read, fd, 100, timeout=5) == b"late\n"
        ready = bounded(select.select, [fd], [], [], 0.5, timeout=10)[0]
        assert ready == [], "select says readable after all output was consumed"
        sbx.touch(go2)
        ready = bounded(select.select, [fd], [], [], 10, timeout=15)[0]
        assert ready == [fd], "select did not report EOF when the command ended"
        assert bounded(os.read, fd, 100, timeout=5) == b""
    finally:
        os.close(fd)
        sbx.touch(go1)
        sbx.touch(go2)


def test_poll_on_exit_wakes_when_the_command_ends(sbx):
    s = sbx.new_session()
    go = uniq("go")
    sbx.submit(s, f"{wait_file_sh(go)}; (exit 5)")
    fd = bounded(os.open, s / "exit", os.O_RDONLY)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert bounded(p.poll, 500, timeout=10) == [], "exit pollable before the command ended"
        sbx.touch(go)
        events = bounded(p.poll, 10000, timeout=15)
        assert events and events[0][0] == fd and events[0][1] & select.POLLIN
        assert read_fd_to_eof(fd, timeout=5) == b"5\n"
    finally:
        os.close(fd)
        sbx.touch(go)


def _wait_blocked(pid, what):
    wait_until(lambda: proc_state(pid) in ("S", "D"), 10, f"{what} to block")


def test_sigint_interrupts_a_reader_parked_on_a_running_command(sbx):
    s = sbx.new_session()
    go = uniq("go")
    sbx.submit(s, f"echo first; {wait_file_sh(go)}; echo last")
    with cat_pipe(s / "stdout", lambda: sbx.touch(go)) as cat:
        assert read_pipe_until(cat.stdout, b"first\n", 10) == b"first\n"
        _wait_blocked(cat.pid, "cat")  # it wrote "first" and is back in read() on stdout
        assert_sigint_ends(cat, "cat on stdout")
    # the command itself was not disturbed
    assert sbx.exit_status(s) == 0
    assert sbx.read(s, "stdout") == b"first\nlast\n"


def test_open_of_empty_running_output_waits_for_first_byte_and_is_interruptible(sbx):
    s = sbx.new_session()
    go = uniq("go")
    sbx.submit(s, f"{wait_file_sh(go)}; echo first")
    opener = Background(os.open, s / "stdout", os.O_RDONLY, what="open stdout")
    time.sleep(0.3)  # the open must still be waiting; nothing was printed yet
    assert not opener.done(), "open of an empty running stdout returned before any output"
    sbx.touch(go)
    fd = opener.result(10)
    try:
        assert bounded(os.read, fd, 100, timeout=5) == b"first\n"
    finally:
        os.close(fd)
    # Ctrl-C on a process waiting in that open ends it at once.
    go2 = uniq("go")
    sbx.submit(s, f"{wait_file_sh(go2)}; echo second")
    with cat_pipe(s / "stdout", lambda: sbx.touch(go2)) as cat:
        _wait_blocked(cat.pid, "cat")
        assert_sigint_ends(cat, "cat opening stdout")
    assert sbx.exit_status(s) == 0


@pytest.mark.sbx_timeout(180)
def test_fifty_parked_readers_do_not_block_other_sessions(sbx):
    busy = sbx.new_session()
    go = uniq("go")
    cats = []
    sbx.submit(busy, f"echo ready; {wait_file_sh(go, 120)}; echo done")
    try:
        for _ in range(50):
            cats.append(subprocess.Popen(["cat", str(busy / "stdout")], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL))
        for cat in cats:
            assert read_pipe_until(cat.stdout, b"ready\n", 20) == b"ready\n"
        for cat in cats:
            _wait_blocked(cat.pid, "cat")
        t0 = time.monotonic()
        other = sbx.new_session()
        assert sbx.run(other, "echo still-responsive", timeout=10) == \
            (b"still-responsive\n", b"", 0)
        elapsed = time.monotonic() - t0
        assert elapsed < 5, f"a command in another session took {elapsed:.1f}s"
        # reading the busy session's finished files must not block either
        assert read_bytes(other / "exit", timeout=5) == b"0\n"
        assert all(cat.poll() is None for cat in cats), "a parked reader ended early"
        sbx.touch(go)
        for cat in cats:
            out, _ = cat.communicate(timeout=20)
            assert (cat.returncode, out) == (0, b"done\n")
    finally:
        sbx.touch(go)
        for cat in cats:
            if cat.poll() is None:
                cat.kill()
            try:
                cat.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass
    assert sbx.exit_status(busy) == 0
