/* Running a session's queued checkout: sbxfs-git outside the sandbox as the sandbox's user,
 * its output spooled as the checkout's progress, under a time limit, always ending with an
 * "ok ..." or "error CODE: ..." line. */
#ifndef SBX_CHECKOUT_RUN_H
#define SBX_CHECKOUT_RUN_H

#include "checkout.h"

struct identity;
struct session;
struct run;
struct checkout_run;

/* git_bin: sbxfs-git; ws_host and ws_inside: the workspace on the host and as commands see
 * it; id: the user to run as (NULL: the daemon's). */
void checkout_run_init(const char *git_bin, const char *ws_host, const char *ws_inside,
		       const struct identity *id);
void checkout_run_shutdown(void);
const char *checkout_run_workspace(void);

/* Core lock held. Starts the clone of req (taken over) into the workspace path rel (shown to
 * the user as shown), writing into r; done(s) runs (core lock held) once it ended. */
struct checkout_run *checkout_run_start(struct session *s, struct run *r, struct checkout_req *req,
					const char *rel, const char *shown, const char *token,
					void (*done)(struct session *s));
/* Core lock held: kills it (session removal); done still follows. */
void checkout_run_kill(struct checkout_run *g);

#endif
