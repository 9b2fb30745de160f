/* The tar reader (see tarread.h): a state machine over 512-byte blocks. A header is checked
 * (checksum, ustar magic, numbers) and held with what the pax or GNU long-name entries before
 * it said; then its data goes to the sink as it arrives, and the padding to the block's end is
 * skipped. Two zero blocks end the archive. */
#include "tarread.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tarfmt.h"
#include "xmalloc.h"

/* An extended header's bytes (pax) or a GNU long name, held whole. */
#define EXT_MAX	   (1u << 20)
#define XATTRS_MAX 1024

enum state { S_HEADER, S_EXT, S_DATA, S_PAD, S_END };

struct tar_reader {
	enum state st;
	char block[TAR_BLOCK];
	size_t blen;
	char exttype;
	char *ext;
	size_t extlen;
	uint64_t left, pad;
	bool in_entry; /* the sink has a regular file whose done is due */
	bool data;     /* its data goes to the sink */
	/* What pax and GNU entries said about the next entry. */
	char *path, *link;
	bool has_size, has_mtime;
	uint64_t size;
	struct timespec mtime;
	struct tar_xattr *xattrs;
	size_t nxattrs;
	uint64_t entries, bytes;
	bool zero;
	int err;
	struct tar_limits lim;
	const struct tar_sink *sink;
	void *arg;
};

struct tar_reader *tarr_new(const struct tar_limits *lim, const struct tar_sink *sink, void *arg)
{
	struct tar_reader *r = xcalloc(1, sizeof(*r));

	r->lim = *lim;
	r->sink = sink;
	r->arg = arg;
	return r;
}

static void clear_pending(struct tar_reader *r)
{
	free(r->path);
	free(r->link);
	for (size_t i = 0; i < r->nxattrs; i++) {
		free(r->xattrs[i].name);
		free(r->xattrs[i].value);
	}
	free(r->xattrs);
	r->path = r->link = NULL;
	r->xattrs = NULL;
	r->nxattrs = 0;
	r->has_size = r->has_mtime = false;
}

void tarr_free(struct tar_reader *r)
{
	clear_pending(r);
	free(r->ext);
	free(r);
}

int tar_path_norm(const char *in, size_t len, char **out)
{
	char *o = xmalloc(len + 1);
	size_t olen = 0;

	if (memchr(in, '\0', len) || (len && in[0] == '/') || len > PATH_MAX)
		goto bad;
	for (size_t i = 0; i < len;) {
		size_t n = 0;

		while (i + n < len && in[i + n] != '/')
			n++;
		if (n == 2 && in[i] == '.' && in[i + 1] == '.')
			goto bad;
		if (n && !(n == 1 && in[i] == '.')) {
			if (olen)
				o[olen++] = '/';
			memcpy(o + olen, in + i, n);
			olen += n;
		}
		i += n + 1;
	}
	o[olen] = '\0';
	*out = o;
	return 0;
bad:
	free(o);
	return -EINVAL;
}

int tar_link_ok(const char *path, const char *target)
{
	long depth = 0;

	if (!target[0] || target[0] == '/' || strlen(target) > PATH_MAX)
		return -EINVAL;
	for (const char *p = path; *p; p++) /* the link's directory: a name per '/' */
		depth += *p == '/';
	for (const char *p = target; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (depth-- == 0)
				return -EINVAL;
		} else if (n && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p += n + (p[n] == '/');
	}
	return 0;
}

/* An octal field (NUL or space ended), or GNU's base-256 (first byte's top bit set). */
static int number(const char *f, size_t width, uint64_t *v)
{
	size_t i = 0;

	*v = 0;
	if ((unsigned char)f[0] & 0x80) {
		if ((unsigned char)f[0] != 0x80)
			return -EINVAL; /* negative, or past 64 bits */
		for (i = 1; i < width; i++) {
			if (*v >> 56)
				return -EINVAL;
			*v = *v << 8 | (unsigned char)f[i];
		}
		return 0;
	}
	while (i < width && f[i] == ' ')
		i++;
	for (; i < width && f[i] >= '0' && f[i] <= '7'; i++) {
		if (*v >> 60)
			return -EINVAL;
		*v = *v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < width; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -EINVAL;
	return 0;
}

static bool checksum_ok(const struct tar_header *h)
{
	const unsigned char *b = (const unsigned char *)h;
	uint64_t want;
	unsigned sum = 0;

	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += i >= offsetof(struct tar_header, chksum) &&
			       i < offsetof(struct tar_header, chksum) + sizeof(h->chksum)
			   ? ' '
			   : b[i];
	return number(h->chksum, sizeof(h->chksum), &want) == 0 && want == sum;
}

/* "SECONDS[.FRACTION]" of a pax mtime. */
static int pax_time(const char *v, size_t len, struct timespec *t)
{
	char buf[64], *end;
	long long sec;
	long ns = 0;
	size_t dot;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, len);
	buf[len] = '\0';
	errno = 0;
	sec = strtoll(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '.'))
		return -EINVAL;
	if (*end == '.') {
		dot = (size_t)(end - buf) + 1;
		for (size_t i = dot; buf[i]; i++) {
			if (buf[i] < '0' || buf[i] > '9')
				return -EINVAL;
			if (i - dot < 9)
				ns = ns * 10 + (buf[i] - '0');
		}
		for (size_t i = len - dot; i < 9; i++)
			ns *= 10;
		if (sec < 0 && ns) /* -1.5 is 1.5 s before the epoch */
			sec--, ns = 1000000000 - ns;
	}
	*t = (struct timespec){(time_t)sec, ns};
	return 0;
}

static int pax_size(const char *v, size_t len, uint64_t *size)
{
	*size = 0;
	if (len == 0 || len > 19)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		*size = *size * 10 + (uint64_t)(v[i] - '0');
	}
	return 0;
}

static int pax_keyval(struct tar_reader *r, const char *key, size_t klen, const char *v,
		      size_t vlen)
{
	struct tar_xattr *x;

#define KEY(s) (klen == sizeof(s) - 1 && !memcmp(key, s, klen))
	if (KEY("path") || KEY("linkpath")) {
		char **dst = KEY("path") ? &r->path : &r->link;

		if (memchr(v, '\0', vlen))
			return -EINVAL;
		free(*dst);
		*dst = xstrndup(v, vlen);
		return 0;
	}
	if (KEY("size")) {
		r->has_size = true;
		return pax_size(v, vlen, &r->size);
	}
	if (KEY("mtime")) {
		r->has_mtime = true;
		return pax_time(v, vlen, &r->mtime);
	}
	if (klen >= 11 && !memcmp(key, "GNU.sparse.", 11))
		return -EINVAL; /* a sparse file's map: refused, as sparse entries */
	if (klen > sizeof(TAR_XATTR_KEY "user.") - 1 &&
	    !memcmp(key, TAR_XATTR_KEY "user.", sizeof(TAR_XATTR_KEY "user.") - 1)) {
		if (r->nxattrs == XATTRS_MAX)
			return -EFBIG;
		r->xattrs = xrealloc(r->xattrs, (r->nxattrs + 1) * sizeof(*r->xattrs));
		x = &r->xattrs[r->nxattrs++];
		x->name =
		    xstrndup(key + sizeof(TAR_XATTR_KEY) - 1, klen - sizeof(TAR_XATTR_KEY) + 1);
		x->value = xmemdup(v, vlen ? vlen : 1);
		x->len = vlen;
		return 0;
	}
	return 0; /* uid, gid, atime, charset...: nothing a snapshot keeps */
#undef KEY
}

/* Records "LEN KEY=VALUE\n" of a pax header. */
static int pax_parse(struct tar_reader *r, const char *p, size_t len)
{
	while (len) {
		size_t n = 0, i = 0;
		const char *eq;
		int rc;

		while (i < len && i < 20 && p[i] >= '0' && p[i] <= '9')
			n = n * 10 + (size_t)(p[i++] - '0');
		if (i == 0 || i >= len || p[i] != ' ' || n <= i + 1 || n > len || p[n - 1] != '\n')
			return -EINVAL;
		eq = memchr(p + i + 1, '=', n - i - 2);
		if (!eq || eq == p + i + 1)
			return -EINVAL;
		rc = pax_keyval(r, p + i + 1, (size_t)(eq - p - i - 1), eq + 1,
				(size_t)(p + n - 1 - eq - 1));
		if (rc < 0)
			return rc;
		p += n;
		len -= n;
	}
	return 0;
}

/* The end of an extended entry's data: what it says is kept for the next entry. */
static int ext_done(struct tar_reader *r)
{
	char **dst = r->exttype == TAR_GNU_LONGNAME ? &r->path : &r->link;

	switch (r->exttype) {
	case TAR_PAX:
		return pax_parse(r, r->ext, r->extlen);
	case TAR_GNU_LONGNAME:
	case TAR_GNU_LONGLINK:
		free(*dst);
		*dst = xstrndup(r->ext, strnlen(r->ext, r->extlen));
		return 0;
	default: /* a global pax header: nothing in it applies to a snapshot */
		return 0;
	}
}

/* The header's own path: ustar's prefix and name, or the name alone. */
static char *header_path(const struct tar_header *h)
{
	size_t nlen = strnlen(h->name, sizeof(h->name));
	size_t plen = memcmp(h->magic, "ustar", 6) == 0 ? strnlen(h->prefix, sizeof(h->prefix)) : 0;

	if (!plen)
		return xstrndup(h->name, nlen);
	return xasprintf("%.*s/%.*s", (int)plen, h->prefix, (int)nlen, h->name);
}

/* A header of a file, directory or link: checked, then handed to the sink. */
static int entry(struct tar_reader *r, const struct tar_header *h, uint64_t size)
{
	char type = h->typeflag == TAR_AREG || h->typeflag == TAR_CONTIG ? TAR_REG : h->typeflag;
	char *raw = r->path ? xstrdup(r->path) : header_path(h), *path = NULL, *link = NULL;
	uint64_t mode, mtime;
	struct tar_entry e;
	int rc;

	if (type != TAR_REG && type != TAR_DIR && type != TAR_SYMLINK && type != TAR_LINK)
		rc = -EINVAL; /* devices, FIFOs, sparse files, volumes... */
	else if (++r->entries > r->lim.entries)
		rc = -EFBIG;
	else if (type == TAR_REG && size > r->lim.bytes - r->bytes)
		rc = -ENOSPC;
	else if (number(h->mode, sizeof(h->mode), &mode) < 0 ||
		 number(h->mtime, sizeof(h->mtime), &mtime) < 0)
		rc = -EINVAL;
	else
		rc = tar_path_norm(raw, strlen(raw), &path);
	if (rc == 0 && !path[0] && type != TAR_DIR)
		rc = -EINVAL;
	if (rc == 0 && (type == TAR_SYMLINK || type == TAR_LINK)) {
		link = r->link ? xstrdup(r->link)
			       : xstrndup(h->linkname, strnlen(h->linkname, sizeof(h->linkname)));
		if (type == TAR_SYMLINK) {
			rc = tar_link_ok(path, link);
		} else {
			char *target;

			if ((rc = tar_path_norm(link, strlen(link), &target)) == 0) {
				free(link);
				link = target;
				rc = link[0] ? 0 : -EINVAL;
			}
		}
	}
	if (rc == 0) {
		r->bytes += type == TAR_REG ? size : 0;
		e = (struct tar_entry){type,
				       path,
				       link,
				       (mode_t)(mode & 07777),
				       type == TAR_REG ? size : 0,
				       r->has_mtime ? r->mtime
						    : (struct timespec){(time_t)mtime, 0},
				       r->xattrs,
				       r->nxattrs};
		rc = r->sink->entry(r->arg, &e);
	}
	r->in_entry = r->data = rc == 0 && type == TAR_REG;
	free(raw);
	free(path);
	free(link);
	clear_pending(r);
	return rc;
}

/* The end of an entry's data (or an extended entry's): on to its padding. */
static int end_data(struct tar_reader *r)
{
	int rc = 0;

	if (r->st == S_EXT)
		rc = ext_done(r);
	else if (r->in_entry)
		rc = r->sink->done(r->arg);
	r->in_entry = false;
	r->st = r->pad ? S_PAD : S_HEADER;
	return rc;
}

static int header(struct tar_reader *r)
{
	const struct tar_header *h = (const struct tar_header *)r->block;
	static const char zeros[TAR_BLOCK];
	uint64_t size;
	int rc;

	if (!memcmp(r->block, zeros, TAR_BLOCK)) {
		if (r->zero)
			r->st = S_END;
		r->zero = true;
		return 0;
	}
	if (r->zero || !checksum_ok(h) || memcmp(h->magic, "ustar", 5) ||
	    number(h->size, sizeof(h->size), &size) < 0)
		return -EINVAL;
	if (r->has_size && h->typeflag != TAR_PAX && h->typeflag != TAR_PAX_GLOB)
		size = r->size;
	r->left = size;
	r->pad = (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK;
	switch (h->typeflag) {
	case TAR_PAX:
	case TAR_PAX_GLOB:
	case TAR_GNU_LONGNAME:
	case TAR_GNU_LONGLINK:
		if (size > EXT_MAX)
			return -EFBIG;
		r->exttype = h->typeflag;
		r->ext = xrealloc(r->ext, size + 1);
		r->extlen = 0;
		r->st = S_EXT;
		break;
	default:
		if ((rc = entry(r, h, size)) < 0)
			return rc;
		r->st = S_DATA;
	}
	return r->left ? 0 : end_data(r);
}

/* Takes up to len bytes in the current state: how many, or -errno. */
static ssize_t step(struct tar_reader *r, const char *buf, size_t len)
{
	size_t n;
	int rc = 0;

	switch (r->st) {
	case S_HEADER:
		n = TAR_BLOCK - r->blen < len ? TAR_BLOCK - r->blen : len;
		memcpy(r->block + r->blen, buf, n);
		if ((r->blen += n) == TAR_BLOCK) {
			r->blen = 0;
			rc = header(r);
		}
		return rc < 0 ? rc : (ssize_t)n;
	case S_EXT:
	case S_DATA:
		n = r->left < len ? (size_t)r->left : len;
		if (r->st == S_EXT)
			memcpy(r->ext + r->extlen, buf, n), r->extlen += n;
		else if (n && r->data)
			rc = r->sink->data(r->arg, buf, n);
		r->left -= n;
		if (rc == 0 && r->left == 0)
			rc = end_data(r);
		return rc < 0 ? rc : (ssize_t)n;
	case S_PAD:
		n = r->pad < len ? (size_t)r->pad : len;
		r->pad -= n;
		if (r->pad == 0)
			r->st = S_HEADER;
		return (ssize_t)n;
	case S_END: /* what follows the end (tar pads to its record size) must be zeros */
		for (n = 0; n < len; n++)
			if (buf[n])
				return -EINVAL;
		return (ssize_t)len;
	}
	return -EINVAL;
}

int tarr_feed(struct tar_reader *r, const char *buf, size_t len)
{
	while (len && !r->err) {
		ssize_t n = step(r, buf, len);

		if (n < 0) {
			r->err = (int)n;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	return r->err;
}

int tarr_end(struct tar_reader *r)
{
	if (r->err)
		return r->err;
	return r->st == S_END ||
		       (r->st == S_HEADER && r->blen == 0 && !r->path && !r->link && !r->has_size)
		   ? 0
		   : -EINVAL;
}
