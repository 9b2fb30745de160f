/* What ctlfile.c (the handles: open, release, fstat), ctlread.c (reads and poll) and
 * ctlwrite.c (writes, applied at close) share: an open control file and its kinds. */
#ifndef SBX_CTLFILE_PRIV_H
#define SBX_CTLFILE_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "ctl.h"
#include "envlist.h"
#include "fhandle.h"
#include "run.h"
#include "waiter.h"

struct job;
struct ticket;

struct ctlfh {
	struct fhandle h;      /* h.lock: wbuf and poll state */
	enum ctl_kind kind;
	unsigned n;            /* run number for a run's files, 0 for the session's */
	bool writable;
	struct job *job;       /* a background process's files */
	bool stdin_writer;     /* counted as a writer of the session's (or job's) stdin */
	struct session *s;
	struct run *run;       /* stdout, stderr, exit: the latest run when opened */
	char *snap;            /* README, clone, env, cwd, cmd: the text read back */
	struct ticket *ready;  /* clone: done once the new session's shell is up */
	size_t snaplen;
	char *wbuf;            /* cmd, env, timeout, checkout, cwd, ctl: applied at close */
	size_t wlen;
	size_t wchecked;       /* wbuf's prefix of lines already checked */
	struct envedits wedits; /* env: those lines parsed, to check the env they would make */
	int werr;              /* the first failed write's -errno: nothing of the open applies */
	bool wdone;            /* cwd: its one path was sent */
	off_t pos;             /* end of the last read, for poll */
	bool handle;           /* cmd or checkout opened read-write: a read answers the run number */
	char answer[16];       /* handle: "N\n" of the last submit, read once whatever the offset */
	size_t anslen, ansoff; /* anslen 0: nothing submitted through the handle since its last write */
};

static inline struct ctlfh *fh_of(struct fuse_file_info *fi)
{
	return (struct ctlfh *)(uintptr_t)fi->fh;
}

/* Files whose read waits for the run (or process) to get somewhere, then answers once. */
static inline bool is_awaited(enum ctl_kind k)
{
	return k == K_EXIT || k == K_READY || k == K_RESULT;
}

/* Files that read like a growing output: a checkout's progress is one too. */
static inline bool is_stream(enum ctl_kind k)
{
	return k == K_STDOUT || k == K_STDERR || k == K_OUTPUT || k == K_CHECKOUT;
}

static inline enum run_stream stream_of(enum ctl_kind k)
{
	return k == K_STDERR ? RUN_STDERR : k == K_OUTPUT ? RUN_OUTPUT : RUN_STDOUT;
}

/* ctlwrite.c */
int submit_answer(struct ctlfh *fh);
int flush_pending(struct ctlfh *fh);

#endif
