/* What the files of src/snapshot share: a snapshot, the table's lock, the worker's jobs, and
 * the settings. Nothing outside src/snapshot includes it. */
#ifndef SBX_SNAPSHOT_PRIV_H
#define SBX_SNAPSHOT_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "snapshot.h"
#include "ticket.h"
#include "treesync.h"

enum snap_state {
	SS_TAKING,    /* queued or being taken: no tree yet */
	SS_IMPORTING, /* an archive being written to import/NAME */
	SS_READY,
	SS_RESTORING, /* queued or being restored */
};

/* What the meta file of a snapshot says (meta, next to its tree). */
/* A directory snapshot's root, relative to the workspace: at most this long. */
#define SNAP_ROOT_MAX 1024

struct snap_meta {
	struct timespec time; /* the frozen instant it shows (an import: when it was made) */
	uint64_t took_ms, frozen_ms;
	uint64_t files, bytes;
	uint64_t space;		 /* bytes its copies take: what counts against space_max */
	uint64_t ws_dev, ws_ino; /* the workspace it was taken of (0: imported) */
	bool frozen;		 /* the sandbox was frozen for the catch-up */
	bool reflinked;
	char root[SNAP_ROOT_MAX + 1]; /* the workspace's directory it holds ("": all of it) */
};

struct snapshot {
	char name[SNAPSHOT_NAME_MAX + 1];
	uint32_t serial;
	int refs;	       /* snap_lock */
	enum snap_state state; /* snap_lock */
	bool removed;	       /* snap_lock: out of the table */
	unsigned pins;	       /* snap_lock: archives being read */
	int tree;	       /* once ready */
	struct snap_meta meta; /* once ready */
	/* While it is taken or restored (the worker's): what it does, and its counters. */
	const char *phase;		   /* snap_lock */
	struct tree_stats *progress;	   /* snap_lock: the running sync's, or NULL */
	uint64_t total_files, total_bytes; /* what the copy is expected to reach */
	struct timespec started;
	/* The last restore's outcome, for status. */
	int restore_rc;
	uint64_t restore_ms, restored_files;
	bool restored;
	char restore_busy[512]; /* the last restore refused busy: what held its directory */
	struct ticket *done;	/* the mkdir or ctl waiting on the work */
	TAILQ_ENTRY(snapshot) link;
};

extern pthread_mutex_t snap_lock;
extern const struct config *snap_cfg;
extern int snap_dir_fd;	     /* where snapshots are kept */
extern char *snap_workspace; /* the workspace's backing directory */

/* snapblock.c: the sandbox's processes holding something under the workspace's dir (how many;
 * stop: each is killed), the first few named in why. */
size_t snap_blockers(const char *dir, bool stop, char *why, size_t whylen);
extern uid_t snap_owner_uid;
extern gid_t snap_owner_gid;

/* snapshot.c */
/* Whether a snapshot named name may be made now (snap_lock held): 0 or -errno. */
int snap_may_add_locked(const char *name);
/* A new entry of the table (snap_lock held), referenced once by the table. */
struct snapshot *snap_add_locked(const char *name, enum snap_state state);
/* snap_lock held: the bytes all snapshots take (those being made count what they reserved). */
uint64_t snap_space_used_locked(void);
/* Entries the snapshots hold, and the ones being made: what counts against files_max. */
uint64_t snap_files_used_locked(void);
/* Takes s out of the table (snap_lock held), its ticket done with rc; its tree removed by the
 * worker. */
void snap_drop_locked(struct snapshot *s, int rc);
/* Completes a ticket with rc (takes the core lock) and drops it. */
void snap_ticket_done(struct ticket **t, int rc);
/* The meta file in dir (a snapshot's directory): write or read. 0 or -errno. */
int snap_meta_write(int dir, const struct snap_meta *m);
int snap_meta_read(int dir, struct snap_meta *m);
/* A descriptor of its own of s's tree, for an archive's reader, who keeps the snapshot from
 * being deleted until snapshot_unpin: fd or -errno. */
int snapshot_pin(struct snapshot *s);
void snapshot_unpin(struct snapshot *s, int fd);
/* Makes s ready: its directory renamed from tmp to its name, its tree opened. */
int snap_publish(struct snapshot *s, const char *tmp);
/* The directory a snapshot is made in before it is published. */
void snap_tmp_name(const struct snapshot *s, char *buf, size_t len);
uint64_t snap_now_ms(void);

/* snapwork.c: the worker thread and its queue. */
enum snap_job { JOB_TAKE, JOB_RESTORE, JOB_DELETE };
int snap_work_start(void);
/* Queues work on s (referenced by the queue): a take, a restore (args: the ctl line's), the
 * removal of a tree (s NULL, path: a name in snap_dir_fd). */
void snap_work_queue(enum snap_job job, struct snapshot *s, const char *arg);
/* The cancel flag the running sync watches. */
const bool *snap_work_cancel(void);
/* Cancels the take of s if it is the work under way. */
void snap_work_cancel_take(struct snapshot *s);
void snap_work_stop(void);

/* snaptake.c: takes s (the worker's): 0 or -errno. */
int snap_take_run(struct snapshot *s, const char *root);
/* snaprestore.c: restores s as the line asks (the worker's): 0 or -errno. */
int snap_restore_run(struct snapshot *s, const char *line);
/* Parses "restore [force] [DIR]": 0, *force, and *dir (NULL: the whole workspace; caller
 * frees), or -EINVAL. */
int snap_restore_parse(const char *line, size_t len, bool *force, char **dir);

/* A snapshot's event in the journal: kind, its name, the errno's name if rc < 0. */
void snap_journal(const char *kind, const char *name, int rc);

#endif
