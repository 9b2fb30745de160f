/* A run handle's answer (runhandle.h). */
#include "runhandle.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "reply.h"

void runhandle_set(struct runhandle *rh, unsigned n)
{
	if (rh->on && n) {
		rh->len = (size_t)snprintf(rh->answer, sizeof(rh->answer), "%u\n", n);
		rh->off = 0;
	}
}

void runhandle_clear(struct runhandle *rh)
{
	rh->len = rh->off = 0;
}

bool runhandle_unread(const struct runhandle *rh)
{
	return rh->off < rh->len;
}

int runhandle_read(fuse_req_t req, struct fhandle *h, struct runhandle *rh, size_t size,
		   bool pending, int (*submit)(void *fh), void *fh)
{
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	if (pending)
		rc = submit(fh);
	if (rc == 0 && !rh->len)
		rc = -ENODATA;
	if (rc == 0)
		reply_answer(req, rh->answer, rh->len, &rh->off, size);
	pthread_mutex_unlock(&h->lock);
	return rc;
}
