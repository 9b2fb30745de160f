/* Tickets: a result that comes later (a queued cd, a session's shell going away), which a
 * request can park on. Reference-counted; the side that completes it holds one reference. */
#ifndef SBX_TICKET_H
#define SBX_TICKET_H

#include <stdbool.h>

#include "waiter.h"

struct ticket {
	int refs;
	bool done;
	int result;
	struct waitq q;
};

struct ticket *ticket_new(void);
void ticket_ref(struct ticket *t);
void ticket_unref(struct ticket *t);
/* Core lock held. */
void ticket_done(struct ticket *t, int result);
/* True when nobody but the completer is left to read the result. Core lock held. */
bool ticket_abandoned(const struct ticket *t);
/* Takes the core lock: 0 and *result once done, else -EAGAIN (w queued if given). */
int ticket_wait(struct ticket *t, int *result, struct waiter *w);

#endif
