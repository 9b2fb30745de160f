/* The files of the fleet's tree that are opened (boxfile.h). status and keep_alive read a
 * snapshot taken at the open; keep_alive takes one write of `yes` or `no` at once. config
 * reads the sandbox's own config and is written as a whole file: the writes of an open make a
 * new text, which its close applies all or nothing (fleet_config_write), so that `cat my.ini >
 * config` either takes or fails at the close with the reason in the fleet's status. */
#include "boxfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "fleetino.h"
#include "xmalloc.h"

#define CONFIG_MAX (64u << 10) /* bytes of a sandbox's config */

struct handle *handle_new(char *text)
{
	struct handle *h = xcalloc(1, sizeof(*h));

	h->text = text;
	h->len = strlen(text);
	return h;
}

void handle_free(struct handle *h)
{
	if (!h)
		return;
	free(h->text);
	free(h->buf);
	free(h);
}

/* The text of a sandbox's status or keep_alive, or of the fleet's status: -errno if it is
 * gone. */
static int text_of(uint64_t ino, char **text)
{
	struct fleet_info info;
	size_t len;
	int keep;

	if (ino == INO_STATUS) {
		*text = fleet_status(&len);
		return 0;
	}
	if (fleet_get_serial(serial_of(ino), &info) < 0)
		return -ENOENT;
	if (kind_of(ino) == FL_KEEP) {
		if ((keep = fleet_keep_alive(info.serial)) < 0)
			return keep;
		*text = xstrdup(keep ? "yes\n" : "no\n");
		return 0;
	}
	*text =
	    xasprintf("state %s\npid %d\nrestarts %u\nreason %s\n", fleet_state_name(info.state),
		      (int)info.pid, info.restarts, info.reason[0] ? info.reason : "-");
	return 0;
}

int boxfile_open(uint64_t ino, bool write, bool trunc, struct handle **h)
{
	char *text;
	size_t len;
	int rc;

	if (write && kind_of(ino) != FL_KEEP && kind_of(ino) != FL_CONFIG)
		return -EACCES;
	if (kind_of(ino) == FL_CONFIG)
		rc = fleet_config_read(serial_of(ino), &text, &len);
	else
		rc = text_of(ino, &text);
	if (rc < 0)
		return rc;
	*h = handle_new(text);
	if (write && kind_of(ino) == FL_CONFIG && !trunc) {
		(*h)->buf = xmalloc(len + 1);
		memcpy((*h)->buf, text, len);
		(*h)->buflen = len;
	}
	return 0;
}

/* keep_alive: "yes" or "no", with or without its newline, in one write from the start. */
static ssize_t keep_write(uint64_t ino, const char *buf, size_t size, off_t off)
{
	size_t len = size && buf[size - 1] == '\n' ? size - 1 : size;
	bool on = len == 3 && !memcmp(buf, "yes", 3);
	int rc;

	if (off != 0 || !(on || (len == 2 && !memcmp(buf, "no", 2))))
		return -EINVAL;
	rc = fleet_set_keep_alive(serial_of(ino), on);
	return rc < 0 ? rc : (ssize_t)size;
}

ssize_t boxfile_write(struct handle *h, uint64_t ino, const char *buf, size_t size, off_t off)
{
	size_t end;

	if (kind_of(ino) == FL_KEEP)
		return keep_write(ino, buf, size, off);
	if (kind_of(ino) != FL_CONFIG)
		return -EBADF;
	if (off < 0 || (size_t)off > CONFIG_MAX || size > CONFIG_MAX - (size_t)off)
		return -EFBIG;
	end = (size_t)off + size;
	if (end > h->buflen) {
		h->buf = xrealloc(h->buf, end);
		memset(h->buf + h->buflen, 0, end - h->buflen); /* a hole reads as NULs: refused */
		h->buflen = end;
	}
	memcpy(h->buf + off, buf, size);
	h->written = true;
	return (ssize_t)size;
}

int boxfile_truncate(struct handle *h, uint64_t ino)
{
	if (kind_of(ino) == FL_KEEP)
		return 0; /* `echo yes > keep_alive`: its write is what counts */
	if (kind_of(ino) != FL_CONFIG || !h)
		return -EPERM;
	h->buflen = 0;
	h->written = true;
	return 0;
}

int boxfile_flush(struct handle *h, uint64_t ino)
{
	char why[512] = "";
	int rc;

	if (kind_of(ino) != FL_CONFIG || !h->written)
		return 0;
	h->written = false; /* a dup's close applies nothing twice */
	rc = fleet_config_write(serial_of(ino), h->buf ? h->buf : "", h->buflen, why, sizeof(why));
	return rc < 0 ? rc : 1;
}

off_t boxfile_size(uint64_t ino)
{
	char *text;
	size_t len;

	if (kind_of(ino) != FL_CONFIG || fleet_config_read(serial_of(ino), &text, &len) < 0)
		return 0;
	free(text);
	return (off_t)len;
}
