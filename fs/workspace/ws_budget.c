/* The workspace's descriptor budget: the workspace keeps at most ws_budget_max() descriptors open
 * (inode fds, open files, passthrough backing files, directory streams). Past it, the inode fds
 * no operation is using are closed, least recently used first, and reopened when next needed:
 * by file handle when the daemon may (open_by_handle_at, root), else by name from the parent's
 * fd (O_NOFOLLOW, one component, recursively up to the root, which is never closed). Either way
 * the reopened file must be the same (st_dev, st_ino), else the operation fails with ESTALE: a
 * symlink or another file the sandbox put in its place is never taken for it. While an inode's
 * fd is closed its inode number may be reused by the backing filesystem; a handle (which
 * carries the generation) notices, a name cannot.
 *
 * The table lock (ws_inode.c) guards it all; reopen_lock serialises reopens, which make system
 * calls, and is taken before it. */
#include "ws_inode_priv.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

static struct {
	struct ws_inode *lru_head, *lru_tail;
	long fds;     /* descriptors open, of every kind */
	long max;     /* 0: no budget */
	bool handles; /* may reopen by file handle */
	int root_mnt;
	int mnt_fd; /* a plain fd on the root's mount, for open_by_handle_at */
} budget = {.mnt_fd = -1};

static pthread_mutex_t reopen_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- least recently used fds ---- */

static bool lru_has(const struct ws_inode *in)
{
	return in->lru_prev || budget.lru_head == in;
}

static void lru_remove(struct ws_inode *in)
{
	if (!lru_has(in))
		return;
	if (in->lru_prev)
		in->lru_prev->lru_next = in->lru_next;
	else
		budget.lru_head = in->lru_next;
	if (in->lru_next)
		in->lru_next->lru_prev = in->lru_prev;
	else
		budget.lru_tail = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
}

static void lru_append(struct ws_inode *in)
{
	in->lru_prev = budget.lru_tail;
	in->lru_next = NULL;
	if (budget.lru_tail)
		budget.lru_tail->lru_next = in;
	else
		budget.lru_head = in;
	budget.lru_tail = in;
}

/* Whether in's fd may be closed when it is not in use: it can be reopened. */
static bool closable(const struct ws_inode *in)
{
	return !in->pinned && (in->parent || budget.handles);
}

void ws_budget_idle(struct ws_inode *in)
{
	if (in->uses == 0 && in->fd >= 0 && closable(in))
		lru_append(in);
}

static void take_handle(struct ws_inode *in)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	int mnt;

	if (in->handle)
		return;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(in->fd, "", &h.fh, &mnt, AT_EMPTY_PATH) == -1 ||
	    mnt != budget.root_mnt)
		return;
	in->handle = xmalloc(sizeof(h.fh) + h.fh.handle_bytes);
	memcpy(in->handle, &h, sizeof(h.fh) + h.fh.handle_bytes);
}

/* Closes the least recently used idle inode fd; false if there is none. */
static bool evict_one(void)
{
	struct ws_inode *in = budget.lru_head;

	if (!in)
		return false;
	lru_remove(in);
	if (budget.handles)
		take_handle(in);
	close(in->fd);
	in->fd = -1;
	budget.fds--;
	return true;
}

void ws_budget_reserve(void)
{
	while (budget.max > 0 && budget.fds >= budget.max && evict_one())
		;
	budget.fds++;
}

void ws_budget_named(struct ws_inode *in)
{
	if (in->fd >= 0 && in->uses == 0 && !lru_has(in))
		ws_budget_idle(in);
}

void ws_budget_closed(void)
{
	budget.fds--;
}

void ws_budget_close_inode(struct ws_inode *in)
{
	lru_remove(in);
	if (in->fd >= 0) {
		close(in->fd);
		budget.fds--;
	}
}

void ws_budget_fd_opening(void)
{
	ws_inode_lock();
	ws_budget_reserve();
	ws_inode_unlock();
}

void ws_budget_fd_closed(void)
{
	ws_inode_lock();
	budget.fds--;
	ws_inode_unlock();
}

void ws_budget_set(long max)
{
	ws_inode_lock();
	budget.max = max;
	while (budget.max > 0 && budget.fds > budget.max && evict_one())
		;
	ws_inode_unlock();
}

long ws_budget_max(void)
{
	return budget.max;
}

long ws_budget_fds_open(void)
{
	long n;

	ws_inode_lock();
	n = budget.fds;
	ws_inode_unlock();
	return n;
}

/* ---- using and reopening fds ---- */

static int use_locked(struct ws_inode *in)
{
	if (in->uses++ == 0)
		lru_remove(in);
	return in->fd;
}

static bool same_file(int fd, const struct ws_inode *in)
{
	struct stat st;

	return fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0 &&
	       st.st_dev == in->dev && st.st_ino == in->ino;
}

static int reopen(struct ws_inode *in);

/* Opens in again from its parent by its name; reopen_lock held. */
static int reopen_by_name(struct ws_inode *in)
{
	struct ws_inode *parent;
	char *name;
	int pfd, fd;

	ws_inode_lock();
	parent = in->parent;
	name = in->name ? xstrdup(in->name) : NULL;
	if (parent)
		parent->refs++;
	ws_inode_unlock();
	if (!parent) {
		free(name);
		return -ESTALE;
	}
	pfd = reopen(parent);
	fd = pfd < 0 ? pfd : openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		fd = errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? -ESTALE : -errno;
	if (pfd >= 0)
		ws_budget_unuse(parent);
	ws_inode_drop(parent);
	free(name);
	return fd;
}

/* in's fd, opened again if closed, one use counted; reopen_lock held. */
static int reopen(struct ws_inode *in)
{
	struct file_handle *handle = NULL;
	int fd = -1;

	ws_inode_lock();
	if (in->fd >= 0) {
		fd = use_locked(in);
		ws_inode_unlock();
		return fd;
	}
	ws_budget_reserve();
	if (budget.handles && in->handle) {
		handle = xmalloc(sizeof(*handle) + in->handle->handle_bytes);
		memcpy(handle, in->handle, sizeof(*handle) + in->handle->handle_bytes);
	}
	ws_inode_unlock();
	if (handle) {
		fd = open_by_handle_at(budget.mnt_fd, handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1) {
			fd = -errno;
			if (errno == EPERM) {
				budget.handles = false;
				log_info("workspace: no reopening by file handle (%s); by name",
					 strerror(EPERM));
			}
		}
		free(handle);
	}
	if (fd < 0 && fd != -ESTALE)
		fd = reopen_by_name(in);
	if (fd >= 0 && !same_file(fd, in)) {
		close(fd);
		fd = -ESTALE;
	}
	ws_inode_lock();
	if (fd < 0) {
		budget.fds--;
	} else {
		in->fd = fd;
		use_locked(in);
	}
	ws_inode_unlock();
	return fd;
}

int ws_budget_use(struct ws_inode *in)
{
	int fd;

	ws_inode_lock();
	if (in->fd >= 0) {
		fd = use_locked(in);
		ws_inode_unlock();
		return fd;
	}
	ws_inode_unlock();
	pthread_mutex_lock(&reopen_lock);
	fd = reopen(in);
	pthread_mutex_unlock(&reopen_lock);
	return fd;
}

void ws_budget_unuse(struct ws_inode *in)
{
	ws_inode_lock();
	in->uses--;
	ws_budget_idle(in);
	ws_inode_maybe_free(in);
	ws_inode_unlock();
}

/* ---- start, stop ---- */

void ws_budget_start(int rootfd)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;

	budget.fds = 1;
	/* Reopening by handle needs CAP_DAC_READ_SEARCH; refused later, it is given up. */
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (geteuid() == 0 &&
	    name_to_handle_at(rootfd, "", &h.fh, &budget.root_mnt, AT_EMPTY_PATH) == 0) {
		char p[32];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", rootfd);
		budget.mnt_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		budget.handles = budget.mnt_fd >= 0;
		budget.fds += budget.handles;
	}
}

void ws_budget_stop(void)
{
	budget.lru_head = budget.lru_tail = NULL;
	if (budget.mnt_fd >= 0)
		close(budget.mnt_fd);
	budget.mnt_fd = -1;
}
