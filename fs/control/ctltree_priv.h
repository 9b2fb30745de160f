/* What ctltree.c (the table of files and their attributes), ctlnames.c (lookup and readdir) and
 * ctlmkdir.c (mkdir and rmdir) share: which directories hold each file, and entry replies. */
#ifndef SBX_CTLTREE_PRIV_H
#define SBX_CTLTREE_PRIV_H

#include <sys/types.h>

#include "ctl.h"

/* where: which directories hold the file: a session's, a run's, a background process's. */
enum { IN_SESSION = 1, IN_RUN = 2, IN_JOB = 4 };

struct kind_info {
	const char *name;
	mode_t mode;
	int where;
};

extern const struct kind_info kinds[K_MAX];

/* Replies the entry a lookup of ino answers (ctl_entry). */
void reply_entry(fuse_req_t req, fuse_ino_t ino);

#endif
