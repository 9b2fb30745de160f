/* Parked requests: a FUSE request that must wait for the core (output, an exit, a cd) is handed
 * to the loop thread and answered there when its waiter is woken, or with EINTR when the kernel
 * interrupts it. No thread is held while it waits. */
#ifndef SBX_PARK_H
#define SBX_PARK_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "waiter.h"

struct park;

/* Loop thread: try to answer. Returns 0 once it replied, or -EAGAIN after queuing
 * park_waiter(p) on whatever it waits for. */
typedef int (*park_attempt_fn)(struct park *p);

/* Takes over the request; the first attempt runs on the loop thread. free_arg (may be NULL)
 * releases arg when the park ends. */
void park_request(fuse_req_t req, park_attempt_fn attempt, void *arg, void (*free_arg)(void *));
struct waiter *park_waiter(struct park *p);
fuse_req_t park_req(struct park *p);
void *park_arg(struct park *p);

#endif
