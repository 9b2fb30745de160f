/* Making one tree equal to another (see treesync.h): both directories read whole and merged by
 * name; what the destination has alone is removed, what differs is made aside and renamed
 * over, hard links of the source are linked again in the destination, and a directory gets its
 * attributes once its entries are done (their changes move its mtime). */
#include "treesync.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "filecopy.h"
#include "inomap.h"
#include "samemount.h"
#include "xmalloc.h"

struct walk {
	struct tree_sync *ts;
	struct inomap links; /* source files with several names: the first name made */
	int dst_root;
	unsigned tmpn;
};

static void add(uint64_t *counter, uint64_t n)
{
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

static bool cancelled(const bool *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory dir, sorted; caller frees. */
static int read_names(int dir, char ***names, size_t *n)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t cap = 16;
	struct dirent *de;

	if (!d) {
		int rc = -errno;

		if (fd >= 0)
			close(fd);
		return rc;
	}
	*names = xmalloc(cap * sizeof(char *));
	*n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap)
			*names = xrealloc(*names, (cap *= 2) * sizeof(char *));
		(*names)[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	qsort(*names, *n, sizeof(char *), cmp_name);
	return 0;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* A directory of the tree, never a mount nested in it (EXDEV) nor a link. */
static int open_dir(int dir, const char *name)
{
	int fd = open_here(dir, name, O_RDONLY | O_DIRECTORY);

	return fd < 0 ? -errno : fd;
}

int tree_remove(int dir, const char *name)
{
	char **names;
	struct stat st;
	size_t n;
	int fd, rc;

	if (lstat_here(dir, name, &st) < 0 && errno == EXDEV)
		return 0; /* a mount nested in the tree: not ours to remove */
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -errno;
	if ((fd = open_dir(dir, name)) < 0)
		return fd;
	if ((rc = read_names(fd, &names, &n)) == 0) {
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = tree_remove(fd, names[i]);
		free_names(names, n);
	}
	close(fd);
	if (rc == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

static int measure_dir(int dir, uint64_t *bytes, uint64_t *entries, const bool *cancel)
{
	char **names;
	size_t n;
	int rc = read_names(dir, &names, &n);

	if (rc < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct stat st;
		int sub;

		if (cancelled(cancel))
			rc = -ECANCELED;
		else if (lstat_here(dir, names[i], &st) < 0)
			rc = errno == ENOENT || errno == EXDEV ? 0 : -errno;
		else if (++*entries, S_ISREG(st.st_mode))
			*bytes += (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size
				      ? (uint64_t)st.st_blocks * 512
				      : (uint64_t)st.st_size;
		else if (S_ISDIR(st.st_mode) && (sub = open_dir(dir, names[i])) >= 0) {
			rc = measure_dir(sub, bytes, entries, cancel);
			close(sub);
		}
	}
	free_names(names, n);
	return rc;
}

int tree_measure(int src, uint64_t *bytes, uint64_t *entries, const bool *cancel)
{
	*bytes = *entries = 0;
	return measure_dir(src, bytes, entries, cancel);
}

/* A name of our own in dir to make an entry under before it is renamed over its real name. */
static void temp_name(struct walk *w, char *buf, size_t len)
{
	snprintf(buf, len, ".sbxfs-tmp-%u", w->tmpn++);
}

static int64_t ns_of(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* How far behind the clock read here the kernel's stamp of a ctime may be: a tick (it stamps
 * from a coarse clock) on a filesystem that keeps nanoseconds, 2 s on one that keeps whole
 * seconds (ext4 with small inodes) or two (FAT), told by a ctime with no nanoseconds. */
static int64_t grain_ns(struct timespec ctime)
{
	return ctime.tv_nsec ? 20000000ll : 2000000000ll;
}

/* Whether a file whose ctime is c cannot have changed since time t without a new ctime. */
static bool settled(struct timespec c, int64_t t)
{
	return ns_of(c) < t - grain_ns(c);
}

/* Whether the destination's entry ds may be left as it is for the source's ss. */
static bool kept(const struct tree_sync *ts, const struct stat *ss, const struct stat *ds)
{
	const struct stat *t = ts->trust == TRUST_SRC ? ss : ds;
	struct inomap_slot *young;

	if (ts->trust == TRUST_NONE)
		return false;
	if (ts->dirty && inomap_get(ts->dirty, ss->st_dev, ss->st_ino))
		return false;
	if (ss->st_size != ds->st_size || ss->st_mtim.tv_sec != ds->st_mtim.tv_sec ||
	    ss->st_mtim.tv_nsec != ds->st_mtim.tv_nsec)
		return false;
	if (ts->trust == TRUST_DST)
		return settled(t->st_ctim, ns_of(ts->trust_before)) &&
		       (ss->st_mode & 07777) == (ds->st_mode & 07777) && ss->st_uid == ds->st_uid &&
		       ss->st_gid == ds->st_gid;
	if (settled(t->st_ctim, ns_of(ts->trust_before)))
		return true;
	young = ts->young ? inomap_get(ts->young, ss->st_dev, ss->st_ino) : NULL;
	return young && young->value == (uint64_t)ns_of(ss->st_ctim) &&
	       settled(ss->st_ctim, (int64_t)young->aux);
}

/* A first pass's copy of a file too recent to vouch for itself: its ctime, and when it was
 * read (read_at, before the copy read the data). */
static void note_young(struct tree_sync *ts, const struct stat *ss, int64_t read_at)
{
	struct inomap_slot *s;

	if (!ts->young || ts->trust != TRUST_NONE || settled(ss->st_ctim, ns_of(ts->trust_before)))
		return;
	s = inomap_put(ts->young, ss->st_dev, ss->st_ino);
	s->value = (uint64_t)ns_of(ss->st_ctim);
	s->aux = (uint64_t)read_at;
}

/* The later names of a file with several: a link to the first one made (found again beneath
 * the destination's root without following a link, and checked to be that inode). */
static int link_again(struct walk *w, const struct inomap_slot *first, int ddir, const char *name)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, w->dst_root, first->path, &how, sizeof(how)), rc = 0;
	char proc[64], tmp[32];
	struct stat st;

	if (fd < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	temp_name(w, tmp, sizeof(tmp));
	if (fstat(fd, &st) < 0 || st.st_ino != first->value)
		rc = errno ? -errno : -ESTALE;
	else if (linkat(AT_FDCWD, proc, ddir, tmp, AT_SYMLINK_FOLLOW) < 0)
		rc = -errno;
	else if (renameat(ddir, tmp, ddir, name) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Records the destination's inode for the first name of a source file with several. */
static void note_link(struct walk *w, const struct stat *ss, const char *rel, uint64_t dst_ino)
{
	struct inomap_slot *s;

	if (ss->st_nlink < 2)
		return;
	s = inomap_put(&w->links, ss->st_dev, ss->st_ino);
	free(s->path);
	s->path = xstrdup(rel);
	s->value = dst_ino;
}

/* An open of our own made under a temporary name in ddir: its fd, the name in tmp. */
static int make_temp(struct walk *w, int ddir, char *tmp, size_t len)
{
	for (int tries = 0; tries < 64; tries++) {
		int fd;

		temp_name(w, tmp, len);
		fd = openat(ddir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

/* The bytes of a copy a new one replaces (its name's only file), which the new one's count
 * instead. A reflink counts none. */
static uint64_t replaced_bytes(const struct tree_sync *ts, const struct stat *old)
{
	uint64_t n;

	if (ts->clone || !old || !S_ISREG(old->st_mode) || old->st_nlink != 1)
		return 0;
	n = (uint64_t)old->st_blocks * 512 < (uint64_t)old->st_size ? (uint64_t)old->st_blocks * 512
								    : (uint64_t)old->st_size;
	return n < ts->st.copied ? n : ts->st.copied;
}

/* The source's file name made in ddir: under its name when there was none, else aside and
 * renamed over old, the one there (a tree being made, or one the sandbox cannot see while it
 * is frozen, may show a file being written under its name). */
static int copy_file(struct walk *w, int sdir, int ddir, const char *name, const char *rel,
		     const struct stat *old)
{
	struct tree_sync *ts = w->ts;
	uint64_t replaced = replaced_bytes(ts, old);
	int src = open_here(sdir, name, O_RDONLY), dst = -1, rc = 0;
	struct timespec read_at;
	char tmp[32];
	struct stat ss, ds;
	int64_t n;

	if (src < 0) /* gone meanwhile (the next pass sees it), or a mount now */
		return errno == ENOENT || errno == EXDEV || errno == ELOOP ? 0 : -errno;
	clock_gettime(CLOCK_REALTIME, &read_at);
	if (fstat(src, &ss) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(ss.st_mode)) /* replaced meanwhile: the next pass sees it */
		goto out;
	if (!ts->clone && ts->st.copied - replaced + (uint64_t)ss.st_blocks * 512 > ts->copy_max) {
		rc = -ENOSPC;
		goto out;
	}
	if (!old) {
		dst =
		    openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (dst < 0)
			dst = -errno;
	} else {
		dst = make_temp(w, ddir, tmp, sizeof(tmp));
	}
	if (dst < 0) {
		rc = dst;
		goto out;
	}
	n = filecopy_data(src, dst, ss.st_size, &ts->clone);
	if (n < 0)
		rc = (int)n;
	else if ((rc = filecopy_xattrs(src, dst, false)) == -EOPNOTSUPP)
		rc = 0, add(&ts->st.xattr_lost, 1);
	if (rc == 0)
		rc = filecopy_meta(dst, &ss, ts->strip_setid);
	if (rc == 0 && (fstat(dst, &ds) < 0 || (old && renameat(ddir, tmp, ddir, name) < 0)))
		rc = -errno;
	if (rc < 0) {
		unlinkat(ddir, old ? tmp : name, 0);
		goto out;
	}
	note_link(w, &ss, rel, ds.st_ino);
	note_young(ts, &ss, ns_of(read_at));
	__atomic_store_n(&ts->st.copied, ts->st.copied - replaced + (uint64_t)n, __ATOMIC_RELAXED);
	if (ts->st.copied > ts->copy_max)
		rc = -ENOSPC;
out:
	if (dst >= 0)
		close(dst);
	close(src);
	return rc;
}

static int sync_file(struct walk *w, int sdir, int ddir, const char *name, const char *rel,
		     const struct stat *ss, const struct stat *ds)
{
	struct inomap_slot *first =
	    ss->st_nlink > 1 ? inomap_get(&w->links, ss->st_dev, ss->st_ino) : NULL;

	add(&w->ts->st.bytes, (uint64_t)ss->st_size);
	if (first)
		return ds && ds->st_ino == first->value ? 0 : link_again(w, first, ddir, name);
	if (ds && kept(w->ts, ss, ds)) {
		note_link(w, ss, rel, ds->st_ino);
		return 0;
	}
	return copy_file(w, sdir, ddir, name, rel, ds);
}

static int sync_link(struct walk *w, int sdir, int ddir, const char *name, const struct stat *ss,
		     const struct stat *ds)
{
	char target[PATH_MAX + 1], had[PATH_MAX + 1], tmp[32];
	struct timespec ts[2] = {ss->st_atim, ss->st_mtim};
	ssize_t n = readlinkat(sdir, name, target, PATH_MAX), m;

	/* Gone, or no link any more (EINVAL), since it was looked at: the next pass (frozen, in a
	 * snapshot) copies what is there then. */
	if (n < 0)
		return errno == ENOENT || errno == EINVAL ? 0 : -errno;
	target[n] = '\0';
	m = ds ? readlinkat(ddir, name, had, PATH_MAX) : -1;
	if (m == n && memcmp(had, target, (size_t)n) == 0 && ds->st_uid == ss->st_uid &&
	    ds->st_gid == ss->st_gid && ds->st_mtim.tv_sec == ss->st_mtim.tv_sec &&
	    ds->st_mtim.tv_nsec == ss->st_mtim.tv_nsec)
		return 0;
	temp_name(w, tmp, sizeof(tmp));
	if (symlinkat(target, ddir, tmp) < 0)
		return -errno;
	if (fchownat(ddir, tmp, ss->st_uid, ss->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    utimensat(ddir, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0 ||
	    renameat(ddir, tmp, ddir, name) < 0) {
		int rc = -errno;

		unlinkat(ddir, tmp, 0);
		return rc;
	}
	return 0;
}

static int sync_dir(struct walk *w, int src, int dst, char *rel, size_t rlen);

/* A directory's entries, then its attributes. */
static int sync_subdir(struct walk *w, int sdir, int ddir, const char *name, char *rel, size_t rlen,
		       const struct stat *ds)
{
	int src, dst, rc;
	struct stat ss;

	if (!ds && mkdirat(ddir, name, 0700) < 0)
		return -errno;
	/* Gone, no directory or a link now, or a mount: left to the next pass, as in sync_link. */
	if ((src = open_dir(sdir, name)) < 0)
		return src == -ENOENT || src == -ENOTDIR || src == -ELOOP || src == -EXDEV ? 0
											   : src;
	if ((dst = open_dir(ddir, name)) < 0) {
		close(src);
		return dst;
	}
	rc = sync_dir(w, src, dst, rel, rlen);
	if (rc == 0 && (rc = filecopy_xattrs(src, dst, true)) == -EOPNOTSUPP)
		rc = 0, add(&w->ts->st.xattr_lost, 1);
	if (rc == 0)
		rc = fstat(src, &ss) < 0 ? -errno : filecopy_meta(dst, &ss, false);
	close(src);
	close(dst);
	return rc;
}

static int sync_entry(struct walk *w, int sdir, int ddir, const char *name, char *rel, size_t rlen)
{
	struct stat ss, dst_st, *ds = &dst_st;
	size_t len = strlen(name);
	bool gone = false;
	int rc;

	if (cancelled(w->ts->cancel))
		return -ECANCELED;
	if (lstat_here(ddir, name, ds) < 0) {
		if (errno == EXDEV)
			return 0; /* a mount nested in the destination stays as it is */
		ds = NULL;
	}
	if (lstat_here(sdir, name, &ss) < 0) {
		if (errno != ENOENT && errno != EXDEV)
			return -errno;
		/* removed meanwhile, so is the destination's; a mount nested in the source is
		 * neither entered nor copied, as a special file is not */
		gone = errno == ENOENT;
		ss.st_mode = 0;
	}
	if (gone || !(S_ISREG(ss.st_mode) || S_ISDIR(ss.st_mode) || S_ISLNK(ss.st_mode))) {
		if (!gone)
			add(&w->ts->st.special, 1);
		return ds ? tree_remove(ddir, name) : 0;
	}
	if (ds && (ds->st_mode & S_IFMT) != (ss.st_mode & S_IFMT)) {
		if ((rc = tree_remove(ddir, name)) < 0)
			return rc;
		ds = NULL;
	}
	if (rlen + len + 2 > PATH_MAX)
		return -ENAMETOOLONG;
	if (rlen)
		rel[rlen++] = '/';
	memcpy(rel + rlen, name, len + 1);
	add(&w->ts->st.files, 1);
	if (w->ts->files_max && w->ts->st.files > w->ts->files_max)
		return -ENOSPC;
	if (S_ISDIR(ss.st_mode))
		return sync_subdir(w, sdir, ddir, name, rel, rlen + len, ds);
	if (S_ISLNK(ss.st_mode))
		return sync_link(w, sdir, ddir, name, &ss, ds);
	return sync_file(w, sdir, ddir, name, rel, &ss, ds);
}

/* Both listings merged by name: the destination's own names go, the source's are synced. */
static int sync_dir(struct walk *w, int src, int dst, char *rel, size_t rlen)
{
	char **sn = NULL, **dn = NULL;
	size_t ns = 0, nd = 0, i = 0, j = 0;
	int rc = read_names(src, &sn, &ns);

	if (rc == 0 && (rc = read_names(dst, &dn, &nd)) < 0)
		free_names(sn, ns), sn = NULL, ns = 0;
	while (rc == 0 && (i < ns || j < nd)) {
		int c = i == ns ? 1 : j == nd ? -1 : strcmp(sn[i], dn[j]);

		if (c > 0) {
			rc = tree_remove(dst, dn[j++]);
			continue;
		}
		rc = sync_entry(w, src, dst, sn[i++], rel, rlen);
		rel[rlen] = '\0';
		if (c == 0)
			j++;
	}
	if (sn)
		free_names(sn, ns);
	if (dn)
		free_names(dn, nd);
	return rc;
}

int tree_sync(int src, int dst, struct tree_sync *ts)
{
	struct walk w = {.ts = ts, .dst_root = dst};
	char rel[PATH_MAX] = "";
	struct stat ss;
	int rc;

	inomap_init(&w.links);
	rc = sync_dir(&w, src, dst, rel, 0);
	if (rc == 0 && (rc = filecopy_xattrs(src, dst, true)) == -EOPNOTSUPP)
		rc = 0, add(&ts->st.xattr_lost, 1);
	if (rc == 0)
		rc = fstat(src, &ss) < 0 ? -errno : filecopy_meta(dst, &ss, false);
	inomap_clear(&w.links);
	return rc;
}
