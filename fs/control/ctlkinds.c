/* The control tree's kinds indexed (kinds[]), and the rows of a command's files and of the
 * settings, whose functions the request files share (ctlread.c, ctlwrite.c, ctlrender.c,
 * ctlfile.c); the directories' rows are in ctlnames.c, the verbs' in ctlverb.c, network/'s in
 * ctlnet.c, each beside its functions. */
#include "ctlkind.h"
#include "session.h"

/* The root's (fs/root.c lists them, with contexts/ and workspace/). */

static const struct kind_info readme_row = {
    .name = "README",
    .help = "this text: every file of the mount, a line each",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = ctl_render_readme,
};

static const struct kind_info errors_row = {
    .name = "errors",
    .help = "a line per refusal that an errno alone does not explain: what and why",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .size = ctl_size_errors,
    .read = ctl_read_errors,
};


static const struct kind_info rootenv_row = {
    .name = "env",
    .help = "NAME=VALUE lines every session gets; write NAME=VALUE, -NAME",
    .mode = S_IFREG | 0644,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = ctl_render_rootenv,
    .write = ctl_write_rootenv,
    .apply = ctl_apply_rootenv,
};

static const struct kind_info clone_row = {
    .name = "clone",
    .path = "sessions/clone",
    .help = "read it: creates a session, returns its id",
    .mode = S_IFREG | 0444,
    .flags = KF_ROOT,
    .open = ctl_open_clone,
};

static const struct kind_info joblink_row = {
    .name = "",
    .path = "procs/SESSION:NAME",
    .help = "a link to the process's directory in its session",
    .mode = S_IFLNK | 0777,
    .flags = KF_TRANSIENT,
    .size = ctl_size_link,
};

/* A session's directory and its own directories. */

/* A command's files: the latest command's in the session's directory, a run's (read-only,
 * history) and a background process's. */

static const struct kind_info cmd_row = {
    .name = "cmd",
    .help = "write a command: it runs at close (runs/N/: read-only); read: its text",
    .mode = S_IFREG | 0644,
    .where = IN_RUNS,
    .flags = KF_HANDLE,
    .render = ctl_render_cmd,
    .size = ctl_size_cmd,
    .write = ctl_write_cmd,
    .apply = ctl_apply_cmd,
};

static const struct kind_info stdout_row = {
    .name = "stdout",
    .help = "the command's output; blocks while it runs",
    .mode = S_IFREG | 0444,
    .where = IN_RUNS,
    .flags = KF_STREAM | KF_RUN | KF_BIG_BLOCKS,
    .stream = RUN_STDOUT,
    .size = ctl_size_stream,
    .fstat = ctl_fstat_stream,
    .read = ctl_read_stream,
    .poll = ctl_poll_stream,
};

static const struct kind_info stderr_row = {
    .name = "stderr",
    .help = "its error output, read the same way",
    .mode = S_IFREG | 0444,
    .where = IN_RUNS,
    .flags = KF_STREAM | KF_RUN | KF_BIG_BLOCKS,
    .stream = RUN_STDERR,
    .size = ctl_size_stream,
    .fstat = ctl_fstat_stream,
    .read = ctl_read_stream,
    .poll = ctl_poll_stream,
};

/* stdout and stderr interleaved */
static const struct kind_info output_row = {
    .name = "output",
    .help = "stdout and stderr interleaved, read the same way",
    .mode = S_IFREG | 0444,
    .where = IN_RUNS,
    .flags = KF_STREAM | KF_RUN | KF_BIG_BLOCKS,
    .stream = RUN_OUTPUT,
    .size = ctl_size_stream,
    .fstat = ctl_fstat_stream,
    .read = ctl_read_stream,
    .poll = ctl_poll_stream,
};

static const struct kind_info exit_row = {
    .name = "exit",
    .help = "blocks until it ends, then its exit status",
    .mode = S_IFREG | 0444,
    .where = IN_RUNS,
    .flags = KF_RUN,
    .size = ctl_size_exit,
    .fstat = ctl_fstat_exit,
    .read = ctl_read_exit,
    .poll = ctl_poll_exit,
};

static const struct kind_info status_row = {
    .name = "status",
    .help = "state, command, exit, timed_out, ..., error: why it did not run",
    .mode = S_IFREG | 0444,
    .where = IN_RUNS,
    .render = ctl_render_status,
};

/* a run's result as one JSON object, once it ended */
static const struct kind_info result_row = {
    .name = "result",
    .help = "blocks until it ends, then one JSON object of the run",
    .mode = S_IFREG | 0444,
    .where = IN_SESSION | IN_RUN,
    .flags = KF_RUN,
    .render = ctl_render_result,
    .fstat = ctl_fstat_result,
    .read = ctl_read_result,
    .poll = ctl_poll_exit,
};

/* A session's own settings and controls. */

static const struct kind_info env_row = {
    .name = "env",
    .help = "NAME=VALUE lines; write NAME=VALUE to set, -NAME to unset",
    .mode = S_IFREG | 0644,
    .where = IN_SESSION,
    .render = ctl_render_env,
    .write = ctl_write_env,
    .apply = ctl_apply_env,
};

static const struct kind_info cwd_row = {
    .name = "cwd",
    .help = "the directory the next command starts in; write to cd",
    .mode = S_IFREG | 0644,
    .where = IN_SESSION,
    .render = ctl_render_cwd,
    .write = ctl_write_cwd,
    .flush = ctl_flush_cwd,
};

static const struct kind_info timeout_row = {
    .name = "timeout",
    .help = "the session's command timeout in ms (0: none)",
    .mode = S_IFREG | 0644,
    .where = IN_SESSION,
    .render = ctl_render_timeout,
    .write = ctl_write_timeout,
    .apply = ctl_apply_timeout,
};

static const struct kind_info stdin_row = {
    .name = "stdin",
    .help = "bytes for the running (or next) command's stdin",
    .mode = S_IFREG | 0200,
    .where = IN_SESSION | IN_JOB,
    .open = ctl_open_stdin,
    .write = ctl_write_stdin,
};

/* a clone's request, then its progress: the latest checkout's output */
static const struct kind_info checkout_row = {
    .name = "checkout",
    .help = "write URL [branch=B] [dir=D] [depth=N]: git clone; read: progress",
    .mode = S_IFREG | 0644,
    .where = IN_SESSION,
    .flags = KF_HANDLE | KF_STREAM | KF_RUN,
    .run = session_checkout_run,
    .stream = RUN_STDOUT,
    .size = ctl_size_stream,
    .fstat = ctl_fstat_stream,
    .read = ctl_read_stream,
    .poll = ctl_poll_stream,
    .write = ctl_write_checkout,
    .apply = ctl_apply_checkout,
};

/* A background process's own files. */

static const struct kind_info ports_row = {
    .name = "ports",
    .help = "TCP ports its tree listens on, a line each",
    .mode = S_IFREG | 0444,
    .where = IN_JOB,
    .render = ctl_render_ports,
};

static const struct kind_info ready_row = {
    .name = "ready",
    .help = "blocks until its tree listens on a TCP port, then that port",
    .mode = S_IFREG | 0444,
    .where = IN_JOB,
    .read = ctl_read_ready,
};

/* network/ at the root: the policy in force, and the connection log. */

/* Indexed by kind; a directory lists its files in the order of enum ctl_kind (ino.h). */
static const struct kind_info *const kinds[K_MAX] = {
    [K_ROOT] = &root_row,
    [K_README] = &readme_row,
    [K_LIMITS] = &limits_row,
    [K_SESSIONS] = &sessions_row,
    [K_CLONE] = &clone_row,
    [K_SDIR] = &sdir_row,
    [K_RUNS] = &runs_row,
    [K_RUNDIR] = &rundir_row,
    [K_CMD] = &cmd_row,
    [K_STDOUT] = &stdout_row,
    [K_STDERR] = &stderr_row,
    [K_EXIT] = &exit_row,
    [K_STATUS] = &status_row,
    [K_ENV] = &env_row,
    [K_CWD] = &cwd_row,
    [K_TIMEOUT] = &timeout_row,
    [K_CTL] = &ctl_row,
    [K_STDIN] = &stdin_row,
    [K_JOBS] = &jobs_row,
    [K_JOBDIR] = &jobdir_row,
    [K_SIGNAL] = &signal_row,
    [K_PORTS] = &ports_row,
    [K_READY] = &ready_row,
    [K_ALLJOBS] = &alljobs_row,
    [K_JOBLINK] = &joblink_row,
    [K_CHECKOUT] = &checkout_row,
    [K_RESULT] = &result_row,
    [K_OUTPUT] = &output_row,
    [K_JOBSCTL] = &jobsctl_row,
    [K_ALLJOBSCTL] = &alljobsctl_row,
    [K_ROOTENV] = &rootenv_row,
    [K_TERMS] = &terms_row,
    [K_TTY] = &tty_row,
    [K_NETDIR] = &netdir_row,
    [K_NETPOLICY] = &netpolicy_row,
    [K_NETLOG] = &netlog_row,
    [K_SNETLOG] = &snetlog_row,
    [K_ERRORS] = &errors_row,
    [K_JOURNAL] = &journal_row,
    [K_SJOURNAL] = &sjournal_row,
    [K_METRICS] = &metrics_row,
    [K_SMETRICS] = &smetrics_row,
};

const struct kind_info *kind_row(enum ctl_kind k)
{
	static const struct kind_info none = {.name = ""};

	return (unsigned)k < K_MAX && kinds[k] ? kinds[k] : &none;
}
