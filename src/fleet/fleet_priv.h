/* What fleet.c (the table, the files) and daemons.c (the daemons' lives) share. */
#ifndef SBX_FLEET_PRIV_H
#define SBX_FLEET_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include "fleet.h"

struct box {
	struct fleet_info info;
	int pidfd;		   /* its daemon's, -1 for none */
	time_t started;		   /* when its daemon came up */
	unsigned quick_fails;	   /* ends right after a start, in a row */
	bool destroy_wanted;	   /* an rmdir came while it started */
	uint64_t memory, disk;	   /* its memory_max and workspace_max, for the budgets */
	bool reconfigure;	   /* its daemon was stopped to start again with a new config */
	void (*done)(void *, int); /* of the rmdir that stops it */
	void *done_arg;
	TAILQ_ENTRY(box) link;
};
TAILQ_HEAD(box_list, box);

extern struct fleet_config fleet_cfg;
/* Guards the table and every box's fields. */
extern pthread_mutex_t fleet_lock;
extern struct box_list fleet_boxes;
extern unsigned fleet_nboxes;

/* STATE_DIR/sandboxes/ID/WHAT ("" for the sandbox's directory); caller frees. */
char *box_path(const char *id, const char *what);

/* Its memory_max and workspace_max by its config ini ("" for the defaults): 0, or -EINVAL with
 * why. */
int bounds_cost(const char *ini, uint64_t *memory, uint64_t *disk, char *why, size_t whylen);
/* fleet_lock held: whether a sandbox of memory and disk fits the bounds, as a new one
 * (new_box: it adds to the count and the disk) or as one that wakes; why if not. */
bool bounds_fit(uint64_t memory, uint64_t disk, bool new_box, char *why, size_t whylen);
/* fleet_lock held: whether b may take a config of memory and disk instead of its own. */
bool bounds_fit_change(struct box *b, uint64_t memory, uint64_t disk, char *why, size_t whylen);
/* fleet_lock held: the bounds' lines of the fleet's status; caller frees. */
char *bounds_status(void);

/* Records the last refusal for the fleet's status: "ID WHAT: WHY". No lock held. */
void fleet_refused(const char *id, const char *what, const char *why);

/* The monitor thread; changed is fleet_init's listener. 0 or -errno with err. */
int daemons_init(void (*changed)(uint64_t serial), char *err, size_t errlen);
/* fleet_lock held: starts its daemon on a thread of its own (state starting). */
void box_start(struct box *b);
/* fleet_lock held, state stopping: stops its daemon, removes its files and takes it out of
 * the table, on a thread of its own; then b->done. */
void box_destroy(struct box *b);
/* Stops a daemon a supervisor that died left on sandbox id (only a process whose program is
 * this fleet's sbxfs). */
void daemon_stop_stale(const char *id);
/* Waits for the starts and destroys under way, then stops every daemon. */
void daemons_shutdown(void);

#endif
