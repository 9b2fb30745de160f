/* The workspace's inode table and its descriptor budget. An inode is the daemon's record of a
 * backing file the kernel holds (keyed by (st_dev, st_ino); its address is the FUSE inode
 * number): an O_PATH|O_NOFOLLOW fd of the file, the lookups the kernel counts, and where it was
 * last seen (parent inode and name).
 *
 * Budget: the workspace keeps at most wsn_budget() descriptors open (inode fds, open files,
 * passthrough backing files, directory streams). Past it, the inode fds no operation is using
 * are closed, least recently used first, and reopened when next needed: by file handle when
 * the daemon may (open_by_handle_at, root), else by name from the parent's fd (O_NOFOLLOW,
 * one component, recursively up to the root, which is never closed). Either way the reopened
 * file must be the same (st_dev, st_ino), else the operation fails with ESTALE: a symlink or
 * another file the sandbox put in its place is never taken for it. While an inode's fd is
 * closed its inode number may be reused by the backing filesystem; a handle (which carries the
 * generation) notices, a name cannot.
 *
 * Lifetime: an inode leaves the table when the kernel forgets it (nlookup 0), and is freed
 * when nothing else holds it either (children naming it as their parent, the coherence code,
 * an operation using its fd). One mutex guards all of it; reopen_lock serialises reopens,
 * which make system calls, and is taken before it. */
#include "ws_priv.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idmap.h"
#include "log.h"
#include "xmalloc.h"

#define TAB_MIN_BUCKETS 1024

static struct {
	pthread_mutex_t lock;
	struct ws_inode **bucket;
	size_t nbucket; /* a power of two */
	size_t count;
	struct ws_inode *lru_head, *lru_tail;
	struct ws_inode *multi; /* files seen with several links */
	long fds;		/* descriptors open, of every kind */
	long max;		/* 0: no budget */
	bool handles;		/* may reopen by file handle */
	int root_mnt;
	int mnt_fd; /* a plain fd on the root's mount, for open_by_handle_at */
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER, .mnt_fd = -1};

static pthread_mutex_t reopen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ws_inode *root;

void wsn_lock(void)
{
	pthread_mutex_lock(&tab.lock);
}

void wsn_unlock(void)
{
	pthread_mutex_unlock(&tab.lock);
}

/* ---- hash table ---- */

static size_t tab_hash(dev_t dev, ino_t ino)
{
	uint64_t h =
	    ((uint64_t)ino ^ ((uint64_t)dev << 32 | (uint64_t)dev >> 32)) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 29));
}

struct ws_inode *wsn_find(dev_t dev, ino_t ino)
{
	struct ws_inode *in = tab.bucket[tab_hash(dev, ino) & (tab.nbucket - 1)];

	while (in && !(in->ino == ino && in->dev == dev))
		in = in->next;
	return in;
}

static void tab_link(struct ws_inode **bucket, size_t nbucket, struct ws_inode *in)
{
	struct ws_inode **head = &bucket[tab_hash(in->dev, in->ino) & (nbucket - 1)];

	in->next = *head;
	*head = in;
}

static void tab_grow(void)
{
	size_t n = tab.nbucket * 2;
	struct ws_inode **b = xcalloc(n, sizeof(*b));

	for (size_t i = 0; i < tab.nbucket; i++) {
		struct ws_inode *in = tab.bucket[i], *next;

		for (; in; in = next) {
			next = in->next;
			tab_link(b, n, in);
		}
	}
	free(tab.bucket);
	tab.bucket = b;
	tab.nbucket = n;
}

static void tab_insert(struct ws_inode *in)
{
	if (tab.count >= tab.nbucket)
		tab_grow();
	tab_link(tab.bucket, tab.nbucket, in);
	tab.count++;
	in->intab = true;
}

static void tab_remove(struct ws_inode *in)
{
	struct ws_inode **pp = &tab.bucket[tab_hash(in->dev, in->ino) & (tab.nbucket - 1)];

	while (*pp != in)
		pp = &(*pp)->next;
	*pp = in->next;
	tab.count--;
	in->intab = false;
}

void wsn_each(void (*fn)(struct ws_inode *in, void *arg), void *arg)
{
	for (size_t i = 0; i < tab.nbucket; i++)
		for (struct ws_inode *in = tab.bucket[i]; in; in = in->next)
			fn(in, arg);
}

void wsn_each_multi(void (*fn)(struct ws_inode *in, void *arg), void *arg)
{
	for (struct ws_inode *in = tab.multi; in; in = in->multi_next)
		fn(in, arg);
}

/* Table lock held: notes that in has (or had) several links. */
static void note_links(struct ws_inode *in, const struct stat *st)
{
	if (in->multi || in->isdir || st->st_nlink < 2)
		return;
	in->multi = true;
	in->multi_next = tab.multi;
	if (tab.multi)
		tab.multi->multi_prev = in;
	tab.multi = in;
}

static void multi_remove(struct ws_inode *in)
{
	if (!in->multi)
		return;
	if (in->multi_prev)
		in->multi_prev->multi_next = in->multi_next;
	else
		tab.multi = in->multi_next;
	if (in->multi_next)
		in->multi_next->multi_prev = in->multi_prev;
}

/* ---- least recently used fds ---- */

static bool lru_has(const struct ws_inode *in)
{
	return in->lru_prev || tab.lru_head == in;
}

static void lru_remove(struct ws_inode *in)
{
	if (!lru_has(in))
		return;
	if (in->lru_prev)
		in->lru_prev->lru_next = in->lru_next;
	else
		tab.lru_head = in->lru_next;
	if (in->lru_next)
		in->lru_next->lru_prev = in->lru_prev;
	else
		tab.lru_tail = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
}

static void lru_append(struct ws_inode *in)
{
	in->lru_prev = tab.lru_tail;
	in->lru_next = NULL;
	if (tab.lru_tail)
		tab.lru_tail->lru_next = in;
	else
		tab.lru_head = in;
	tab.lru_tail = in;
}

/* Whether in's fd may be closed when it is not in use: it can be reopened. */
static bool closable(const struct ws_inode *in)
{
	return !in->pinned && (in->parent || tab.handles);
}

/* An fd that no operation uses any more goes to the end of the line. */
static void became_idle(struct ws_inode *in)
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
	if (name_to_handle_at(in->fd, "", &h.fh, &mnt, AT_EMPTY_PATH) == -1 || mnt != tab.root_mnt)
		return;
	in->handle = xmalloc(sizeof(h.fh) + h.fh.handle_bytes);
	memcpy(in->handle, &h, sizeof(h.fh) + h.fh.handle_bytes);
}

/* Closes the least recently used idle inode fd; false if there is none. */
static bool evict_one(void)
{
	struct ws_inode *in = tab.lru_head;

	if (!in)
		return false;
	lru_remove(in);
	if (tab.handles)
		take_handle(in);
	close(in->fd);
	in->fd = -1;
	tab.fds--;
	return true;
}

/* Counts one more descriptor about to be opened, closing idle ones to stay in the budget. */
static void reserve_locked(void)
{
	while (tab.max > 0 && tab.fds >= tab.max && evict_one())
		;
	tab.fds++;
}

void wsn_fd_opening(void)
{
	wsn_lock();
	reserve_locked();
	wsn_unlock();
}

void wsn_fd_closed(void)
{
	wsn_lock();
	tab.fds--;
	wsn_unlock();
}

void wsn_set_budget(long max)
{
	wsn_lock();
	tab.max = max;
	while (tab.max > 0 && tab.fds > tab.max && evict_one())
		;
	wsn_unlock();
}

long wsn_budget(void)
{
	return tab.max;
}

long wsn_fds_open(void)
{
	long n;

	wsn_lock();
	n = tab.fds;
	wsn_unlock();
	return n;
}

/* ---- lifetime ---- */

static void unref_locked(struct ws_inode *in);

static void maybe_free(struct ws_inode *in)
{
	struct ws_inode *parent;

	if (in->pinned || in->nlookup || in->refs || in->uses)
		return;
	if (in->intab)
		tab_remove(in);
	lru_remove(in);
	multi_remove(in);
	if (in->fd >= 0) {
		close(in->fd);
		tab.fds--;
	}
	parent = in->parent;
	free(in->name);
	free(in->handle);
	free(in);
	if (parent)
		unref_locked(parent);
}

static void unref_locked(struct ws_inode *in)
{
	in->refs--;
	maybe_free(in);
}

void wsn_drop(struct ws_inode *in)
{
	wsn_lock();
	unref_locked(in);
	wsn_unlock();
}

/* Table lock held: records that in was seen as name in dir. */
static void set_name(struct ws_inode *in, struct ws_inode *dir, const char *name)
{
	struct ws_inode *old = in->parent;

	if (in->pinned || (old == dir && in->name && strcmp(in->name, name) == 0))
		return;
	free(in->name);
	in->name = xstrdup(name);
	dir->refs++;
	in->parent = dir;
	if (old)
		unref_locked(old);
	if (in->fd >= 0 && in->uses == 0 && !lru_has(in))
		became_idle(in);
}

static struct ws_inode *inode_new(int fd, const struct stat *st)
{
	struct ws_inode *in = xcalloc(1, sizeof(*in));

	in->fd = fd;
	in->dev = st->st_dev;
	in->ino = st->st_ino;
	in->isdir = S_ISDIR(st->st_mode);
	in->wd = -1;
	in->backing_fd = -1;
	return in;
}

/* Table lock held: the kernel may keep what it learns of in only if changes to it and to
 * its name are seen (its directory is watched, and so is it if it is one). */
static void update_cached(struct ws_inode *in, struct ws_inode *dir)
{
	in->uncached = (dir && !wsi_watched(dir)) || (in->isdir && !wsi_watched(in));
}

/* Finds or makes the inode of st, counting one kernel lookup, seen as name in dir. Takes fd
 * (counted in the budget): keeps it in a new inode, or closes it. */
static struct ws_inode *inode_ref(struct ws_inode *dir, const char *name, int fd,
				  const struct stat *st)
{
	struct ws_inode *in, *fresh = NULL;

	wsn_lock();
	in = wsn_find(st->st_dev, st->st_ino);
	if (!in) {
		fresh = in = inode_new(fd, st);
		tab_insert(in);
		if (in->isdir)
			wsi_watch(in);
	}
	in->nlookup++;
	if (name)
		set_name(in, dir, name);
	else
		became_idle(in);
	update_cached(in, dir);
	if (!fresh) {
		close(fd);
		tab.fds--;
	}
	wsn_unlock();
	return in;
}

static void fill_entry(struct fuse_entry_param *e, struct ws_inode *in, double timeout)
{
	e->ino = ino_of(in);
	e->attr_timeout = e->entry_timeout = in->uncached ? 0 : timeout;
}

int wsn_lookup(struct ws_inode *dir, int dirfd, const char *name, struct fuse_entry_param *e,
	       double timeout)
{
	struct ws_inode *in;
	int fd;

	memset(e, 0, sizeof(*e));
	/* The kernel never sends these without export support; ".." of the root is outside. */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
		return -EINVAL;
	if (fstatat(dirfd, name, &e->attr, AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	wsn_lock();
	in = wsn_find(e->attr.st_dev, e->attr.st_ino);
	if (in) {
		in->nlookup++;
		set_name(in, dir, name);
		update_cached(in, dir);
		note_links(in, &e->attr);
		fill_entry(e, in, timeout);
		wsn_unlock();
		idmap_stat(&e->attr);
		return 0;
	}
	reserve_locked();
	wsn_unlock();
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1) {
		int res = -errno;

		if (fd != -1)
			close(fd);
		wsn_fd_closed();
		return res;
	}
	idmap_stat(&e->attr);
	in = inode_ref(dir, name, fd, &e->attr);
	wsn_lock();
	note_links(in, &e->attr);
	fill_entry(e, in, timeout);
	wsn_unlock();
	return 0;
}

fuse_ino_t wsn_ref_fd(struct ws_inode *dir, int fd, const struct stat *st)
{
	wsn_fd_opening();
	return ino_of(inode_ref(dir, NULL, fd, st));
}

void wsn_ref_again(struct ws_inode *in)
{
	wsn_lock();
	in->nlookup++;
	wsn_unlock();
}

void wsn_forget(struct ws_inode *in, uint64_t nlookup)
{
	wsn_lock();
	if (nlookup > in->nlookup) {
		log_warnx("workspace: forget %ju of inode %ju looked up %ju times",
			  (uintmax_t)nlookup, (uintmax_t)in->ino, (uintmax_t)in->nlookup);
		nlookup = in->nlookup;
	}
	in->nlookup -= nlookup;
	if (in->nlookup == 0 && !in->pinned) {
		if (in->intab)
			tab_remove(in);
		wsi_unwatch(in);
		maybe_free(in);
	}
	wsn_unlock();
}

void wsn_renamed(struct ws_inode *newdir, int newdirfd, const char *newname)
{
	struct ws_inode *in;
	struct stat st;

	if (fstatat(newdirfd, newname, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	wsn_lock();
	in = wsn_find(st.st_dev, st.st_ino);
	if (in)
		set_name(in, newdir, newname);
	wsn_unlock();
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

	wsn_lock();
	parent = in->parent;
	name = in->name ? xstrdup(in->name) : NULL;
	if (parent)
		parent->refs++;
	wsn_unlock();
	if (!parent) {
		free(name);
		return -ESTALE;
	}
	pfd = reopen(parent);
	fd = pfd < 0 ? pfd : openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		fd = errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? -ESTALE : -errno;
	if (pfd >= 0)
		wsn_unuse(parent);
	wsn_drop(parent);
	free(name);
	return fd;
}

/* in's fd, opened again if closed, one use counted; reopen_lock held. */
static int reopen(struct ws_inode *in)
{
	struct file_handle *handle = NULL;
	int fd = -1;

	wsn_lock();
	if (in->fd >= 0) {
		fd = use_locked(in);
		wsn_unlock();
		return fd;
	}
	reserve_locked();
	if (tab.handles && in->handle) {
		handle = xmalloc(sizeof(*handle) + in->handle->handle_bytes);
		memcpy(handle, in->handle, sizeof(*handle) + in->handle->handle_bytes);
	}
	wsn_unlock();
	if (handle) {
		fd = open_by_handle_at(tab.mnt_fd, handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1) {
			fd = -errno;
			if (errno == EPERM) {
				tab.handles = false;
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
	wsn_lock();
	if (fd < 0) {
		tab.fds--;
	} else {
		in->fd = fd;
		use_locked(in);
	}
	wsn_unlock();
	return fd;
}

int wsn_use(struct ws_inode *in)
{
	int fd;

	wsn_lock();
	if (in->fd >= 0) {
		fd = use_locked(in);
		wsn_unlock();
		return fd;
	}
	wsn_unlock();
	pthread_mutex_lock(&reopen_lock);
	fd = reopen(in);
	pthread_mutex_unlock(&reopen_lock);
	return fd;
}

void wsn_unuse(struct ws_inode *in)
{
	wsn_lock();
	in->uses--;
	became_idle(in);
	maybe_free(in);
	wsn_unlock();
}

/* ---- open, close ---- */

int wsn_open(int fd, const struct stat *st)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;

	root = inode_new(fd, st);
	root->pinned = true;
	wsn_lock();
	tab.nbucket = TAB_MIN_BUCKETS;
	tab.bucket = xcalloc(tab.nbucket, sizeof(*tab.bucket));
	tab_insert(root);
	tab.fds = 1;
	wsi_watch(root);
	update_cached(root, NULL);
	/* Reopening by handle needs CAP_DAC_READ_SEARCH; refused later, it is given up. */
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (geteuid() == 0 && name_to_handle_at(fd, "", &h.fh, &tab.root_mnt, AT_EMPTY_PATH) == 0) {
		char p[32];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		tab.mnt_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		tab.handles = tab.mnt_fd >= 0;
		tab.fds += tab.handles;
	}
	wsn_unlock();
	return 0;
}

/* Frees every inode: first the parents they hold (those out of the table go with their last
 * child), then the table's. */
void wsn_close(void)
{
	wsn_lock();
	for (size_t i = 0; i < tab.nbucket; i++) {
		for (struct ws_inode *in = tab.bucket[i]; in; in = in->next) {
			struct ws_inode *p = in->parent;

			in->parent = NULL;
			if (p)
				unref_locked(p);
		}
	}
	for (size_t i = 0; i < tab.nbucket; i++) {
		struct ws_inode *in = tab.bucket[i], *next;

		for (; in; in = next) {
			next = in->next;
			if (in->backing_refs > 0)
				close(in->backing_fd); /* the kernel never released these opens */
			wsi_unwatch(in);
			in->intab = in->pinned = false;
			in->nlookup = 0;
			in->uses = in->refs = 0;
			maybe_free(in);
		}
	}
	free(tab.bucket);
	tab.bucket = NULL;
	tab.nbucket = tab.count = 0;
	tab.lru_head = tab.lru_tail = NULL;
	tab.multi = NULL;
	if (tab.mnt_fd >= 0)
		close(tab.mnt_fd);
	tab.mnt_fd = -1;
	root = NULL;
	wsn_unlock();
}

struct ws_inode *wsn_root(void)
{
	return root;
}
