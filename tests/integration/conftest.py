"""pytest fixtures for the sbxfs integration tests.

Environment:
  SBXFS_BIN          path of the sbxfs binary (default: <repo>/build/sbxfs)
  SBXFS_BUILD        build directory holding sbxfs (used when SBXFS_BIN is unset)
  SBXFS_EXTRA_ARGS   extra daemon arguments, split with shlex (e.g. "--isolation none")
  SBXFS_TEST_TIMEOUT per-test time limit in seconds (default 120)
  SBXFS_KEEP_TMP     keep the temporary mount/workspace/state directories

Run with Debian's pytest:  /usr/bin/python3 -m pytest tests/integration
"""

import faulthandler
import os
import signal
import sys
import tempfile
import threading

import pytest

import sbxutil
from sbxutil import SbxMount, started, stopped_cleanly

DEFAULT_TEST_TIMEOUT = int(os.environ.get("SBXFS_TEST_TIMEOUT", "120"))
# After the alarm, how long a test may stay stuck (e.g. in a FUSE syscall that a signal cannot
# interrupt) before the watchdog SIGKILLs the daemons, which aborts their FUSE connections.
WATCHDOG_GRACE = 10
# And after that, the last resort: dump all tracebacks and exit the whole pytest process.
HARD_EXIT_GRACE = 30


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sbx_timeout(seconds): per-test time limit instead of SBXFS_TEST_TIMEOUT")
    config.addinivalue_line(
        "markers", "host_side: tests of workspace/ as the host uses it, which do not depend "
        "on the sandbox's isolation mode (CI's --isolation none pass leaves them out)")
    config.addinivalue_line(
        "markers", "no_daemon: tests that start no sbxfs (CI's extra passes, which are about "
        "the daemon, leave them out)")
    config.addinivalue_line(
        "markers", "client: tests of the Node and Python clients and the browser view over a "
        "mount (CI's extra passes, which are about the daemon, leave them out; the daemon's "
        "paths they use have tests of their own)")
    config.addinivalue_line(
        "markers", "heavy: load and scale tests (a hundred remounts, a repository larger than a "
        "session's memory, a libvterm that never returns) whose daemon paths shorter tests "
        "cover too; CI runs them once, in its main pass, to stay under 30 minutes")


def _real_stderr(config):
    """The terminal's stderr even while pytest captures fd 2 (for the hard-exit traceback)."""
    try:
        capman = config.pluginmanager.getplugin("capturemanager")
        fd = capman._global_capturing.err.targetfd_save  # pytest internals; best effort
        return os.fdopen(os.dup(fd), "w")
    except Exception:
        return sys.__stderr__


_PYTEST_INTERNALS = (os.sep + "_pytest" + os.sep, os.sep + "pluggy" + os.sep)


@pytest.fixture(autouse=True)
def _per_test_timeout(request):
    """Global per-test time limit.

    SIGALRM raises pytest's Failed in the main thread, so an overrun is reported as a failure
    of that test, with the traceback of where it was stuck.  The handler also records the
    overrun on the test item, and pytest_runtest_makereport / this fixture's teardown turn it
    into a failure even if the exception got lost (e.g. when the signal is only handled after
    the test function returned, inside pytest's own code, where it does not raise).

    If the main thread is inside a FUSE request that a signal cannot interrupt, a watchdog
    thread kills the daemons a little later, which makes that syscall return so the alarm can
    surface.  As a last resort, faulthandler dumps every thread and exits.
    """
    item = request.node
    marker = item.get_closest_marker("sbx_timeout")
    seconds = int(marker.args[0]) if marker else DEFAULT_TEST_TIMEOUT
    message = f"test exceeded its {seconds}s time limit"

    def on_alarm(signum, frame):
        item._sbx_timeout = message
        if frame is not None and any(p in frame.f_code.co_filename for p in _PYTEST_INTERNALS):
            return  # reported by pytest_runtest_makereport or the teardown below
        pytest.fail(message, pytrace=True)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    watchdog = threading.Timer(
        seconds + WATCHDOG_GRACE, sbxutil.abort_all_mounts,
        args=(f"{item.nodeid} still stuck {WATCHDOG_GRACE}s after its {seconds}s limit",))
    watchdog.daemon = True
    watchdog.start()
    hard_file = _real_stderr(request.config)
    faulthandler.dump_traceback_later(seconds + WATCHDOG_GRACE + HARD_EXIT_GRACE, exit=True,
                                      file=hard_file)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        watchdog.cancel()
        faulthandler.cancel_dump_traceback_later()
        if hard_file is not sys.__stderr__:
            hard_file.close()
    if getattr(item, "_sbx_timeout", None) and not getattr(item, "_sbx_timeout_reported", False):
        pytest.fail(f"{item._sbx_timeout} (noticed after the test body)", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that overran its time limit fails, whatever became of the SIGALRM exception."""
    outcome = yield
    report = outcome.get_result()
    overrun = getattr(item, "_sbx_timeout", None)
    if call.when == "call" and overrun:
        item._sbx_timeout_reported = True
        if not report.failed:
            report.outcome = "failed"
            report.longrepr = f"{overrun} (the alarm exception itself was lost)"
        else:
            report.sections.append(("sbxfs time limit", overrun))


def _start_mount(prefix):
    m = SbxMount(tempfile.mkdtemp(prefix=prefix))
    return started(m)


@pytest.fixture(scope="module")
def sbx():
    """A running sbxfs shared by the tests of one module.

    Attributes: mnt, ws, state, proc, sessions, workspace, cmd_ws (the workspace as commands see it); helpers new_session(),
    run(session, cmd, timeout=30) -> (stdout, stderr, exit), submit(), read(), exit_status()...
    """
    m = _start_mount("sbxfs-it-")
    try:
        yield m
    finally:
        stopped_cleanly(m, "shared sbxfs")


@pytest.fixture(autouse=True)
def _daemon_alive(request):
    """Reports a crashed shared daemon as the failure of the test during which it died,
    and makes the tests after it fail at once instead of with confusing errors."""
    if "sbx" not in request.fixturenames:
        yield
        return
    m = request.getfixturevalue("sbx")
    m.check_alive("before this test; it died during an earlier test")
    yield
    m.check_alive("during this test")


@pytest.fixture
def fresh_mount():
    """Factory of private sbxfs mounts, for tests that stop the daemon themselves."""
    mounts = []

    def make():
        m = _start_mount("sbxfs-it-own-")
        mounts.append(m)
        return m

    yield make
    for m in mounts:
        m.discard()
