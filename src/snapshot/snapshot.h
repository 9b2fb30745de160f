/* Snapshots of the workspace (snapshots/ at the mount's root): taken at one instant while the
 * sandbox runs, kept in their own directory tree (reflinks of the workspace's files where the
 * filesystem makes them, copies elsewhere), restored into the workspace, exported and imported
 * as tar archives, deleted. Work of unbounded cost (copying, restoring, deleting a tree) runs on
 * a worker thread of its own; the table is guarded by a lock of its own, never the core's. */
#ifndef SBX_SNAPSHOT_H
#define SBX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "ticket.h"

#define SNAPSHOT_NAME_MAX 64
/* A snapshot's serial, in its inode numbers. */
#define SNAPSHOT_SERIAL_MAX ((1u << 24) - 1)

struct snapshot;
struct snap_import;

struct snapshot_info {
	char name[SNAPSHOT_NAME_MAX + 1];
	uint32_t serial;
	bool importing; /* an archive being written to import/NAME */
};

/* dir: where snapshots are kept (made if missing); workspace: the backing directory;
 * owner_uid, owner_gid: who the sandbox's files belong to (what an import makes). Loads the
 * snapshots there, and starts the worker. 0 or -errno with a reason. */
int snapshots_init(const struct config *cfg, const char *dir, const char *workspace,
		   uid_t owner_uid, gid_t owner_gid, char *err, size_t errlen);
/* Cancels the work under way, ends the worker, frees the table. */
void snapshots_shutdown(void);
/* fn runs on the loop thread once a restore is done, before the close that asked for it is
 * answered: the layer above drops what it cached of the workspace. */
void snapshots_set_restore_hook(void (*fn)(void));

bool snapshot_name_valid(const char *name);
/* Its name, fixed for its life. */
const char *snapshot_name(const struct snapshot *s);
/* Takes a snapshot of the workspace named name: 0 and *done, a ticket done with 0 once it is
 * there or -errno once it failed (then nothing of it is left); -EINVAL for a bad name,
 * -EEXIST, -ENOSPC at [snapshots] max. */
int snapshot_take(const char *name, struct ticket **done);
/* The same of one directory of the workspace, root (relative to it, as a restore line's DIR
 * normalized: snap_restore_parse): a backup costs what the directory weighs, and restores in
 * place. -EINVAL for a root that is not one. */
int snapshot_take_dir(const char *name, const char *root, struct ticket **done);
/* A directory as a ctl line writes it (relative to the workspace, or /workspace/...),
 * normalized: no "..", "." and empty components dropped, "" for the whole workspace; NULL if it
 * is not one. Caller frees. */
char *snapshot_dir_normalize(const char *p);
/* A take whose mkdir was interrupted: it ends, and nothing of it is left. */
void snapshot_cancel(struct snapshot *s);
/* The same under a fresh name, written to name (SNAPSHOT_NAME_MAX + 1 bytes). */
int snapshot_clone(char *name, struct ticket **done);
/* Deletes it (its tree is removed on the worker): -ENOENT, -EBUSY while it is being taken,
 * restored or read as an archive. */
int snapshot_remove(const char *name);
struct snapshot *snapshot_find(const char *name);
struct snapshot *snapshot_find_serial(uint32_t serial);
void snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);
/* By name; caller frees *v. */
size_t snapshot_list(struct snapshot_info **v);
uint32_t snapshot_serial(const struct snapshot *s);
/* Whether it is an archive being written to import/NAME. */
bool snapshot_importing(const struct snapshot *s);
/* When it was taken (or imported). */
struct timespec snapshot_time(const struct snapshot *s);
/* Its tree, once taken: a directory descriptor the snapshot owns (valid while referenced), or
 * -EAGAIN while it is still being made. */
int snapshot_tree(struct snapshot *s);

/* Its archive, read from the start: 0 and *a (the snapshot pinned until it is closed), or
 * -errno (-EAGAIN while it is still being made). */
struct snap_archive;
int snapshot_archive_open(struct snapshot *s, struct snap_archive **a);
/* The next bytes, up to size: how many (0 at the end), or -errno. */
ssize_t snapshot_archive_read(struct snap_archive *a, char *buf, size_t size);
void snapshot_archive_close(struct snap_archive *a);
/* "key value" lines: state, time, size, files, how long it took, progress while it is taken or
 * restored; caller frees. */
char *snapshot_status(struct snapshot *s, size_t *len);

/* ctl lines: "restore [force] [DIR]" (DIR: a directory of the workspace, relative to it or
 * under /workspace; the whole workspace without). Whether the line is one and may be applied
 * now: 0, -EINVAL, or -EBUSY without force while something runs in the sandbox. */
int snapshot_ctl_check(struct snapshot *s, const char *line, size_t len);
/* Applies one: 0 and *done, done with the restore's outcome (-EBUSY while something runs in
 * the sandbox and force is not given); -EINVAL, -EBUSY while it is being taken or restored. */
int snapshot_ctl(struct snapshot *s, const char *line, size_t len, struct ticket **done);

/* Importing a tar archive as snapshot name: begin reserves the name (-EINVAL, -EEXIST,
 * -ENOSPC at max); write takes the archive's bytes as they come, checking each entry (-EINVAL
 * for an entry that would land outside the snapshot or is no file, directory or link, -EFBIG
 * past import_files_max, -ENOSPC past space_max; every later write fails the same); end makes
 * the snapshot if everything passed (0), else removes what was made (-errno); abort removes it
 * all. Both free im. */
int snapshot_import_begin(const char *name, struct snap_import **im);
/* The serial of the snapshot it makes. */
uint32_t snapshot_import_serial(const struct snap_import *im);
int snapshot_import_write(struct snap_import *im, const char *buf, size_t len);
int snapshot_import_end(struct snap_import *im);
void snapshot_import_abort(struct snap_import *im);

#endif
