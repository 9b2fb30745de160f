/* A fleet: many sandboxes on one host, each a whole sbxfs mount served by a daemon of its own,
 * kept by this supervisor. The FUSE side (fs/fleet) shows them as directories; this layer knows
 * nothing of FUSE. */
#ifndef SBX_FLEET_H
#define SBX_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FLEET_ID_MAX 64

struct fleet_config {
	const char *root;	    /* the fleet's mount point: each sandbox at ROOT/ID/fs */
	const char *state_dir;	    /* sandboxes/ID/{workspace,state,sbxfs.ini} */
	const char *sbxfs;	    /* the sbxfs program */
	const char *sandbox_config; /* the ini each new sandbox starts from ("" for none) */
	unsigned max;		    /* sandboxes at most */
	unsigned max_running;	    /* with a daemon at once, 0 for max's bound only */
	uint64_t memory_budget;	    /* bytes of memory_max of those with a daemon; 0: none */
	uint64_t disk_budget;	    /* bytes of workspace_max of them all; 0: none */
};

enum fleet_state {
	FLEET_STARTING, /* its daemon is on its way up */
	FLEET_RUNNING,
	FLEET_STOPPING, /* rmdir: going away */
	FLEET_FAILED,	/* its daemon does not start: reason says why */
	FLEET_SLEEPING, /* its daemon stopped itself once idle ([sandbox] sleep_after) */
	FLEET_WAKING,	/* its daemon is on its way up again, for a use */
	FLEET_NSTATES,
};

struct fleet_info {
	char id[FLEET_ID_MAX + 1];
	uint64_t serial; /* never reused while the supervisor runs */
	enum fleet_state state;
	pid_t pid;     /* its daemon's, 0 when none runs */
	pid_t starter; /* while it starts: the process that mounts it, else 0 */
	unsigned restarts;
	char reason[256]; /* why it failed or last restarted */
};

/* Before the fleet is mounted: stops the daemons a supervisor that died left on the sandboxes
 * there are (STATE_DIR/sandboxes). changed(serial) is called on any thread, no lock held, each
 * time a sandbox's state changes. 0 or -errno with err. */
int fleet_init(const struct fleet_config *cfg, void (*changed)(uint64_t serial), char *err,
	       size_t errlen);
/* Once the fleet is mounted: starts the daemon of each sandbox there is. */
void fleet_start(void);
/* Stops every daemon (their sandboxes stay, to start again with the next supervisor). */
void fleet_shutdown(void);
bool fleet_id_valid(const char *id, size_t len);
/* Makes a sandbox and starts its daemon (not waiting for it): 0, -EINVAL (a bad id, or a
 * sandbox config that does not load: why says so), -EEXIST, -ENOSPC past a bound (why says
 * so), or -errno. */
int fleet_create(const char *id, char *why, size_t whylen);
/* A fresh id ("sN") made into a sandbox as fleet_create. */
int fleet_clone(char *id, size_t idlen, char *why, size_t whylen);
/* Stops its daemon and removes its state; done(arg, 0 or -errno) is called on another thread
 * once it is gone. -ENOENT, -EBUSY (already going), or 0. */
int fleet_destroy(const char *id, void (*done)(void *arg, int result), void *arg);
/* A use of a sleeping sandbox: its daemon starts (state waking), unless that is past a bound
 * (-ENOSPC, the reason in the fleet's status). 1 if it is now on its way up (starting or
 * waking), for the use to wait; else 0. */
int fleet_wake(uint64_t serial);
/* keep_alive: whether STATE_DIR/sandboxes/ID/state/keep_alive is there, which keeps the sandbox
 * from sleeping; 0, 1, or -errno. */
int fleet_keep_alive(uint64_t serial);
int fleet_set_keep_alive(uint64_t serial, bool on);
/* Its config (STATE_DIR/sandboxes/ID/sbxfs.ini): caller frees. 0 or -errno. */
int fleet_config_read(uint64_t serial, char **text, size_t *len);
/* Replaces its config as a whole and applies it (a running daemon restarts with it; a sleeping
 * one reads it at its wake; a failed one starts again): 0, or -EINVAL (it does not load),
 * -ENOSPC (past a budget), -EBUSY (starting or stopping), -ENOENT, with why, also in the
 * fleet's status. */
int fleet_config_write(uint64_t serial, const char *text, size_t len, char *why, size_t whylen);
int fleet_get(const char *id, struct fleet_info *out);
int fleet_get_serial(uint64_t serial, struct fleet_info *out);
/* Every sandbox, sorted by id; caller frees. */
size_t fleet_list(struct fleet_info **v);
const char *fleet_state_name(enum fleet_state st);
/* The fleet's own status text: "key value" lines; caller frees. */
char *fleet_status(size_t *len);

#endif
