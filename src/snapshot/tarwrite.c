/* A tree as a tar stream, made as it is read (see tarwrite.h). Every entry is "./PATH" as
 * `tar -C DIR -c .` names it, with a pax header first for what ustar cannot hold: names past
 * 100 bytes, sizes past 8 GiB, an mtime's nanoseconds, extended attributes. Owners are left
 * out (0): who extracts an archive owns its files. A file with several names is stored once,
 * its other names as hard links to the first. */
#include "tarwrite.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "inomap.h"
#include "tarfmt.h"
#include "samemount.h"
#include "xmalloc.h"

#define XLIST_MAX  (64 << 10)
#define XVALUE_MAX (64 << 10)
/* Octal fields: the largest size an 11-digit field holds. */
#define USTAR_SIZE_MAX 077777777777ull

struct frame {
	int fd;
	char **names;
	size_t n, i;
	size_t pathlen; /* of the directory's "./PATH/" in the writer's path */
};

struct tar_writer {
	struct frame *stack;
	size_t depth, cap;
	char path[PATH_MAX + 2];
	char *pend; /* headers made and not read yet */
	size_t plen, poff;
	int file;	    /* the file whose data is being read, or -1 */
	uint64_t left, pad; /* its bytes still to read, then the zeros to its block's end */
	struct inomap links;
	bool rooted, ended;
	int err; /* the first failure: every read after it fails the same */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(struct tar_writer *w, int fd, size_t pathlen)
{
	int lfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	struct frame *f;
	struct dirent *de;
	size_t cap = 16;

	if (!d) {
		if (lfd >= 0)
			close(lfd);
		close(fd);
		return -errno;
	}
	if (w->depth == w->cap)
		w->stack = xrealloc(w->stack, (w->cap = w->cap * 2 + 8) * sizeof(*w->stack));
	f = &w->stack[w->depth++];
	*f = (struct frame){fd, xmalloc(cap * sizeof(char *)), 0, 0, pathlen};
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (f->n == cap)
			f->names = xrealloc(f->names, (cap *= 2) * sizeof(char *));
		f->names[f->n++] = xstrdup(de->d_name);
	}
	closedir(d);
	qsort(f->names, f->n, sizeof(char *), cmp_name);
	return 0;
}

static void pop(struct tar_writer *w)
{
	struct frame *f = &w->stack[--w->depth];

	close(f->fd);
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
}

struct tar_writer *tarw_new(int tree)
{
	struct tar_writer *w = xcalloc(1, sizeof(*w));

	w->file = -1;
	inomap_init(&w->links);
	strcpy(w->path, "./");
	w->err = push(w, tree, 2);
	return w;
}

void tarw_free(struct tar_writer *w)
{
	while (w->depth)
		pop(w);
	free(w->stack);
	if (w->file >= 0)
		close(w->file);
	free(w->pend);
	inomap_clear(&w->links);
	free(w);
}

/* Appends len bytes to what is pending. */
static void put(struct tar_writer *w, const void *p, size_t len)
{
	w->pend = xrealloc(w->pend, w->plen + len);
	memcpy(w->pend + w->plen, p, len);
	w->plen += len;
}

static void octal(char *field, size_t width, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%0*llo", (int)width - 1, (unsigned long long)v);
	memcpy(field, buf, width - 1);
}

/* One pax record, "LEN KEY=VALUE\n", LEN counting itself. */
static void pax_record(char **rec, size_t *len, const char *key, const char *val, size_t vlen)
{
	size_t body = strlen(key) + vlen + 3, n = body + 1, digits;

	for (;;) { /* LEN's digits are part of LEN */
		digits = (size_t)snprintf(NULL, 0, "%zu", n);
		if (body + digits == n)
			break;
		n = body + digits;
	}
	*rec = xrealloc(*rec, *len + n + 1);
	*len += (size_t)sprintf(*rec + *len, "%zu %s=", n, key);
	memcpy(*rec + *len, val, vlen);
	*len += vlen;
	(*rec)[(*len)++] = '\n';
}

static void header(struct tar_writer *w, char type, const char *name, mode_t mode, uint64_t size,
		   time_t mtime, const char *link)
{
	struct tar_header h;
	unsigned sum = 0;

	memset(&h, 0, sizeof(h));
	snprintf(h.name, sizeof(h.name), "%s", name); /* a longer one is in the pax header */
	octal(h.mode, sizeof(h.mode), mode & 07777);
	octal(h.uid, sizeof(h.uid), 0);
	octal(h.gid, sizeof(h.gid), 0);
	octal(h.size, sizeof(h.size), size > USTAR_SIZE_MAX ? 0 : size);
	octal(h.mtime, sizeof(h.mtime), mtime < 0 ? 0 : (uint64_t)mtime & 077777777777ull);
	h.typeflag = type;
	if (link)
		memcpy(h.linkname, link,
		       strlen(link) < sizeof(h.linkname) ? strlen(link) : sizeof(h.linkname));
	memcpy(h.magic, "ustar", 6);
	memcpy(h.version, "00", 2);
	memset(h.chksum, ' ', sizeof(h.chksum));
	for (size_t i = 0; i < sizeof(h); i++)
		sum += ((unsigned char *)&h)[i];
	snprintf(h.chksum, sizeof(h.chksum), "%06o", sum);
	put(w, &h, sizeof(h));
}

/* The extended attributes copies keep, as pax records. */
static void xattr_records(int fd, char **rec, size_t *len)
{
	char *list, *val, key[300];
	ssize_t n = flistxattr(fd, NULL, 0);

	if (n <= 0) /* none (most files), or none that can be read */
		return;
	list = xmalloc(XLIST_MAX);
	val = xmalloc(XVALUE_MAX);
	n = flistxattr(fd, list, XLIST_MAX);

	for (const char *p = list; n > 0 && p < list + n; p += strlen(p) + 1) {
		ssize_t v;

		if (strncmp(p, "user.", 5) || (v = fgetxattr(fd, p, val, XVALUE_MAX)) < 0)
			continue;
		snprintf(key, sizeof(key), TAR_XATTR_KEY "%s", p);
		pax_record(rec, len, key, val, (size_t)v);
	}
	free(list);
	free(val);
}

/* An entry's headers: pax first when ustar cannot hold it all. fd: the file or directory
 * (for its attributes), or -1. */
static void entry(struct tar_writer *w, char type, const struct stat *st, uint64_t size,
		  const char *link, int fd)
{
	char *rec = NULL, num[48];
	size_t len = 0;

	if (strlen(w->path) >= 100)
		pax_record(&rec, &len, "path", w->path, strlen(w->path));
	if (link && strlen(link) >= 100)
		pax_record(&rec, &len, "linkpath", link, strlen(link));
	if (size > USTAR_SIZE_MAX) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)size);
		pax_record(&rec, &len, "size", num, strlen(num));
	}
	if (st->st_mtim.tv_nsec || st->st_mtim.tv_sec < 0 || st->st_mtim.tv_sec > 077777777777ll) {
		snprintf(num, sizeof(num), "%lld.%09ld", (long long)st->st_mtim.tv_sec,
			 st->st_mtim.tv_nsec);
		pax_record(&rec, &len, "mtime", num, strlen(num));
	}
	if (fd >= 0)
		xattr_records(fd, &rec, &len);
	if (len) {
		char name[100];
		static const char zeros[TAR_BLOCK];

		snprintf(name, sizeof(name), "./PaxHeaders/%.80s", strrchr(w->path, '/') + 1);
		header(w, TAR_PAX, name, 0644, len, st->st_mtim.tv_sec, NULL);
		put(w, rec, len);
		put(w, zeros, (TAR_BLOCK - len % TAR_BLOCK) % TAR_BLOCK);
	}
	free(rec);
	header(w, type, w->path, st->st_mode, size, st->st_mtim.tv_sec, link);
}

/* The next entry's headers (and its file opened, for a regular file): 0, or -errno. */
static int next_entry(struct tar_writer *w)
{
	struct frame *f = &w->stack[w->depth - 1];
	const char *name = f->names[f->i++];
	size_t nlen = strlen(name);
	char target[PATH_MAX + 1];
	struct inomap_slot *first;
	struct stat st;
	ssize_t n;
	int fd;

	if (f->pathlen + nlen + 2 > sizeof(w->path))
		return -ENAMETOOLONG;
	memcpy(w->path + f->pathlen, name, nlen + 1);
	if (lstat_here(f->fd, name, &st) < 0)
		return errno == EXDEV ? 0 : -errno; /* a mount nested in the tree is not archived */
	if (S_ISDIR(st.st_mode)) {
		if ((fd = open_here(f->fd, name, O_RDONLY | O_DIRECTORY)) < 0)
			return -errno;
		strcpy(w->path + f->pathlen + nlen, "/");
		entry(w, TAR_DIR, &st, 0, NULL, fd);
		return push(w, fd, f->pathlen + nlen + 1);
	}
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(f->fd, name, target, PATH_MAX)) < 0)
			return -errno;
		target[n] = '\0';
		entry(w, TAR_SYMLINK, &st, 0, target, -1);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) /* snapshots hold none */
		return 0;
	if (st.st_nlink > 1 && (first = inomap_get(&w->links, st.st_dev, st.st_ino))) {
		entry(w, TAR_LINK, &st, 0, first->path, -1);
		return 0;
	}
	if ((fd = open_here(f->fd, name, O_RDONLY)) < 0)
		return -errno;
	if (st.st_nlink > 1)
		inomap_put(&w->links, st.st_dev, st.st_ino)->path = xstrdup(w->path);
	entry(w, TAR_REG, &st, (uint64_t)st.st_size, NULL, fd);
	w->file = fd;
	w->left = (uint64_t)st.st_size;
	w->pad = (TAR_BLOCK - w->left % TAR_BLOCK) % TAR_BLOCK;
	return 0;
}

/* Makes more pending bytes, or opens the next file: 0, or -errno. */
static int advance(struct tar_writer *w)
{
	static const char zeros[2 * TAR_BLOCK];
	struct stat st;

	if (!w->rooted) { /* the tree itself, "./", for its attributes */
		w->rooted = true;
		if (fstat(w->stack[0].fd, &st) < 0)
			return -errno;
		entry(w, TAR_DIR, &st, 0, NULL, w->stack[0].fd);
		return 0;
	}
	while (w->depth && w->stack[w->depth - 1].i == w->stack[w->depth - 1].n)
		pop(w);
	if (w->depth)
		return next_entry(w);
	put(w, zeros, sizeof(zeros)); /* the end: two zero blocks */
	w->ended = true;
	return 0;
}

/* Up to size bytes of the open file's data, then of its padding. */
static ssize_t file_bytes(struct tar_writer *w, char *buf, size_t size)
{
	ssize_t n;

	if (w->left) {
		n = read(w->file, buf, w->left < size ? (size_t)w->left : size);
		if (n < 0)
			return -errno;
		if (n == 0) /* shorter than it said: the rest reads as zeros */
			n = (ssize_t)(w->left < size ? w->left : size), memset(buf, 0, (size_t)n);
		w->left -= (uint64_t)n;
		return n;
	}
	n = (ssize_t)(w->pad < size ? w->pad : size);
	memset(buf, 0, (size_t)n);
	w->pad -= (uint64_t)n;
	if (!w->pad) {
		close(w->file);
		w->file = -1;
	}
	return n;
}

ssize_t tarw_read(struct tar_writer *w, char *buf, size_t size)
{
	size_t done = 0;

	while (done < size && !w->err) {
		if (w->poff < w->plen) {
			size_t n =
			    w->plen - w->poff < size - done ? w->plen - w->poff : size - done;

			memcpy(buf + done, w->pend + w->poff, n);
			w->poff += n;
			done += n;
			continue;
		}
		w->plen = w->poff = 0;
		if (w->file >= 0) {
			ssize_t n = file_bytes(w, buf + done, size - done);

			if (n < 0)
				w->err = (int)n;
			else
				done += (size_t)n;
			continue;
		}
		if (w->ended)
			break;
		w->err = advance(w);
	}
	return done || !w->err ? (ssize_t)done : w->err;
}
