/* What every open file of the control tree, of terminals and of contexts shares: its references
 * and lifetime (the list that frees what the kernel never released), its lock, and poll: a
 * waiter queued for the next change, which notifies the poll handle the kernel gave; a read or
 * a write that waits, parked (park.h) holding the handle. */
#ifndef SBX_FHANDLE_H
#define SBX_FHANDLE_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdbool.h>
#include <sys/queue.h>

#include "waiter.h"

struct fhandle {
	int refs;
	pthread_mutex_t lock; /* poll state, and the owner's state it says */
	struct fuse_pollhandle *ph;
	bool poll_armed; /* pollw is queued (or being woken) */
	struct waiter pollw;
	void (*free)(struct fhandle *h); /* frees the owner's state and the owner */
	struct fhandle_list *list;
	LIST_ENTRY(fhandle) link;
};

/* The open handles of one family: freed at shutdown (no RELEASE comes after unmount). */
struct fhandle_list {
	pthread_mutex_t lock;
	LIST_HEAD(, fhandle) head;
};

#define FHANDLE_LIST_INIT(l)                                                                       \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, LIST_HEAD_INITIALIZER((l).head)                         \
	}

/* One reference, held by the open; h joins list. */
void fhandle_init(struct fhandle *h, struct fhandle_list *list, void (*free)(struct fhandle *));
void fhandle_ref(struct fhandle *h);
/* The last reference frees the handle. */
void fhandle_unref(struct fhandle *h);
/* RELEASE: drops the open's reference and a queued poll waiter's. */
void fhandle_release(struct fhandle *h);
void fhandle_shutdown(struct fhandle_list *list);

/* With h->lock held: true if a read would not block; else, with w, w is queued to learn when. */
typedef bool (*fhandle_ready_fn)(struct fhandle *h, struct waiter *w);

/* Replies revents once ready says a read would not block (0 before), and keeps ph to notify
 * then. ready NULL: always ready. */
void fhandle_poll(fuse_req_t req, struct fhandle *h, struct fuse_pollhandle *ph, unsigned revents,
		  fhandle_ready_fn ready);

/* Answers a read of size bytes at off and returns 0, or returns -EAGAIN after queuing w (if
 * given) on what it waits for. */
typedef int (*fhandle_try_fn)(fuse_req_t req, struct fhandle *h, size_t size, off_t off,
			      struct waiter *w);

/* Answers a read with try, now or, parked, once try can (flags with O_NONBLOCK: EAGAIN). Takes
 * over a reference the caller took on h before the read touched it. */
void fhandle_read(fuse_req_t req, struct fhandle *h, size_t size, off_t off, int flags,
		  fhandle_try_fn try);

/* Writes what it can of buf and returns how many bytes, or -EAGAIN after queuing w (if given)
 * on what it waits for (room), or -errno. */
typedef ssize_t (*fhandle_write_fn)(struct fhandle *h, const char *buf, size_t size,
				    struct waiter *w);

/* Answers a write with write, now or, parked with a copy of buf, once it can (flags with
 * O_NONBLOCK: EAGAIN). */
void fhandle_write(fuse_req_t req, struct fhandle *h, const char *buf, size_t size, int flags,
		   fhandle_write_fn write);

#endif
