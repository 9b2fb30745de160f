/* The control tree's kinds of files and directories: one row each (ctlkinds.c lists them), with
 * its name, its mode, the directories that hold it, and what it does at each request. The
 * requests' code (ctltree.c, ctlnames.c, ctlmkdir.c, ctlfile.c, ctlread.c, ctlwrite.c) follows
 * the row instead of testing kinds, so a new kind is a new row and its functions. */
#ifndef SBX_CTLKIND_H
#define SBX_CTLKIND_H

#include <stdbool.h>
#include <sys/stat.h>

#include "ctl.h"
#include "dirsnap.h"
#include "fhandle.h"
#include "run.h"

struct ctlfh;
struct session;

/* where and holds: a session's directory, a run's, a background process's, network/, and the
 * mount's root (fs/root.c lists those with the other parts' names). */
enum { IN_SESSION = 1, IN_RUN = 2, IN_JOB = 4, IN_NET = 8, IN_ROOT = 16 };
#define IN_RUNS (IN_SESSION | IN_RUN | IN_JOB) /* a command's files: the latest's, a run's */

#define DIR_MODE (S_IFDIR | 0755)

enum {
	KF_ROOT = 1 << 0,	/* no session behind it: the root's files, clone, procs/ctl */
	KF_FIXED_ATTR = 1 << 1, /* a directory whose attributes never change */
	KF_TRANSIENT = 1 << 2,	/* goes on its own (history, exit), and its name made again is a
				   new one: the kernel keeps the name 0 s */
	KF_HANDLE = 1 << 3,	/* opened read-write, a read answers the run number of what was
				   written */
	KF_STREAM = 1 << 4,	/* an output: opens once it has a first byte */
	KF_RUN = 1 << 5,	/* reads and polls wait on the run; before any, it reads empty */
	KF_BIG_BLOCKS = 1 << 6, /* copiers size their reads by st_blksize: 512 KiB */
	KF_EACH_WRITE = 1 << 7, /* each write applies alone: a failed one spoils no later one */
};

/* What a row's write returns once it answered the request itself (or parked it). */
#define CTL_REPLIED 1

struct kind_info {
	const char *name;
	/* Its line in the mount's README: its path, when its directory does not say it (a name
	 * lookup gives), and its help. */
	const char *path;
	const char *help;
	mode_t mode;
	int where;	/* IN_*: the directories that hold it */
	unsigned flags; /* KF_* */

	/* A directory: it holds the rows whose where has its holds bit, or lookup and list say
	 * its names; parent is its "..". mkdir and rmdir: NULL refuses them (EPERM). */
	int holds;
	enum ctl_kind parent;
	void (*lookup)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*list)(struct dirsnap *d, fuse_ino_t ino);
	void (*mkdir)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*rmdir)(fuse_req_t req, fuse_ino_t parent, const char *name);
	/* A directory another part serves (terms/): its inode in session serial. */
	fuse_ino_t (*served)(uint64_t serial);

	/* A file, through a handle bound to its session, its run and its process (ctlfile.c).
	 * run: the run it shows, if not the latest command's (or the process's). */
	struct run *(*run)(struct session *s);
	enum run_stream stream; /* KF_STREAM: which output of the run */
	/* At open instead of render: 0 or -errno. */
	int (*open)(struct ctlfh *fh, bool writing);
	/* Its text, read whole: rendered at open, and at stat for the size (NULL: none yet). */
	char *(*render)(struct ctlfh *fh, size_t *len);
	/* The size (and mtime) now of a file not rendered. */
	void (*size)(struct ctlfh *fh, struct stat *st);
	/* fstat through an open handle when it is not its snapshot's size: 0 or -ENOENT. */
	int (*fstat)(struct ctlfh *fh, struct stat *st);
	fhandle_try_fn read;   /* a read that may wait; NULL: the snapshot */
	fhandle_ready_fn poll; /* NULL: always ready */
	/* Checks (or applies) one write: 0, -errno or CTL_REPLIED. NULL: the file is read-only. */
	int (*write)(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
	/* A line of a file of verbs, checked (apply false) or applied. */
	int (*verb)(struct ctlfh *fh, const char *line, size_t len, bool apply);
	/* Applies what the open wrote, at close: 0 or -errno, and a run's number in *n. */
	int (*apply)(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
	/* Answers the close (FLUSH) instead of applying. */
	void (*flush)(fuse_req_t req, struct ctlfh *fh);
};

/* k's row; one of no name and mode 0 for the kinds of other parts (terms/). */
const struct kind_info *kind_row(enum ctl_kind k);

/* The rows, each in the file of its functions (ctlkinds.c indexes them). */
/* ctlnames.c: the directories */
extern const struct kind_info root_row, sessions_row, alljobs_row, sdir_row, runs_row, rundir_row,
    jobs_row, jobdir_row, terms_row;
/* ctlverb.c: the files of verbs and signals */
extern const struct kind_info ctl_row, jobsctl_row, alljobsctl_row, signal_row, tty_row;
/* ctlnet.c: network/ and a session's network */
extern const struct kind_info netdir_row, netpolicy_row, netlog_row, snetlog_row;
/* ctljournal.c: the journal at the root and a session's */
extern const struct kind_info journal_row, sjournal_row;
/* ctlusage.c: metrics, and limits (read, and written live) */
extern const struct kind_info metrics_row, smetrics_row, limits_row;
/* ctlkinds.c: a command's files and the settings, whose functions are the other files' */

/* The part's operations and the functions the rows name, by file. */

/* ctltree.c: attributes and entries */
void ctl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		 struct fuse_file_info *fi);
void ctl_readlink(fuse_req_t req, fuse_ino_t ino);
/* The inode a name of the control tree answers: another part's for a row it serves. */
fuse_ino_t ctl_served_ino(fuse_ino_t ino);
/* The session a per-session inode belongs to (referenced), or NULL. */
struct session *ctl_session(fuse_ino_t ino);
void reply_entry(fuse_req_t req, fuse_ino_t ino);
void ctl_size_cmd(struct ctlfh *fh, struct stat *st);
void ctl_size_stream(struct ctlfh *fh, struct stat *st);
void ctl_size_exit(struct ctlfh *fh, struct stat *st);
void ctl_size_link(struct ctlfh *fh, struct stat *st);

/* ctlnames.c: the names in directories */
void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ctlmkdir.c */
void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void ctl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_mkdir_session(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_rmdir_session(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_mkdir_job(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_rmdir_job(fuse_req_t req, fuse_ino_t parent, const char *name);

/* ctlfile.c: opens and fstat, and the refusals log's line of a refused write to fh's file */
void ctl_refuse(const struct ctlfh *fh, int err, const char *why);
void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
int ctl_open_clone(struct ctlfh *fh, bool writing);
int ctl_open_stdin(struct ctlfh *fh, bool writing);
int ctl_fstat_stream(struct ctlfh *fh, struct stat *st);
int ctl_fstat_exit(struct ctlfh *fh, struct stat *st);
int ctl_fstat_result(struct ctlfh *fh, struct stat *st);

/* ctlrender.c: the texts read whole */
char *ctl_render_readme(struct ctlfh *fh, size_t *len);
char *ctl_render_limits(struct ctlfh *fh, size_t *len);
char *ctl_render_rootenv(struct ctlfh *fh, size_t *len);
char *ctl_render_env(struct ctlfh *fh, size_t *len);
char *ctl_render_cwd(struct ctlfh *fh, size_t *len);
char *ctl_render_cmd(struct ctlfh *fh, size_t *len);
char *ctl_render_timeout(struct ctlfh *fh, size_t *len);
char *ctl_render_ports(struct ctlfh *fh, size_t *len);
char *ctl_render_status(struct ctlfh *fh, size_t *len);
char *ctl_render_result(struct ctlfh *fh, size_t *len);

/* ctlread.c: reads that wait, logs read to their end, and poll */
int ctl_read_log(fuse_req_t req, struct ctlfh *fh, size_t size, off_t off,
		 void (*read)(const void *src, uint64_t *off, char *buf, size_t size, size_t *n),
		 const void *src);
void ctl_size_errors(struct ctlfh *fh, struct stat *st);
int ctl_read_errors(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w);
void ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void ctl_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	      struct fuse_pollhandle *ph);
int ctl_read_stream(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w);
int ctl_read_exit(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w);
int ctl_read_ready(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w);
int ctl_read_result(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w);
bool ctl_poll_stream(struct fhandle *h, struct waiter *w);
bool ctl_poll_exit(struct fhandle *h, struct waiter *w);

/* ctlwrite.c: writes checked at once, applied at close */
void ctl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi);
void ctl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
int ctl_write_cmd(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_env(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_rootenv(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_timeout(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_cwd(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_checkout(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_write_stdin(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size);
int ctl_apply_cmd(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
int ctl_apply_env(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
int ctl_apply_rootenv(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
int ctl_apply_timeout(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
int ctl_apply_checkout(struct ctlfh *fh, const char *text, size_t len, unsigned *n);
void ctl_flush_cwd(fuse_req_t req, struct ctlfh *fh);

/* ctlnet.c: network/ and a session's network */

/* readme.c */
/* The README's text (root.c sets it, from every part's help). */
extern const char *readme_text;

/* ctlverb.c: files of verbs, and those applied at each write */

#endif
