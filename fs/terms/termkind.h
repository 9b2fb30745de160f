/* The kinds of terms/'s inodes: a row each (termfile.c holds them), with its name, its mode,
 * and what a terminal's file of that kind does at open, read, write, close and poll. termfs.c
 * (names, attributes, directories) and termfile.c (open files) follow the rows instead of
 * testing kinds, so a new kind of file is a new row and its functions. */
#ifndef SBX_TERMKIND_H
#define SBX_TERMKIND_H

#include <stdbool.h>
#include <sys/stat.h>

#include "fhandle.h"
#include "ino.h"

struct session;
struct term;
struct termfh;

/* The kinds of terms/'s inodes (term_ino): terms/ itself is the part's top (ino.h). */
enum term_file {
	T_TERMS = TREE_TOP,
	T_DIR, /* terms/NAME/: it and its files carry the terminal's id */
	T_CMD,
	T_IN,
	T_OUT,
	T_SCREEN,
	T_SIZE,
	T_CTL,
	T_EXIT,
	T_WAIT,
	T_STATUS,
	T_MAX
};
_Static_assert(T_MAX <= TREE_KINDS, "terms/'s kinds fit the inode's kind bits");

/* A terminal's file of kind k in session serial (id 0: terms/ itself). */
static inline fuse_ino_t term_ino(uint64_t serial, enum term_file k, unsigned id)
{
	return tree_ino(PART_TERMS, serial, k, id, false);
}

/* The terminal a directory or file belongs to (0: terms/ itself). */
static inline unsigned ino_term(fuse_ino_t ino)
{
	return ino_num(ino);
}

/* What a row's write returns once it answered the request itself (or parked it). */
#define TERM_REPLIED 1

struct term_kind {
	const char *name;
	const char *help; /* its line in the mount's README */
	mode_t mode;	  /* 0: not a kind of terms/; its directories hold the regular files */

	/* Its text, read whole: rendered at open (settled: once the emulator caught up, a second
	 * at most), and at stat for the size (as it is now) (NULL: none). */
	char *(*render)(struct term *t, size_t *len, bool settled);
	/* The size now of a file not rendered. */
	void (*size)(struct term *t, struct stat *st);
	/* At open, once rendered: 0 or -errno. */
	int (*open)(struct termfh *fh, int flags);
	/* Before a read: 0 or -errno (the read fails). */
	int (*read_begin)(struct termfh *fh);
	fhandle_try_fn read;   /* a read that may wait; NULL: the snapshot */
	fhandle_ready_fn poll; /* NULL: always ready */
	/* A write it answers itself (TERM_REPLIED) or checks: 0 or -errno. */
	int (*write)(fuse_req_t req, struct termfh *fh, const char *buf, size_t size, int flags);
	/* Or, with fh->h.lock held, adds a write to what applies at close: 0 or -errno. */
	int (*add)(struct termfh *fh, const char *buf, size_t size);
	/* A line of a file of lines, checked (apply false) or applied. */
	int (*line)(struct termfh *fh, const char *line, size_t len, bool apply);
	/* At close, with fh->h.lock held: applies what is pending. */
	int (*apply)(struct termfh *fh);
};

/* k's row; one of no name and mode 0 for a number that is none. */
const struct term_kind *term_row(enum term_file k);

/* termfile.c: a terminal's open files, as term_ops has them. */
void termfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void termfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void termfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi);
void termfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void termfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void termfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph);

/* Size of a terminal's file now (what a read from 0 would give, or the output's end). */
void termfile_stat(fuse_ino_t ino, struct session *s, struct stat *st);

#endif
