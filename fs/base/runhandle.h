/* A run handle's answer: cmd, checkout or code opened read-write, where a read after the write
 * submits it and reads back its number "N\n", once, from wherever the file offset is (it sits
 * past what was written), as a pipe would. The control and contexts parts share it. */
#ifndef SBX_RUNHANDLE_H
#define SBX_RUNHANDLE_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

#include "fhandle.h"

struct runhandle {
	bool on; /* opened read-write: reads answer the number */
	char answer[16];
	size_t len, off; /* len 0: nothing submitted since the last write */
};

/* The number of what the handle submitted: read next. */
void runhandle_set(struct runhandle *rh, unsigned n);
/* A write begins the next submit: the answer read or not, it is no longer due. */
void runhandle_clear(struct runhandle *rh);
/* Whether part of the answer is still to be read. */
bool runhandle_unread(const struct runhandle *rh);
/* A read of a handle (rh->on): with h's lock held, submits what was written if pending
 * (submit(fh), 0 or -errno), then replies the answer's next bytes. -ENODATA if it submitted
 * nothing: the file then reads as a plain one; another -errno: nothing was replied. */
int runhandle_read(fuse_req_t req, struct fhandle *h, struct runhandle *rh, size_t size,
		   bool pending, int (*submit)(void *fh), void *fh);

#endif
