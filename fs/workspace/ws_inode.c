/* The workspace's inode table. An inode is the daemon's record of a backing file the kernel
 * holds (keyed by (st_dev, st_ino); its address is the FUSE inode number): an O_PATH|O_NOFOLLOW
 * fd of the file, the lookups the kernel counts, and where it was last seen (parent inode and
 * name).
 *
 * Its fd may be closed and reopened to keep within the descriptor budget (ws_budget.c).
 *
 * Lifetime: an inode leaves the table when the kernel forgets it (nlookup 0), and is freed
 * when nothing else holds it either (children naming it as their parent, the coherence code,
 * an operation using its fd). One mutex guards all of it and the budget. */
#include "ws_inode_priv.h"

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
	struct ws_inode *multi; /* files seen with several links */
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct ws_inode *root;

void ws_inode_lock(void)
{
	pthread_mutex_lock(&tab.lock);
}

void ws_inode_unlock(void)
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

struct ws_inode *ws_inode_find(dev_t dev, ino_t ino)
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

void ws_inode_each(void (*fn)(struct ws_inode *in, void *arg), void *arg)
{
	for (size_t i = 0; i < tab.nbucket; i++)
		for (struct ws_inode *in = tab.bucket[i]; in; in = in->next)
			fn(in, arg);
}

void ws_inode_each_multi(void (*fn)(struct ws_inode *in, void *arg), void *arg)
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

/* ---- lifetime ---- */

static void unref_locked(struct ws_inode *in);

void ws_inode_maybe_free(struct ws_inode *in)
{
	struct ws_inode *parent;

	if (in->pinned || in->nlookup || in->refs || in->uses)
		return;
	if (in->intab)
		tab_remove(in);
	multi_remove(in);
	ws_budget_close_inode(in);
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
	ws_inode_maybe_free(in);
}

void ws_inode_drop(struct ws_inode *in)
{
	ws_inode_lock();
	unref_locked(in);
	ws_inode_unlock();
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
	ws_budget_named(in);
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
	in->uncached = (dir && !ws_inval_watched(dir)) || (in->isdir && !ws_inval_watched(in));
}

/* Finds or makes the inode of st, counting one kernel lookup, seen as name in dir. Takes fd
 * (counted in the budget): keeps it in a new inode, or closes it. */
static struct ws_inode *inode_ref(struct ws_inode *dir, const char *name, int fd,
				  const struct stat *st)
{
	struct ws_inode *in, *fresh = NULL;

	ws_inode_lock();
	in = ws_inode_find(st->st_dev, st->st_ino);
	if (!in) {
		fresh = in = inode_new(fd, st);
		tab_insert(in);
		if (in->isdir)
			ws_inval_watch(in);
	}
	in->nlookup++;
	if (name)
		set_name(in, dir, name);
	else
		ws_budget_idle(in);
	update_cached(in, dir);
	if (!fresh) {
		close(fd);
		ws_budget_closed();
	}
	ws_inode_unlock();
	return in;
}

static void fill_entry(struct fuse_entry_param *e, struct ws_inode *in, double timeout)
{
	e->ino = ino_of(in);
	e->attr_timeout = e->entry_timeout = in->uncached ? 0 : timeout;
}

int ws_inode_lookup(struct ws_inode *dir, int dirfd, const char *name, struct fuse_entry_param *e,
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
	ws_inode_lock();
	in = ws_inode_find(e->attr.st_dev, e->attr.st_ino);
	if (in) {
		in->nlookup++;
		set_name(in, dir, name);
		update_cached(in, dir);
		note_links(in, &e->attr);
		fill_entry(e, in, timeout);
		ws_inode_unlock();
		idmap_stat(&e->attr);
		return 0;
	}
	ws_budget_reserve();
	ws_inode_unlock();
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1) {
		int res = -errno;

		if (fd != -1)
			close(fd);
		ws_budget_fd_closed();
		return res;
	}
	idmap_stat(&e->attr);
	in = inode_ref(dir, name, fd, &e->attr);
	ws_inode_lock();
	note_links(in, &e->attr);
	fill_entry(e, in, timeout);
	ws_inode_unlock();
	return 0;
}

fuse_ino_t ws_inode_ref_fd(struct ws_inode *dir, int fd, const struct stat *st)
{
	ws_budget_fd_opening();
	return ino_of(inode_ref(dir, NULL, fd, st));
}

void ws_inode_ref_again(struct ws_inode *in)
{
	ws_inode_lock();
	in->nlookup++;
	ws_inode_unlock();
}

void ws_inode_forget(struct ws_inode *in, uint64_t nlookup)
{
	ws_inode_lock();
	if (nlookup > in->nlookup) {
		log_warnx("workspace: forget %ju of inode %ju looked up %ju times",
			  (uintmax_t)nlookup, (uintmax_t)in->ino, (uintmax_t)in->nlookup);
		nlookup = in->nlookup;
	}
	in->nlookup -= nlookup;
	if (in->nlookup == 0 && !in->pinned) {
		if (in->intab)
			tab_remove(in);
		ws_inval_unwatch(in);
		ws_inode_maybe_free(in);
	}
	ws_inode_unlock();
}

void ws_inode_renamed(struct ws_inode *newdir, int newdirfd, const char *newname)
{
	struct ws_inode *in;
	struct stat st;

	if (fstatat(newdirfd, newname, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	ws_inode_lock();
	in = ws_inode_find(st.st_dev, st.st_ino);
	if (in)
		set_name(in, newdir, newname);
	ws_inode_unlock();
}
/* ---- open, close ---- */

int ws_inode_open(int fd, const struct stat *st)
{
	root = inode_new(fd, st);
	root->pinned = true;
	ws_inode_lock();
	tab.nbucket = TAB_MIN_BUCKETS;
	tab.bucket = xcalloc(tab.nbucket, sizeof(*tab.bucket));
	tab_insert(root);
	ws_budget_start(fd);
	ws_inval_watch(root);
	update_cached(root, NULL);
	ws_inode_unlock();
	return 0;
}

/* Frees every inode: first the parents they hold (those out of the table go with their last
 * child), then the table's. */
void ws_inode_close(void)
{
	ws_inode_lock();
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
			ws_inval_unwatch(in);
			in->intab = in->pinned = false;
			in->nlookup = 0;
			in->uses = in->refs = 0;
			ws_inode_maybe_free(in);
		}
	}
	free(tab.bucket);
	tab.bucket = NULL;
	tab.nbucket = tab.count = 0;
	tab.multi = NULL;
	ws_budget_stop();
	root = NULL;
	ws_inode_unlock();
}

struct ws_inode *ws_inode_root(void)
{
	return root;
}
