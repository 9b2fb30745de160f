/* The control tree's kinds, a row each (see ctlkind.h): what each file and directory is and
 * what it does at each request. Rows are listed by where they appear. */
#include "ctlkind.h"
#include "session.h"

#define DIR_MODE (S_IFDIR | 0755)
#define IN_RUNS	 (IN_SESSION | IN_RUN | IN_JOB) /* a command's files: the latest's, a run's */

/* The root's (fs/root.c lists them, with contexts/ and workspace/). */

static const struct kind_info root_row = {
    .name = "",
    .mode = DIR_MODE,
    .flags = KF_ROOT | KF_FIXED_ATTR,
};

static const struct kind_info readme_row = {
    .name = "README",
    .help = "this text: every file of the mount, a line each",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = ctl_render_readme,
};

static const struct kind_info limits_row = {
    .name = "limits",
    .help = "the sandbox's limits and use now, its uid, how workspace/ is served",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = ctl_render_limits,
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

static const struct kind_info sessions_row = {
    .name = "sessions",
    .help = "one directory per shell session; ls lists them",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .lookup = ctl_lookup_sessions,
    .list = ctl_list_sessions,
    .mkdir = ctl_mkdir_session,
    .rmdir = ctl_rmdir_session,
};

static const struct kind_info clone_row = {
    .name = "clone",
    .path = "sessions/clone",
    .help = "read it: creates a session, returns its id",
    .mode = S_IFREG | 0444,
    .flags = KF_ROOT,
    .open = ctl_open_clone,
};

/* The root's procs/: SESSION.NAME links to every background process, and ctl. */
static const struct kind_info alljobs_row = {
    .name = "procs",
    .help = "every background process, as SESSION:NAME links",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .lookup = ctl_lookup_links,
    .list = ctl_list_links,
};

static const struct kind_info joblink_row = {
    .name = "",
    .path = "procs/SESSION:NAME",
    .help = "a link to the process's directory in its session",
    .mode = S_IFLNK | 0777,
    .flags = KF_TRANSIENT,
    .size = ctl_size_link,
};

static const struct kind_info alljobsctl_row = {
    .name = "ctl",
    .path = "procs/ctl",
    .help = "write: kill [SIGNAL] ends every background process",
    .mode = S_IFREG | 0200,
    .flags = KF_ROOT,
    .write = ctl_write_verbs,
    .verb = ctl_verb_kill,
    .apply = ctl_apply_verbs,
};

/* A session's directory and its own directories. */

static const struct kind_info sdir_row = {
    .name = "",
    .path = "sessions/ID/",
    .help = "mkdir creates a session (default always there), rmdir ends it",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR,
    .holds = IN_SESSION,
    .parent = K_SESSIONS,
};

static const struct kind_info runs_row = {
    .name = "runs",
    .help = "the last commands, one directory each",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .flags = KF_FIXED_ATTR,
    .parent = K_SDIR,
    .lookup = ctl_lookup_runs,
    .list = ctl_list_runs,
};

static const struct kind_info rundir_row = {
    .name = "",
    .path = "sessions/ID/runs/N/",
    .help = "command N's files, read-only",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR | KF_TRANSIENT,
    .holds = IN_RUN,
    .parent = K_RUNS,
};

static const struct kind_info jobs_row = {
    .name = "procs",
    .help = "the session's background processes",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .flags = KF_FIXED_ATTR,
    .parent = K_SDIR,
    .lookup = ctl_lookup_jobs,
    .list = ctl_list_jobs,
    .mkdir = ctl_mkdir_job,
    .rmdir = ctl_rmdir_job,
};

static const struct kind_info jobdir_row = {
    .name = "",
    .path = "sessions/ID/procs/NAME/",
    .help = "a background process: mkdir, then write its cmd",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR | KF_TRANSIENT,
    .holds = IN_JOB,
    .parent = K_JOBS,
};

/* Listed here, served by fs/terms, whose attributes for it are those of a session's
 * directory, as these. */
static const struct kind_info terms_row = {
    .name = "terms",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .served = terms_dir_ino,
};

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

/* the session's, or a background process's */
static const struct kind_info ctl_row = {
    .name = "ctl",
    .help = "write kill|killall [SIGNAL], timeout MS, restart (a process's: kill, timeout)",
    .mode = S_IFREG | 0200,
    .where = IN_SESSION | IN_JOB,
    .write = ctl_write_verbs,
    .verb = ctl_verb_ctl,
    .apply = ctl_apply_verbs,
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

/* procs/ctl of a session */
static const struct kind_info jobsctl_row = {
    .name = "ctl",
    .path = "sessions/ID/procs/ctl",
    .help = "write: kill [SIGNAL] ends the session's background processes",
    .mode = S_IFREG | 0200,
    .write = ctl_write_verbs,
    .verb = ctl_verb_kill,
    .apply = ctl_apply_verbs,
};

/* A background process's own files. */

static const struct kind_info signal_row = {
    .name = "signal",
    .help = "write a signal (TERM, 15): sent to its whole tree",
    .mode = S_IFREG | 0200,
    .where = IN_JOB,
    .flags = KF_EACH_WRITE,
    .write = ctl_write_signal,
};

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

static const struct kind_info tty_row = {
    .name = "tty",
    .help = "yes or no: whether it starts on a pty; write it while it does not run",
    .mode = S_IFREG | 0644,
    .where = IN_JOB,
    .render = ctl_render_tty,
    .write = ctl_write_tty,
};

/* network/ at the root: the policy in force, and the connection log. */

static const struct kind_info netdir_row = {
    .name = "network",
    .help = "the network policy and log",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .holds = IN_NET,
    .parent = K_ROOT,
};

static const struct kind_info netpolicy_row = {
    .name = "policy",
    .help = "mode none|filtered|host, allow and deny lines; applied at close",
    .mode = S_IFREG | 0644,
    .where = IN_NET,
    .flags = KF_ROOT,
    .render = ctl_render_netpolicy,
    .write = ctl_write_netpolicy,
    .apply = ctl_apply_netpolicy,
};

static const struct kind_info netlog_row = {
    .name = "log",
    .help = "a line per connection through the proxy; reads to its end",
    .mode = S_IFREG | 0444,
    .where = IN_NET,
    .flags = KF_ROOT,
    .size = ctl_size_netlog,
    .read = ctl_read_netlog,
};

/* the session's own lines of network/log */
static const struct kind_info snetlog_row = {
    .name = "network",
    .help = "the session's lines of network/log",
    .mode = S_IFREG | 0444,
    .where = IN_SESSION,
    .size = ctl_size_netlog,
    .read = ctl_read_netlog,
};

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
};

const struct kind_info *kind_row(enum ctl_kind k)
{
	static const struct kind_info none = {.name = ""};

	return (unsigned)k < K_MAX && kinds[k] ? kinds[k] : &none;
}
