/* Making one directory tree equal to another: what a snapshot does to copy the workspace (then,
 * frozen, to catch up with what changed meanwhile) and a restore to put a snapshot back into
 * the workspace. Every operation is relative to a directory descriptor and never follows a
 * symlink, so a tree changed under it cannot lead it elsewhere; a file it replaces is made
 * aside and renamed over the old one. */
#ifndef SBX_TREESYNC_H
#define SBX_TREESYNC_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* What a sync counts as it goes, read by another thread (__atomic loads) for a status. */
struct tree_stats {
	uint64_t files;	     /* entries done: files, directories, links */
	uint64_t bytes;	     /* bytes of the regular files done */
	uint64_t copied;     /* bytes written (not reflinked, not kept) */
	uint64_t special;    /* sockets, FIFOs and devices: no snapshot holds them */
	uint64_t xattr_lost; /* files whose attributes the destination refused */
};

/* Which side's ctimes vouch that an entry is already in the destination. */
enum trust { TRUST_NONE, TRUST_SRC, TRUST_DST };

struct inomap;

struct tree_sync {
	/* An entry whose trusted side's ctime is before trust_before, by more than the clock the
	 * kernel stamps it with may lag (a tick; 2 s for a filesystem that keeps whole seconds),
	 * with the same type, size and mtime on both sides (for TRUST_DST the same mode and owner
	 * too), is taken as equal and left as it is. A file changes its ctime with every change of
	 * its data, metadata, names and links, so with TRUST_SRC it is the file a pass that began
	 * at trust_before copied, and with TRUST_DST it is the file a snapshot taken at
	 * trust_before holds. */
	enum trust trust;
	struct timespec trust_before;
	/* A first pass (TRUST_NONE) records here the files it copied that were too recent for
	 * that: their ctime and when it was read. A second pass (TRUST_SRC) keeps those whose
	 * ctime is still the same and was older than that read by a tick: any change after the
	 * read would have stamped another. NULL: none. */
	struct inomap *young;
	const struct inomap *dirty; /* source files copied whatever their ctime, or NULL */
	bool strip_setid;	    /* files lose their set-id bits */
	bool clone;		    /* reflinks are tried (cleared once they fail) */
	uint64_t copy_max;	    /* bytes it may write (UINT64_MAX: any), else -ENOSPC */
	uint64_t files_max;	    /* entries the destination may hold (0: any), else -ENOSPC */
	const bool *cancel;	    /* set by another thread: the sync ends, -ECANCELED */
	struct tree_stats st;
};

/* Makes the tree of the directory dst equal to that of src (dst's own attributes included):
 * 0, or -errno (dst then holds part of it). */
int tree_sync(int src, int dst, struct tree_sync *ts);
/* Removes name, a directory with everything in it or any other entry, from the directory dir:
 * 0 or -errno. */
int tree_remove(int dir, const char *name);
/* What tree_sync would write at most to copy src: its regular files' bytes and entries. */
int tree_measure(int src, uint64_t *bytes, uint64_t *entries, const bool *cancel);

#endif
