/* An open file of contexts/, as ctxfile.c (the handles and the requests) and ctxkinds.c (what
 * each kind does with it) share it. */
#ifndef SBX_CTXFILE_PRIV_H
#define SBX_CTXFILE_PRIV_H

#include <stdbool.h>
#include <sys/types.h>

#include "ctxkind.h"
#include "fhandle.h"
#include "runhandle.h"

struct xfh {
	struct fhandle h; /* h.lock: snap once rendered, wbuf, pos and poll state */
	enum ctx_kind kind;
	struct context *c;
	struct cell *cell; /* a cell's file: the cell when opened (the latest for n 0) */
	char *snap;	   /* what a snapshot reads back; result and error once rendered */
	size_t snaplen;
	char *wbuf;
	size_t wlen;
	int werr;	     /* the first failed write: nothing of this open applies */
	struct runhandle rh; /* code opened read-write: a read submits and answers N */
	off_t pos;	     /* end of the last stream read, for poll */
};

static inline const struct xkind *fh_row(const struct xfh *fh)
{
	return ctx_row(fh->kind);
}

#endif
