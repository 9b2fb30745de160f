/* The handover's table of watched directories, by watch descriptor (see handover_priv.h).
 * Each is kept by file handle where the daemon may open handles, so that watching a tree of
 * any size costs no descriptors (the control plane and the FUSE workspace need them) and a
 * removed directory's watch goes with it (IN_IGNORED). Otherwise by O_PATH descriptor, within a
 * share of the open file limit; a directory past it is not recorded, and handover.c falls back
 * to walking the workspace. */
#include "handover_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xmalloc.h"

#define GC_MIN 1024 /* directories kept by descriptor before the first sweep */

struct dir {
	int wd;
	int fd;			/* O_PATH, or -1 when fh names it */
	struct file_handle *fh; /* NULL when fd holds it */
	struct dir *next;
};

static struct dir **buckets;
static size_t nbuckets, ndirs, nfds, fd_share, gc_at = GC_MIN;
static bool by_handle;
static int mount_fd = -1;
/* The directory handover_dirs_fd opened last: events come in runs for one directory. */
static int cached_wd = -1, cached_fd = -1;

static struct file_handle *handle_of(int fd)
{
	struct file_handle *fh = xmalloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id;

	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) < 0) {
		free(fh);
		return NULL;
	}
	return xrealloc(fh, sizeof(*fh) + fh->handle_bytes);
}

void handover_dirs_init(int root_fd)
{
	struct file_handle *fh = handle_of(root_fd);
	struct rlimit rl;
	int fd = -1;

	mount_fd = root_fd;
	if (fh)
		fd = open_by_handle_at(root_fd, fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	by_handle = fd >= 0;
	if (fd >= 0)
		close(fd);
	free(fh);
	fd_share = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur / 4 : 256;
	nbuckets = 1024;
	buckets = xcalloc(nbuckets, sizeof(*buckets));
}

static struct dir **bucket(int wd)
{
	return &buckets[(unsigned)wd & (nbuckets - 1)];
}

static struct dir *find(int wd)
{
	struct dir *d;

	for (d = *bucket(wd); d; d = d->next)
		if (d->wd == wd)
			return d;
	return NULL;
}

bool handover_dirs_has(int wd)
{
	return find(wd) != NULL;
}

static void grow(void)
{
	struct dir **old = buckets, *x;
	size_t n = nbuckets;

	nbuckets *= 2;
	buckets = xcalloc(nbuckets, sizeof(*buckets));
	for (size_t i = 0; i < n; i++)
		while ((x = old[i])) {
			old[i] = x->next;
			x->next = *bucket(x->wd);
			*bucket(x->wd) = x;
		}
	free(old);
}

int handover_dirs_add(int wd, int fd)
{
	struct file_handle *fh = by_handle ? handle_of(fd) : NULL;
	struct dir *d;
	int kept = -1;

	if (!fh) {
		if (nfds >= fd_share)
			return -EMFILE;
		if ((kept = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
			return -errno;
		nfds++;
	}
	if (ndirs >= nbuckets)
		grow();
	d = xmalloc(sizeof(*d));
	d->wd = wd;
	d->fd = kept;
	d->fh = fh;
	d->next = *bucket(wd);
	*bucket(wd) = d;
	ndirs++;
	return 0;
}

int handover_dirs_fd(int wd)
{
	struct dir *d = find(wd);

	if (!d)
		return -1;
	if (d->fd >= 0)
		return d->fd;
	if (cached_wd == wd)
		return cached_fd;
	if (cached_fd >= 0)
		close(cached_fd);
	cached_fd = open_by_handle_at(mount_fd, d->fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cached_wd = cached_fd >= 0 ? wd : -1;
	return cached_fd;
}

static void unlink_dir(struct dir **p)
{
	struct dir *d = *p;

	*p = d->next;
	if (d->fd >= 0) {
		close(d->fd);
		nfds--;
	}
	if (cached_wd == d->wd) {
		close(cached_fd);
		cached_wd = cached_fd = -1;
	}
	free(d->fh);
	free(d);
	ndirs--;
}

void handover_dirs_drop(int wd)
{
	struct dir **p;

	for (p = bucket(wd); *p; p = &(*p)->next)
		if ((*p)->wd == wd) {
			unlink_dir(p);
			return;
		}
}

void handover_dirs_sweep(int ifd)
{
	struct stat st;
	struct dir **p;

	if (nfds < gc_at)
		return;
	for (size_t i = 0; i < nbuckets; i++)
		for (p = &buckets[i]; *p;) {
			if ((*p)->fd < 0 || (fstat((*p)->fd, &st) == 0 && st.st_nlink > 0)) {
				p = &(*p)->next;
				continue;
			}
			inotify_rm_watch(ifd, (*p)->wd); /* its IN_IGNORED finds nothing */
			unlink_dir(p);
		}
	gc_at = nfds * 2 > GC_MIN ? nfds * 2 : GC_MIN;
}

void handover_dirs_clear(void)
{
	for (size_t i = 0; i < nbuckets; i++)
		while (buckets[i])
			unlink_dir(&buckets[i]);
	if (cached_fd >= 0)
		close(cached_fd);
	cached_wd = cached_fd = -1;
	free(buckets);
	buckets = NULL;
	nbuckets = ndirs = nfds = 0;
	gc_at = GC_MIN;
	mount_fd = -1;
}
