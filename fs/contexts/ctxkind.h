/* The kinds of contexts/'s inodes: a row each (ctxfile.c holds them), with its name, its mode,
 * the directories that hold it, and what a file of that kind does at open, stat, read, write,
 * close and poll. ctxfs.c (names, attributes, directories) and ctxfile.c (open files) follow
 * the rows instead of testing kinds, so a new kind of file is a new row and its functions. */
#ifndef SBX_CTXKIND_H
#define SBX_CTXKIND_H

#include <stdbool.h>
#include <sys/stat.h>

#include "context.h"
#include "ctxino.h"
#include "fhandle.h"
#include "run.h"

struct cell;
struct dirsnap;
struct xfh;

/* where: a context's directory, a cell's (cells/N/). */
enum { IN_CTX = 1, IN_CELL = 2 };

enum {
	XF_TOP = 1 << 0,       /* of no context: contexts/ itself and its clone */
	XF_CELL = 1 << 1,      /* a cell's: the one its number says, or the latest (maybe none) */
	XF_HANDLE = 1 << 2,    /* opened read-write, a read answers the cell's number */
	XF_STREAM = 1 << 3,    /* an output of the cell's run */
	XF_NO_READ = 1 << 4,   /* write-only, even for root */
	XF_TRANSIENT = 1 << 5, /* comes and goes (a context, a cell, a value): names kept 0 s */
};

struct xkind {
	const char *name;
	/* Its line in the mount's README: the paths no directory lists by name (several,
	 * separated by spaces), and its help. */
	const char *path;
	const char *help;
	mode_t mode; /* 0: no such kind */
	int where;   /* IN_*: the directories that hold it */
	unsigned flags;
	enum context_attr attr; /* the setting a setting's file shows and sets */
	enum run_stream stream; /* XF_STREAM: which output */

	/* A directory: it holds the rows whose where has its holds bit, or lookup and list say
	 * its names (c and cell: what its inode resolves to, either may be NULL); parent gives
	 * its "..". mkdir and rmdir: NULL refuses them (EPERM). */
	int holds;
	void (*lookup)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*list)(struct dirsnap *d, fuse_ino_t ino, struct context *c, struct cell *cell);
	fuse_ino_t (*parent)(fuse_ino_t ino);
	void (*mkdir)(fuse_req_t req, const char *name);
	void (*rmdir)(fuse_req_t req, const char *name);
	/* Whether the file is there while its context is (NULL: it is). */
	bool (*present)(struct cell *cell, fuse_ino_t ino);

	/* At open instead of render: 0 or -errno. */
	int (*open)(struct xfh *fh);
	/* Its text, read whole: rendered at open, and at stat for the size; 0 or -errno (the open
	 * fails), *text NULL: none (yet). */
	int (*render)(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
		      size_t *len);
	/* The size (and mtime) now of a file not rendered. */
	void (*size)(struct cell *cell, fuse_ino_t ino, struct stat *st);
	fhandle_try_fn read;   /* a read that waits for the cell; NULL: the snapshot */
	fhandle_ready_fn poll; /* NULL: always ready */
	/* result and error: the text, once the cell ended. */
	int (*await)(struct cell *cell, char **text, size_t *len);
	/* Writes: at most wmax bytes an open, checked as they come (fh->h.lock held), applied at
	 * close; *n a cell's number. apply NULL: the file is read-only. */
	size_t wmax;
	int (*check)(struct xfh *fh);
	int (*apply)(struct xfh *fh, const char *text, size_t len, unsigned *n);
};

/* The directories' rows (ctxfs.c, with their functions). */
extern const struct xkind ctx_top_row, ctx_dir_row, ctx_cells_row, ctx_celldir_row, ctx_results_row;

/* k's row; one of mode 0 for a number of no kind. */
const struct xkind *ctx_row(enum ctx_kind k);

/* ctxfs.c */
int ctxfs_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held);
/* The context (referenced) and, for a cell's file, the cell (referenced; latest when n is 0,
 * may be NULL before the first cell): -ENOENT when gone. */
int ctxfs_resolve(fuse_ino_t ino, struct context **c, struct cell **cell);

/* ctxfile.c: the open files, as ctx_ops has them. */
void ctxfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctxfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
void ctxfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi);
void ctxfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctxfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctxfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		  struct fuse_pollhandle *ph);
/* fstat through an open handle: its snapshot's size. */
int ctxfile_stat(struct fuse_file_info *fi, struct stat *st);

#endif
