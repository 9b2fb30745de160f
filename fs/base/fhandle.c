/* Open file handles' references, lifetime and poll (see fhandle.h). */
#include "fhandle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "park.h"
#include "xmalloc.h"

static void fhandle_free(struct fhandle *h)
{
	if (h->ph)
		fuse_pollhandle_destroy(h->ph);
	pthread_mutex_destroy(&h->lock);
	h->free(h);
}

void fhandle_init(struct fhandle *h, struct fhandle_list *list, void (*free)(struct fhandle *))
{
	h->refs = 1;
	h->free = free;
	h->list = list;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_lock(&list->lock);
	LIST_INSERT_HEAD(&list->head, h, link);
	pthread_mutex_unlock(&list->lock);
}

void fhandle_ref(struct fhandle *h)
{
	__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
}

void fhandle_unref(struct fhandle *h)
{
	if (__atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	pthread_mutex_lock(&h->list->lock);
	LIST_REMOVE(h, link);
	pthread_mutex_unlock(&h->list->lock);
	fhandle_free(h);
}

void fhandle_release(struct fhandle *h)
{
	/* A poll waiter still queued holds a reference; drop it if we can take it back. */
	if (h->poll_armed && waiter_cancel(&h->pollw))
		fhandle_unref(h);
	fhandle_unref(h);
}

void fhandle_shutdown(struct fhandle_list *list)
{
	struct fhandle *h;

	pthread_mutex_lock(&list->lock);
	while ((h = LIST_FIRST(&list->head))) {
		LIST_REMOVE(h, link);
		fhandle_free(h);
	}
	pthread_mutex_unlock(&list->lock);
}

static void poll_woken(struct waiter *w)
{
	struct fhandle *h = container_of(w, struct fhandle, pollw);
	struct fuse_pollhandle *ph;

	pthread_mutex_lock(&h->lock);
	ph = h->ph;
	h->ph = NULL;
	h->poll_armed = false;
	pthread_mutex_unlock(&h->lock);
	if (ph) {
		fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
	fhandle_unref(h);
}

void fhandle_poll(fuse_req_t req, struct fhandle *h, struct fuse_pollhandle *ph, unsigned revents,
		  fhandle_ready_fn ready)
{
	struct waiter *w = NULL;
	bool now;

	if (!ready) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, revents);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (ph) {
		if (h->ph)
			fuse_pollhandle_destroy(h->ph);
		h->ph = ph;
		if (!h->poll_armed) {
			/* The queued waiter holds a reference until it is woken or cancelled. */
			h->poll_armed = true;
			h->pollw.wake = poll_woken;
			fhandle_ref(h);
			w = &h->pollw;
		}
	}
	now = ready(h, w);
	if (now && w) {
		h->poll_armed = false;
		__atomic_sub_fetch(&h->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&h->lock);
	fuse_reply_poll(req, now ? revents : 0);
}

struct read_req {
	struct fhandle *h;
	size_t size;
	off_t off;
	fhandle_try_fn try;
};

static void read_req_free(void *arg)
{
	struct read_req *rr = arg;

	fhandle_unref(rr->h);
	free(rr);
}

static int read_attempt(struct park *p)
{
	struct read_req *rr = park_arg(p);

	return rr->try(park_req(p), rr->h, rr->size, rr->off, park_waiter(p));
}

void fhandle_read(fuse_req_t req, struct fhandle *h, size_t size, off_t off, int flags,
		  fhandle_try_fn try)
{
	struct read_req *rr;

	if (try(req, h, size, off, NULL) == 0) {
		fhandle_unref(h);
	} else if (flags & O_NONBLOCK) {
		fuse_reply_err(req, EAGAIN);
		fhandle_unref(h);
	} else {
		rr = xmalloc(sizeof(*rr));
		*rr = (struct read_req){h, size, off, try};
		park_request(req, read_attempt, rr, read_req_free); /* owns the reference */
	}
}

struct write_req {
	struct fhandle *h;
	char *data;
	size_t size;
	fhandle_write_fn write;
};

static void write_req_free(void *arg)
{
	struct write_req *wr = arg;

	fhandle_unref(wr->h);
	free(wr->data);
	free(wr);
}

static int write_attempt(struct park *p)
{
	struct write_req *wr = park_arg(p);
	ssize_t n = wr->write(wr->h, wr->data, wr->size, park_waiter(p));

	if (n == -EAGAIN)
		return -EAGAIN;
	if (n < 0)
		fuse_reply_err(park_req(p), (int)-n);
	else
		fuse_reply_write(park_req(p), (size_t)n);
	return 0;
}

void fhandle_write(fuse_req_t req, struct fhandle *h, const char *buf, size_t size, int flags,
		   fhandle_write_fn write)
{
	ssize_t n = write(h, buf, size, NULL);
	struct write_req *wr;

	if (n >= 0) {
		fuse_reply_write(req, (size_t)n);
		return;
	}
	if (n != -EAGAIN || (flags & O_NONBLOCK)) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	wr = xmalloc(sizeof(*wr));
	fhandle_ref(h);
	*wr = (struct write_req){h, xmemdup(buf, size), size, write};
	park_request(req, write_attempt, wr, write_req_free);
}
