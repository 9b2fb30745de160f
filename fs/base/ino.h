/* Inode numbers of the control tree. A control inode is odd and encodes the session's serial
 * (0 for the root level), a number with a flag saying whose it is (a run of the history, or a
 * background process; 0: the session's own files, which follow the latest run) and the file's
 * kind, so no table is needed and a number is never reused for another session. Workspace
 * inodes are even (see workspace.h). Bits: 0 tag, 1-6 kind, 7 job flag, 8-31 number, 32-63
 * serial. */
#ifndef SBX_INO_H
#define SBX_INO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

enum ctl_kind {
	K_ROOT,
	K_README,
	K_LIMITS,
	K_SESSIONS,
	K_CLONE,
	K_SDIR,	  /* sessions/<id>/ */
	K_RUNS,	  /* sessions/<id>/runs/ */
	K_RUNDIR, /* sessions/<id>/runs/<n>/ */
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
	K_TERMS,      /* sessions/<id>/terms/ */
	K_TERMDIR,    /* sessions/<id>/terms/<name>/: it and its files carry the terminal's id */
	K_TCMD,
	K_TIN,
	K_TOUT,
	K_TSCREEN,
	K_TSIZE,
	K_TCTL,
	K_TEXIT,
	K_TWAIT,
	K_TSTATUS,
	K_TTY, /* sessions/<id>/procs/<name>/tty */
	K_XPORTS,   /* ports/ at the root */
	K_XEXPOSE,  /* ports/expose */
	K_XPORTDIR, /* ports/<port>/: it and its files carry the port and the exposure's serial */
	K_XURL,
	K_XADDRESS,
	K_XPORT,
	K_XNAME,
	K_XSTATUS,
	K_NETDIR,    /* network/ at the root */
	K_NETPOLICY, /* network/policy */
	K_NETLOG,    /* network/log */
	K_SNETLOG,   /* sessions/<id>/network: the session's lines of the log */
	K_MAX
};

#define KIND_BITS 6
#define JOB_FLAG (1ull << (KIND_BITS + 1))
#define NUM_SHIFT (KIND_BITS + 2)
#define RUN_BITS 24
#define RUN_MAX ((1u << RUN_BITS) - 1)

static inline fuse_ino_t ctl_ino(uint64_t serial, enum ctl_kind kind, unsigned run)
{
	return (fuse_ino_t)((serial << 32) | ((uint64_t)run << NUM_SHIFT) | ((uint64_t)kind << 1) |
			    1);
}

/* A background process's files: num is its id within the session. */
static inline fuse_ino_t job_ino(uint64_t serial, enum ctl_kind kind, unsigned id)
{
	return ctl_ino(serial, kind, id) | JOB_FLAG;
}

static inline enum ctl_kind ino_kind(fuse_ino_t ino)
{
	return (enum ctl_kind)((ino >> 1) & ((1u << KIND_BITS) - 1));
}

static inline unsigned ino_num(fuse_ino_t ino)
{
	return (unsigned)((ino >> NUM_SHIFT) & RUN_MAX);
}

/* The run a history file belongs to (0: the session's own files). */
static inline unsigned ino_run(fuse_ino_t ino)
{
	return (ino & JOB_FLAG) ? 0 : ino_num(ino);
}

/* The background process a file belongs to (0: none). */
static inline unsigned ino_job(fuse_ino_t ino)
{
	return (ino & JOB_FLAG) ? ino_num(ino) : 0;
}

/* terms/ of a session, a terminal's directory or file (fs/terms serves them all). */
static inline bool ino_is_term(fuse_ino_t ino)
{
	return ino_kind(ino) >= K_TERMS && ino_kind(ino) <= K_TSTATUS;
}

/* The terminal a directory or file belongs to (0: terms/ itself). */
static inline unsigned ino_term(fuse_ino_t ino)
{
	return ino_num(ino);
}

/* ports/ and what it holds (fs/ports serves them all): the number is the sandbox's port, the
 * serial the exposure's (both 0 for ports/ itself and ports/expose). */
static inline bool ino_is_xport(fuse_ino_t ino)
{
	return ino_kind(ino) >= K_XPORTS && ino_kind(ino) <= K_XSTATUS;
}

static inline uint64_t ino_serial(fuse_ino_t ino)
{
	return (uint64_t)ino >> 32;
}

/* The odd inodes with bit 63 set are contexts/'s (ctxino.h), but for those whose bits 1-5 are
 * all ones: snapshots/'s (snapino.h). */
#define XINO_FLAG     (1ull << 63)
#define SNAP_INO_MARK (0x1full << 1)

static inline bool ino_is_snap(fuse_ino_t ino)
{
	return (ino & 1) && (ino & XINO_FLAG) && (ino & SNAP_INO_MARK) == SNAP_INO_MARK;
}

#endif
