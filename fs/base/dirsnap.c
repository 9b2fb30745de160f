/* Directory listings built at opendir and served by index (see dirsnap.h). */
#include "dirsnap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

static struct dirsnap *dirsnap_of(struct fuse_file_info *fi)
{
	return (struct dirsnap *)(uintptr_t)fi->fh;
}

struct dirsnap *dirsnap_new(fuse_ino_t ino, fuse_ino_t parent)
{
	struct dirsnap *d = xcalloc(1, sizeof(*d));

	dirsnap_add(d, ".", ino, S_IFDIR);
	dirsnap_add(d, "..", parent, S_IFDIR);
	return d;
}

void dirsnap_add(struct dirsnap *d, const char *name, fuse_ino_t ino, mode_t mode)
{
	d->e = xrealloc(d->e, (d->n + 1) * sizeof(*d->e));
	d->e[d->n++] = (struct dirsnap_entry){xstrdup(name), ino, mode};
}

void dirsnap_open(fuse_req_t req, struct dirsnap *d, const struct dirsnap_plus *plus,
		  struct fuse_file_info *fi)
{
	d->plus = plus;
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* "." and ".." come first and count no lookup: the kernel has their inodes already. */
static bool is_dot(size_t i)
{
	return i < 2;
}

static void dirsnap_read(fuse_req_t req, struct fuse_file_info *fi, size_t size, off_t off,
			 bool with_attr)
{
	struct dirsnap *d = dirsnap_of(fi);
	const struct dirsnap_plus *plus = with_attr ? d->plus : NULL;
	char *buf = xmalloc(size);
	size_t used = 0;

	for (size_t i = (size_t)off; i < d->n; i++) {
		struct fuse_entry_param e = {
		    .attr = {.st_ino = d->e[i].ino, .st_mode = d->e[i].mode}};
		size_t need;

		if (plus && !is_dot(i))
			plus->fill(&d->e[i], &e);
		if (with_attr)
			need = fuse_add_direntry_plus(req, buf + used, size - used, d->e[i].name,
						      &e, (off_t)(i + 1));
		else
			need = fuse_add_direntry(req, buf + used, size - used, d->e[i].name,
						 &e.attr, (off_t)(i + 1));
		if (need > size - used) {
			if (plus && e.ino && plus->unsent)
				plus->unsent(&e);
			break;
		}
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void dirsnap_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	dirsnap_read(req, fi, size, off, false);
}

void dirsnap_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	(void)ino;
	dirsnap_read(req, fi, size, off, true);
}

void dirsnap_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d = dirsnap_of(fi);

	(void)ino;
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	free(d);
	fuse_reply_err(req, 0);
}
