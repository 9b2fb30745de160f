/* One file's data, extended attributes and metadata (see filecopy.h). */
#include "filecopy.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "xmalloc.h"

/* A buffer for the read and write a copy falls back on, where copy_file_range cannot go
 * (between filesystems of different kinds). */
#define COPY_CHUNK (1 << 20)
/* An attribute list and value: the kernel's own bounds (XATTR_LIST_MAX, XATTR_SIZE_MAX). */
#define XLIST_MAX  (64 << 10)
#define XVALUE_MAX (64 << 10)

/* Writes len bytes of src at off into dst at the same offset: how many it wrote (fewer if src
 * shrank meanwhile), or -errno. */
static int64_t copy_range(int src, int dst, off_t off, off_t len)
{
	char *buf = NULL;
	int64_t done = 0;
	int rc = 0;

	while (len > 0) {
		loff_t in = off, out = off;
		ssize_t n = buf ? -1 : copy_file_range(src, &in, dst, &out, (size_t)len, 0);

		if (n < 0 && !buf &&
		    (errno == EXDEV || errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
			buf = xmalloc(COPY_CHUNK);
			continue;
		}
		if (buf) {
			n = pread(src, buf, len < COPY_CHUNK ? (size_t)len : COPY_CHUNK, off);
			if (n > 0 && pwrite(dst, buf, (size_t)n, off) != n)
				n = -1;
		}
		if (n < 0) {
			rc = errno == 0 ? -EIO : -errno;
			break;
		}
		if (n == 0) /* the file shrank under us: what is left reads as a hole */
			break;
		off += n;
		len -= n;
		done += n;
	}
	free(buf);
	return rc < 0 ? rc : done;
}

int64_t filecopy_data(int src, int dst, off_t size, bool *clone)
{
	int64_t written = 0, n;
	off_t data = 0, hole, end = 0;

	if (*clone) {
		if (ioctl(dst, FICLONE, src) == 0)
			return 0;
		if (errno != EXDEV && errno != EOPNOTSUPP && errno != EINVAL && errno != ENOTTY &&
		    errno != EPERM)
			return -errno;
		*clone = false;
	}
	while (data < size) {
		data = lseek(src, data, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO) /* nothing but a hole from here */
				break;
			return -errno;
		}
		hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > size)
			hole = size;
		if ((n = copy_range(src, dst, data, hole - data)) < 0)
			return n;
		written += n;
		end = data + n;
		data = hole;
	}
	/* A hole at the end is no data: only the size makes it. */
	return end < size && ftruncate(dst, size) < 0 ? -errno : written;
}

static bool kept_xattr(const char *name)
{
	return strncmp(name, "user.", 5) == 0 || strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* The names of fd's attributes, NUL-separated, in *list (caller frees; NULL for none): their
 * length. Most files have none: asked for their size first, they cost no buffer. */
static ssize_t names_of(int fd, char **list)
{
	ssize_t n = flistxattr(fd, NULL, 0);

	*list = NULL;
	if (n < 0 && (errno == ENOTSUP || errno == ENODATA))
		return 0;
	if (n <= 0)
		return n < 0 ? -errno : 0;
	*list = xmalloc(XLIST_MAX);
	n = flistxattr(fd, *list, XLIST_MAX);
	return n < 0 ? -errno : n;
}

static bool has_name(const char *list, ssize_t len, const char *name)
{
	for (const char *p = list; p < list + len; p += strlen(p) + 1)
		if (strcmp(p, name) == 0)
			return true;
	return false;
}

int filecopy_xattrs(int src, int dst, bool prune)
{
	char *slist, *dlist = NULL, *val = NULL;
	ssize_t slen = names_of(src, &slist), dlen = 0;
	int rc = slen < 0 ? (int)slen : 0;
	bool lost = false;

	if (rc == 0 && prune && (dlen = names_of(dst, &dlist)) < 0)
		rc = (int)dlen;
	for (const char *p = dlist; rc == 0 && p && p < dlist + dlen; p += strlen(p) + 1)
		if (kept_xattr(p) && !has_name(slist, slen, p) && fremovexattr(dst, p) < 0 &&
		    errno != ENODATA)
			rc = -errno;
	if (slen > 0)
		val = xmalloc(XVALUE_MAX);
	for (const char *p = slist; rc == 0 && p < slist + (slen > 0 ? slen : 0);
	     p += strlen(p) + 1) {
		ssize_t n;

		if (!kept_xattr(p))
			continue;
		n = fgetxattr(src, p, val, XVALUE_MAX);
		if (n < 0) {
			if (errno != ENODATA) /* ENODATA: removed meanwhile */
				rc = -errno;
			continue;
		}
		if (fsetxattr(dst, p, val, (size_t)n, 0) == 0)
			continue;
		if (errno == EOPNOTSUPP)
			lost = true;
		else
			rc = -errno;
	}
	free(val);
	free(slist);
	free(dlist);
	return rc < 0 ? rc : lost ? -EOPNOTSUPP : 0;
}

int filecopy_meta(int fd, const struct stat *st, bool strip_setid)
{
	mode_t mode = st->st_mode & 07777;
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (strip_setid && !S_ISDIR(st->st_mode))
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
	/* The owner first: a chown clears the set-id bits the chmod then sets. */
	if (fchown(fd, st->st_uid, st->st_gid) < 0 || fchmod(fd, mode) < 0 || futimens(fd, ts) < 0)
		return -errno;
	return 0;
}
