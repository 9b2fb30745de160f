/* The control part's inodes (ino.h's session layout): the kind says the file, the serial its
 * session (0 at the root), and the number a run of the history or, with the flag, a background
 * process (0: the session's own files, which follow the latest run), so no table is needed and
 * a number is never reused for another session. */
#ifndef SBX_CTLINO_H
#define SBX_CTLINO_H

#include "ino.h"
#include "session.h"

enum ctl_kind {
	K_ROOT,
	K_README,
	K_LIMITS,
	K_SESSIONS,
	K_CLONE,
	K_SDIR = TREE_SESSION_DIR, /* sessions/<id>/ */
	K_RUNS,			   /* sessions/<id>/runs/ */
	K_RUNDIR,		   /* sessions/<id>/runs/<n>/ */
	K_CMD,
	K_STDOUT,
	K_STDERR,
	K_EXIT,
	K_STATUS,
	K_ENV,
	K_CWD,
	K_TIMEOUT,
	K_CTL,
	K_STDIN,
	K_JOBS,	  /* sessions/<id>/procs/ */
	K_JOBDIR, /* sessions/<id>/procs/<name>/ */
	K_SIGNAL,
	K_PORTS,
	K_READY,
	K_ALLJOBS, /* procs/ at the root */
	K_JOBLINK, /* procs/<session>.<name> */
	K_CHECKOUT,
	K_RESULT,     /* a run's result as one JSON object */
	K_OUTPUT,     /* stdout and stderr interleaved */
	K_JOBSCTL,    /* sessions/<id>/procs/ctl */
	K_ALLJOBSCTL, /* procs/ctl at the root */
	K_ROOTENV,    /* env at the root */
	K_TERMS,      /* sessions/<id>/terms/: listed here, served by the terms part */
	K_TTY,	      /* sessions/<id>/procs/<name>/tty */
	K_NETDIR,     /* network/ at the root */
	K_NETPOLICY,  /* network/policy */
	K_NETLOG,     /* network/log */
	K_SNETLOG,    /* sessions/<id>/network: the session's lines of the log */
	K_ERRORS,     /* errors at the root: the refusals log */
	K_JOURNAL,    /* journal at the root */
	K_SJOURNAL,   /* sessions/<id>/journal: the session's lines */
	K_METRICS,    /* metrics at the root */
	K_SMETRICS,   /* sessions/<id>/metrics, sessions/<id>/procs/<name>/metrics */
	K_MAX
};
_Static_assert(K_SDIR == 5, "sessions/ID/ is where ino.h says");
_Static_assert(K_MAX <= TREE_KINDS, "the control part's kinds fit the inode's kind bits");
_Static_assert(SESSION_SERIAL_MAX <= TREE_SERIAL_MAX, "a session's serial fits its inodes");

#define RUN_MAX TREE_NUM_MAX

static inline fuse_ino_t ctl_ino(uint64_t serial, enum ctl_kind kind, unsigned run)
{
	return tree_ino(PART_CONTROL, serial, kind, run, false);
}

/* A background process's files: id is its id within the session. */
static inline fuse_ino_t job_ino(uint64_t serial, enum ctl_kind kind, unsigned id)
{
	return tree_ino(PART_CONTROL, serial, kind, id, true);
}

/* The run a history file belongs to (0: the session's own files). */
static inline unsigned ino_run(fuse_ino_t ino)
{
	return ino_flag(ino) ? 0 : ino_num(ino);
}

/* The background process a file belongs to (0: none). */
static inline unsigned ino_job(fuse_ino_t ino)
{
	return ino_flag(ino) ? ino_num(ino) : 0;
}

#endif
