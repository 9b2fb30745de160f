/* The fleet's tree (fleetfs.h): its root lists the sandboxes, with `clone` (reading it makes one
 * and gives its id) and `status`; `mkdir ID` makes one and `rmdir ID` destroys it. Each ID/ has
 * `fs/`, where the sandbox's own daemon mounts its whole tree, and `status`.
 *
 * `keep_alive` (yes or no, read and written) keeps it from sleeping, and `config` is its own
 * config (read, and written as a whole: boxfile.c). Inodes: fleetino.h.
 *
 * While a sandbox starts, nothing is mounted on its fs/ yet. A path walk into it checks its
 * permission first, and fs/'s attributes are never cached, so that check asks here (a GETATTR,
 * with no directory lock held); it is parked until the daemon is up, the process that mounts
 * it aside. A lookup under fs/ or an opendir of it that still reaches this tree is answered
 * ESTALE: the kernel walks the path again, into the sandbox's mount. Parking a lookup there
 * instead would hold fs/'s lock, which the mount itself needs. A sandbox that fails gives EIO
 * there, with the reason in its status. A sleeping sandbox is woken by that same GETATTR,
 * which then waits as for a start. */
#include "fleetfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boxfile.h"
#include "fleet.h"
#include "fleetino.h"
#include "log.h"
#include "xmalloc.h"

#define TIMEOUT 3600.0 /* names and attributes are ours alone, and stable */

/* A request parked until a sandbox is up (or failed): a GETATTR of its fs/, or an open of
 * clone. */
struct parked {
	fuse_req_t req;
	uint64_t serial;
	fuse_ino_t ino;		  /* a GETATTR's */
	struct fuse_file_info fi; /* an open's */
	char *text;		  /* clone's: what its reads give */
	bool flush;		  /* a close of config: it returns once the config runs */
	TAILQ_ENTRY(parked) link;
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(, parked) waiting = TAILQ_HEAD_INITIALIZER(waiting);

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	bool dir = ino == FUSE_ROOT_ID || kind_of(ino) == FL_DIR || kind_of(ino) == FL_FS;
	bool writable = kind_of(ino) == FL_KEEP || kind_of(ino) == FL_CONFIG;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = dir ? S_IFDIR | 0755 : S_IFREG | (writable ? 0644 : 0444);
	st->st_nlink = dir ? 2 : 1;
	st->st_size = boxfile_size(ino);
	st->st_uid = getuid();
	st->st_gid = getgid();
}

/* fs/'s attributes are never cached (see the top), nor config's size, which changes. */
static double attr_timeout(fuse_ino_t ino)
{
	return kind_of(ino) == FL_FS || kind_of(ino) == FL_CONFIG ? 0.0 : TIMEOUT;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {
	    .ino = ino, .attr_timeout = attr_timeout(ino), .entry_timeout = TIMEOUT};

	fill_attr(ino, &e.attr);
	fuse_reply_entry(req, &e);
}

/* Whether the sandbox of serial still is (with its info). */
static bool alive(uint64_t serial, struct fleet_info *fi)
{
	return serial && fleet_get_serial(serial, fi) == 0;
}

static int fs_errno(uint64_t serial)
{
	struct fleet_info info;

	if (!alive(serial, &info) || info.state == FLEET_STOPPING)
		return ENOENT;
	return info.state == FLEET_FAILED ? EIO : ESTALE; /* up: the kernel walks into it */
}

static bool coming_up(const struct fleet_info *info)
{
	return info->state == FLEET_STARTING || info->state == FLEET_WAKING;
}

/* Parks p while its sandbox starts (true), unless the request is the mount's own. */
static bool park(struct parked *p)
{
	struct fleet_info info;
	bool parked = false;

	pthread_mutex_lock(&park_lock);
	if (alive(p->serial, &info) && coming_up(&info) &&
	    fuse_req_ctx(p->req)->pid != info.starter) {
		TAILQ_INSERT_TAIL(&waiting, p, link);
		parked = true;
	}
	pthread_mutex_unlock(&park_lock);
	return parked;
}

static void answer(struct parked *p)
{
	struct fleet_info info;
	struct stat st;

	if (p->flush) {
		fuse_reply_err(p->req, alive(p->serial, &info) && info.state == FLEET_FAILED ? EIO : 0);
	} else if (p->text) { /* an open of clone: its id, whatever became of the sandbox */
		struct handle *h = handle_new(p->text);

		p->fi.fh = (uint64_t)(uintptr_t)h;
		p->fi.direct_io = 1;
		if (fuse_reply_open(p->req, &p->fi) != 0)
			handle_free(h);
	} else if (alive(p->serial, &info) && info.state == FLEET_RUNNING) {
		fill_attr(p->ino, &st);
		fuse_reply_attr(p->req, &st, 0.0);
	} else {
		fuse_reply_err(p->req, fs_errno(p->serial));
	}
	free(p);
}

void fleetfs_changed(uint64_t serial)
{
	struct fleet_info info;
	struct parked *p, *next;
	TAILQ_HEAD(, parked) ready = TAILQ_HEAD_INITIALIZER(ready);

	if (alive(serial, &info) && coming_up(&info))
		return;
	pthread_mutex_lock(&park_lock);
	for (p = TAILQ_FIRST(&waiting); p; p = next) {
		next = TAILQ_NEXT(p, link);
		if (p->serial == serial) {
			TAILQ_REMOVE(&waiting, p, link);
			TAILQ_INSERT_TAIL(&ready, p, link);
		}
	}
	pthread_mutex_unlock(&park_lock);
	while ((p = TAILQ_FIRST(&ready))) {
		TAILQ_REMOVE(&ready, p, link);
		answer(p);
	}
}

static void fleet_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fleet_info info;

	if (parent == FUSE_ROOT_ID) {
		if (!strcmp(name, "clone"))
			reply_entry(req, INO_CLONE);
		else if (!strcmp(name, "status"))
			reply_entry(req, INO_STATUS);
		else if (fleet_get(name, &info) == 0)
			reply_entry(req, box_ino(info.serial, FL_DIR));
		else
			fuse_reply_err(req, ENOENT);
	} else if (kind_of(parent) == FL_DIR) {
		if (!alive(serial_of(parent), &info))
			fuse_reply_err(req, ENOENT);
		else if (!strcmp(name, "fs"))
			reply_entry(req, parent | FL_FS);
		else if (!strcmp(name, "status"))
			reply_entry(req, parent | FL_STATUS);
		else if (!strcmp(name, "keep_alive"))
			reply_entry(req, parent | FL_KEEP);
		else if (!strcmp(name, "config"))
			reply_entry(req, parent | FL_CONFIG);
		else
			fuse_reply_err(req, ENOENT);
	} else if (kind_of(parent) == FL_FS) {
		fuse_reply_err(req, fs_errno(serial_of(parent)));
	} else {
		fuse_reply_err(req, ENOTDIR);
	}
}

static void fleet_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fleet_info info;
	struct stat st;
	int rc = 0;

	(void)fi;
	if (ino > INO_STATUS && !alive(serial_of(ino), &info)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (kind_of(ino) == FL_FS && (rc = fleet_wake(info.serial)) < 0) {
		fuse_reply_err(req, -rc); /* a wake past a bound: the fleet's status says why */
		return;
	}
	if (rc > 0) {
		struct parked *p = xcalloc(1, sizeof(*p));

		p->req = req;
		p->serial = info.serial;
		p->ino = ino;
		if (park(p))
			return;
		free(p);
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, attr_timeout(ino));
}

static void fleet_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char why[256] = "", id[FLEET_ID_MAX + 1];
	bool write = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct fleet_info info;
	struct handle *h;
	struct parked *p;
	int rc;

	if (ino != INO_CLONE) {
		if ((rc = boxfile_open(ino, write, fi->flags & O_TRUNC, &h)) < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)h;
		fi->direct_io = 1;
		if (fuse_reply_open(req, fi) != 0)
			handle_free(h);
		return;
	}
	if (write) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if ((rc = fleet_clone(id, sizeof(id), why, sizeof(why))) < 0) {
		log_warnx("fleet clone: %s", why[0] ? why : strerror(-rc));
		fuse_reply_err(req, -rc);
		return;
	}
	/* Answered once the sandbox is up, so that what the reader does next finds it. */
	p = xcalloc(1, sizeof(*p));
	p->req = req;
	p->fi = *fi;
	p->text = xasprintf("%s\n", id);
	fleet_get(id, &info);
	p->serial = info.serial;
	if (!park(p))
		answer(p); /* up (or failed) already */
}

static void fleet_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	const struct handle *h = (const struct handle *)(uintptr_t)fi->fh;
	size_t n;
	char *copy;

	(void)ino;
	if ((size_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	/* A copy: the kernel's readahead may end this read and send the release, which frees h,
	 * while fuse_reply_buf is still in writev (ASan reads the buffer after it returns). */
	n = h->len - (size_t)off < size ? h->len - (size_t)off : size;
	copy = xmemdup(h->text + off, n);
	fuse_reply_buf(req, copy, n);
	free(copy);
}

static void fleet_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	ssize_t n = boxfile_write((struct handle *)(uintptr_t)fi->fh, ino, buf, size, off);

	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* config's writes apply at its close, which reports whether they took, and returns once the
 * sandbox runs with them (EIO if it failed to start with them: its status says why). */
static void fleet_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = boxfile_flush((struct handle *)(uintptr_t)fi->fh, ino);
	struct parked *p;

	if (rc == 1) {
		p = xcalloc(1, sizeof(*p));
		p->req = req;
		p->serial = serial_of(ino);
		p->flush = true;
		if (park(p))
			return;
		answer(p);
		return;
	}
	fuse_reply_err(req, -rc);
}

static void fleet_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	handle_free((struct handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void fleet_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (kind_of(ino) == FL_FS)
		fuse_reply_err(req, fs_errno(serial_of(ino)));
	else
		fuse_reply_open(req, fi);
}

/* Adds one entry to buf; false once it is full. */
static bool add_entry(fuse_req_t req, char *buf, size_t size, size_t *used, const char *name,
		      fuse_ino_t ino, off_t next)
{
	struct stat st;
	size_t need;

	fill_attr(ino, &st);
	need = fuse_add_direntry(req, buf + *used, size - *used, name, &st, next);
	if (need > size - *used)
		return false;
	*used += need;
	return true;
}

static void fleet_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	char *buf = xmalloc(size);
	struct fleet_info *v = NULL;
	size_t used = 0, n = 0;
	const char *fixed[] = {".", "..", "clone", "status", "keep_alive", "config"};
	fuse_ino_t fixed_ino[] = {ino, FUSE_ROOT_ID, INO_CLONE, INO_STATUS, 0, 0};
	size_t nfixed = ino == FUSE_ROOT_ID ? 4 : 2;
	bool room = true;

	(void)fi;
	if (ino == FUSE_ROOT_ID)
		n = fleet_list(&v);
	else if (kind_of(ino) == FL_DIR) {
		fixed[2] = "fs";
		fixed[3] = "status";
		fixed_ino[2] = ino | FL_FS;
		fixed_ino[3] = ino | FL_STATUS;
		fixed_ino[4] = ino | FL_KEEP;
		fixed_ino[5] = ino | FL_CONFIG;
		nfixed = 6;
	}
	for (size_t i = (size_t)off; room && i < nfixed + n; i++)
		room = i < nfixed
			   ? add_entry(req, buf, size, &used, fixed[i], fixed_ino[i], (off_t)i + 1)
			   : add_entry(req, buf, size, &used, v[i - nfixed].id,
				       box_ino(v[i - nfixed].serial, FL_DIR), (off_t)i + 1);
	fuse_reply_buf(req, buf, used);
	free(v);
	free(buf);
}

static void fleet_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fleet_info info;
	char why[256] = "";
	int rc;

	(void)mode;
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((rc = fleet_create(name, why, sizeof(why))) < 0) {
		if (why[0])
			log_warnx("fleet: %s not created: %s", name, why);
		fuse_reply_err(req, -rc);
		return;
	}
	fleet_get(name, &info);
	reply_entry(req, box_ino(info.serial, FL_DIR));
}

static void destroyed(void *arg, int result)
{
	fuse_reply_err(arg, -result);
}

static void fleet_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int rc = parent == FUSE_ROOT_ID ? fleet_destroy(name, destroyed, req) : -EPERM;

	if (rc < 0)
		fuse_reply_err(req, -rc);
}

/* Every other change of the fleet's tree: its names are the supervisor's. */
static void refuse(fuse_req_t req)
{
	fuse_reply_err(req, EPERM);
}

static void fleet_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	refuse(req);
}

static void fleet_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	refuse(req);
}

static void fleet_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	refuse(req);
}

static void fleet_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
			 const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	refuse(req);
}

static void fleet_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	refuse(req);
}

static void fleet_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			  struct fuse_file_info *fi)
{
	struct stat st;
	int rc = -EPERM;

	/* The truncation of an open for writing (`echo yes > keep_alive`, `cat a.ini > config`) */
	if (to_set == FUSE_SET_ATTR_SIZE && attr->st_size == 0)
		rc = boxfile_truncate(fi ? (struct handle *)(uintptr_t)fi->fh : NULL, ino);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_attr(ino, &st);
	st.st_size = 0;
	fuse_reply_attr(req, &st, attr_timeout(ino));
}

const struct fuse_lowlevel_ops fleet_ops = {
    .lookup = fleet_lookup,
    .getattr = fleet_getattr,
    .open = fleet_open,
    .read = fleet_read,
    .write = fleet_write,
    .flush = fleet_flush,
    .release = fleet_release,
    .opendir = fleet_opendir,
    .readdir = fleet_readdir,
    .mkdir = fleet_mkdir,
    .rmdir = fleet_rmdir,
    .mknod = fleet_mknod,
    .unlink = fleet_unlink,
    .symlink = fleet_symlink,
    .rename = fleet_rename,
    .link = fleet_link,
    .setattr = fleet_setattr,
};
