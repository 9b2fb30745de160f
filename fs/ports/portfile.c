/* The open files of ports/ (see portfs.h): an exposure's url, address, port, name and status,
 * rendered at open; name, written and applied at close; and ports/expose, where each write()
 * is one port to expose, applied at once so that echo sees its errno. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expose.h"
#include "fhandle.h"
#include "port_priv.h"
#include "refusals.h"
#include "reply.h"
#include "xmalloc.h"

struct portfh {
	struct fhandle h; /* h.lock: wbuf, wlen, apply */
	fuse_ino_t ino;
	char *snap; /* what reads give */
	size_t snaplen;
	char *wbuf; /* name: what applies at close */
	size_t wlen;
	bool apply; /* name: written (or truncated) since the last close */
	int werr;   /* name: a failed write's -errno: the open applies nothing */
};

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static struct portfh *fh_of(struct fuse_file_info *fi)
{
	return (struct portfh *)(uintptr_t)fi->fh;
}

static void fh_free(struct fhandle *h)
{
	struct portfh *fh = container_of(h, struct portfh, h);

	free(fh->snap);
	free(fh->wbuf);
	free(fh);
}

void portfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
}

static char *render_url(const struct expose_info *x)
{
	char *url = expose_url(x), *text = xasprintf("%s\n", url);

	free(url);
	return text;
}

static char *render_address(const struct expose_info *x)
{
	return xasprintf("%s\n", x->address);
}

static char *render_port(const struct expose_info *x)
{
	return xasprintf("%u\n", x->host_port);
}

static char *render_name(const struct expose_info *x)
{
	return x->name[0] ? xasprintf("%s\n", x->name) : xstrdup("");
}

static char *render_status(const struct expose_info *x)
{
	return expose_status(x);
}

char *portfile_render(fuse_ino_t ino, size_t *len)
{
	const struct port_row *r = port_row(ino_kind(ino));
	struct expose_info x;
	char *text;

	if (!r->render) {
		*len = 0;
		return xstrdup("");
	}
	if (expose_get(ino_num(ino), (uint32_t)ino_serial(ino), &x) < 0)
		return NULL;
	text = r->render(&x);
	expose_info_clear(&x);
	*len = strlen(text);
	return text;
}

void portfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mode_t mode = port_row(ino_kind(ino))->mode;
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	bool reading = (fi->flags & O_ACCMODE) != O_WRONLY;
	struct portfh *fh;

	if (!S_ISREG(mode)) {
		fuse_reply_err(req, mode ? EISDIR : ENOENT);
		return;
	}
	if ((writing && !(mode & S_IWUSR)) || (reading && !(mode & S_IRUSR))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fhandle_init(&fh->h, &open_files, fh_free);
	fh->ino = ino;
	fh->snap = portfile_render(ino, &fh->snaplen);
	if (!fh->snap) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* An open that truncates sets the name to what it writes, maybe nothing ("" clears it). */
	fh->apply = writing && (fi->flags & O_TRUNC) && port_row(ino_kind(ino))->at_close;
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

void portfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct portfh *fh = fh_of(fi);

	(void)ino;
	/* Once answered, the file may be released at once: hold fh until the reply is out. */
	fhandle_ref(&fh->h);
	reply_slice(req, fh->snap, fh->snaplen, size, off);
	fhandle_unref(&fh->h);
}

/* ports/expose: one port a write, its newline optional. */
static int write_expose(struct portfh *fh, const char *buf, size_t size)
{
	unsigned port;
	int rc;

	(void)fh;
	if (size && buf[size - 1] == '\n')
		size--;
	rc = expose_parse_port(buf, size, &port);
	if (rc == -EINVAL)
		refuse_port("ports/expose", buf, size);
	return rc < 0 ? rc : expose_add(port);
}

static void refuse_name(struct portfh *fh)
{
	char *path = xasprintf("ports/%u/name", ino_num(fh->ino));

	refusal_note(path, EINVAL,
		     "a name is one line of at most 128 bytes, no control characters");
	free(path);
}

/* name: kept until close, each write checked with what came before it. */
static int write_name(struct portfh *fh, const char *buf, size_t size)
{
	int rc;

	if (fh->werr)
		return fh->werr;
	if (fh->wlen + size > EXPOSE_NAME_MAX + 1 || memchr(buf, '\0', size)) {
		refuse_name(fh);
		return fh->werr = -EINVAL;
	}
	fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size);
	memcpy(fh->wbuf + fh->wlen, buf, size);
	rc = expose_set_name(ino_num(fh->ino), (uint32_t)ino_serial(fh->ino), fh->wbuf,
			     fh->wlen + size, true);
	if (rc == 0) {
		fh->wlen += size;
		fh->apply = true;
	} else {
		if (rc == -EINVAL)
			refuse_name(fh);
		fh->werr = rc;
	}
	return rc;
}

void portfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct portfh *fh = fh_of(fi);
	int rc;

	(void)ino;
	(void)off;
	pthread_mutex_lock(&fh->h.lock);
	rc = port_row(ino_kind(fh->ino))->write ? port_row(ino_kind(fh->ino))->write(fh, buf, size)
						: -EBADF;
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* name: what was written applies at close ("" clears it), unless a write failed. */
void portfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct portfh *fh = fh_of(fi);
	int rc = 0;

	(void)ino;
	pthread_mutex_lock(&fh->h.lock);
	if (fh->werr)
		rc = fh->werr;
	else if (fh->apply)
		rc = expose_set_name(ino_num(fh->ino), (uint32_t)ino_serial(fh->ino),
				     fh->wbuf ? fh->wbuf : "", fh->wlen, false);
	fh->apply = false;
	fh->wlen = 0;
	pthread_mutex_unlock(&fh->h.lock);
	fuse_reply_err(req, -rc);
}

void portfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;

	fhandle_release(&fh_of(fi)->h);
	fuse_reply_err(req, 0);
}

void portfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct portfh *fh = fh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;

	(void)ino;
	if (port_row(ino_kind(fh->ino))->mode & S_IWUSR)
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, NULL);
}

static const struct port_row rows[P_MAX] = {
    [P_PORTS] = {.name = "ports",
		 .mode = S_IFDIR | 0755,
		 .top = true,
		 .help = "the sandbox's exposed ports, one directory each"},
    [P_EXPOSE] = {.name = "expose",
		  .mode = S_IFREG | 0200,
		  .top = true,
		  .help = "write PORT: exposes it, as mkdir ports/PORT does",
		  .write = write_expose},
    [P_PORTDIR] = {.name = "",
		   .mode = S_IFDIR | 0755,
		   .help = "mkdir: the sandbox's TCP port on the host; rmdir closes it"},
    [P_URL] = {.name = "url",
	       .mode = S_IFREG | 0444,
	       .help = "where the host reaches it: http://ADDRESS:PORT/",
	       .render = render_url},
    [P_ADDRESS] = {.name = "address",
		   .mode = S_IFREG | 0444,
		   .help = "the host address it listens on",
		   .render = render_address},
    [P_PORT] = {.name = "port",
		.mode = S_IFREG | 0444,
		.help = "the host port it listens on",
		.render = render_port},
    [P_NAME] = {.name = "name",
		.mode = S_IFREG | 0644,
		.help = "a name for it, a line applied at close",
		.render = render_name,
		.write = write_name,
		.at_close = true},
    [P_STATUS] = {.name = "status",
		  .mode = S_IFREG | 0444,
		  .help = "port, url, connections, accepted, refused, ...",
		  .render = render_status},
};

const struct port_row *port_row(unsigned k)
{
	static const struct port_row none = {.name = ""};

	return k < P_MAX ? &rows[k] : &none;
}
