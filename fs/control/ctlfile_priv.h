/* An open control file, as ctlfile.c (the handles: open, release, fstat), ctlrender.c (texts),
 * ctlread.c (reads and poll), ctlwrite.c and ctlverb.c (writes, applied at close) share it. */
#ifndef SBX_CTLFILE_PRIV_H
#define SBX_CTLFILE_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "ctlkind.h"
#include "envlist.h"
#include "fhandle.h"
#include "run.h"
#include "runhandle.h"
#include "waiter.h"

struct job;
struct ticket;

struct ctlfh {
	struct fhandle h; /* h.lock: wbuf and poll state */
	enum ctl_kind kind;
	unsigned n; /* run number for a run's files, 0 for the session's */
	bool writable;
	struct job *job;   /* a background process's files */
	bool stdin_writer; /* counted as a writer of the session's (or job's) stdin */
	struct session *s;
	struct run *run;      /* stdout, stderr, exit: the latest run when opened */
	char *snap;	      /* README, clone, env, cwd, cmd: the text read back */
	struct ticket *ready; /* clone: done once the new session's shell is up */
	size_t snaplen;
	char *wbuf; /* cmd, env, timeout, checkout, cwd, ctl: applied at close */
	size_t wlen;
	size_t wchecked;	/* wbuf's prefix of lines already checked */
	struct envedits wedits; /* env: those lines parsed, to check the env they would make */
	int werr;		/* the first failed write's -errno: nothing of the open applies */
	bool wdone;		/* cwd: its one path was sent */
	off_t pos;		/* end of the last read, for poll */
	uint64_t shift;		/* a log: how far the ring moved past this open's offsets */
	struct runhandle rh; /* cmd or checkout opened read-write: a read answers the run number */
};

static inline struct ctlfh *fh_of(struct fuse_file_info *fi)
{
	return (struct ctlfh *)(uintptr_t)fi->fh;
}

static inline const struct kind_info *fh_row(const struct ctlfh *fh)
{
	return kind_row(fh->kind);
}

/* ctlfile.c */
/* Binds fh (its kind and n set) to the session, run and process of ino: 0, or -ENOENT if one
 * is gone. ctl_unbind drops what it holds. */
int ctl_bind(struct ctlfh *fh, fuse_ino_t ino);
void ctl_unbind(struct ctlfh *fh);
/* Size and mtime the file shows through an open handle (fstat), if fi is one of ours. */
int ctl_fstat(struct fuse_file_info *fi, struct stat *st);

/* ctlwrite.c */
/* fh->h.lock held: adds a write to what the open applies at close (at most max bytes). */
int ctl_pending_append(struct ctlfh *fh, const char *buf, size_t size, size_t max);
/* A write to a file of lines that apply whole at close: appends buf (at most max in all) and
 * checks each line it completes with check; a refused line is said in the errors file with
 * its number in this open and why. 0 or -errno. */
int ctl_write_checked_lines(struct ctlfh *fh, const char *buf, size_t size, size_t max,
			    int (*check)(const char *line, size_t len, char *why, size_t whylen));
int submit_answer(struct ctlfh *fh);
int flush_pending(struct ctlfh *fh);

#endif
