/* A snapshot read out as an archive (snapshots/NAME/archive): its tree as tar, made as it is
 * read, through zstd when [snapshots] compress = zstd. The snapshot is pinned while it is read,
 * so it is not deleted under its reader. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "snapshot_priv.h"
#include "tarwrite.h"
#include "xmalloc.h"
#include "zstream.h"

struct snap_archive {
	struct snapshot *s;
	int pin;
	struct tar_writer *tw;
	struct zout *z; /* NULL: plain tar */
};

static ssize_t fill(void *arg, char *buf, size_t size)
{
	return tarw_read(arg, buf, size);
}

int snapshot_archive_open(struct snapshot *s, struct snap_archive **out)
{
	int pin = snapshot_pin(s), fd;
	struct snap_archive *a;

	if (pin < 0)
		return pin;
	if ((fd = dup(pin)) < 0) {
		int rc = -errno;

		snapshot_unpin(s, pin);
		return rc;
	}
	a = xcalloc(1, sizeof(*a));
	snapshot_ref(s);
	a->s = s;
	a->pin = pin;
	a->tw = tarw_new(fd);
	if (snap_cfg->snap_zstd)
		a->z = zout_new(fill, a->tw);
	*out = a;
	return 0;
}

ssize_t snapshot_archive_read(struct snap_archive *a, char *buf, size_t size)
{
	return a->z ? zout_read(a->z, buf, size) : tarw_read(a->tw, buf, size);
}

void snapshot_archive_close(struct snap_archive *a)
{
	if (a->z)
		zout_free(a->z);
	tarw_free(a->tw);
	snapshot_unpin(a->s, a->pin);
	snapshot_unref(a->s);
	free(a);
}
