/* A sandbox's own options (fleet.h): its config, STATE_DIR/sandboxes/ID/sbxfs.ini, read, and
 * replaced as a whole: checked by loading it as its daemon would, checked against the fleet's
 * bounds, put in place by a rename, then applied by a clean restart of its daemon (a sleeping
 * sandbox reads it at its wake, a failed one is started again with it). */
#include "fleet_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

/* lock held */
static struct box *by_serial(uint64_t serial)
{
	struct box *b;

	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (b->info.serial == serial)
		return b;
	return NULL;
}

int fleet_config_read(uint64_t serial, char **text, size_t *len)
{
	struct box *b;
	char *path = NULL;
	size_t cap = 0;
	ssize_t n = -1;
	FILE *f;
	int rc = 0;

	pthread_mutex_lock(&fleet_lock);
	if ((b = by_serial(serial)))
		path = box_path(b->info.id, "sbxfs.ini");
	pthread_mutex_unlock(&fleet_lock);
	if (!path)
		return -ENOENT;
	*text = NULL;
	if (!(f = fopen(path, "re")))
		rc = -errno;
	else if ((n = getdelim(text, &cap, '\0', f)) < 0)
		rc = ferror(f) ? -EIO : 0;
	if (f)
		fclose(f);
	free(path);
	if (rc < 0 || n < 0) {
		free(*text);
		*text = rc < 0 ? NULL : xstrdup("");
	}
	*len = rc == 0 && n > 0 ? (size_t)n : 0;
	return rc;
}

static int write_new(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc < 0)
		unlink(path);
	return rc;
}

/* lock held, the new config in place: its daemon is told to stop, and the monitor starts it
 * again (daemon_ended), while uses wait as for a start; one on its way up is stopped once up
 * (start_thread); a failed one starts now. */
static void apply(struct box *b)
{
	if (b->info.state == FLEET_RUNNING && b->pidfd >= 0) {
		b->reconfigure = true;
		b->info.state = FLEET_STARTING;
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	} else if (b->info.state == FLEET_STARTING || b->info.state == FLEET_WAKING) {
		b->reconfigure = true;
	} else if (b->info.state == FLEET_FAILED) {
		b->quick_fails = 0;
		box_start(b);
	}
}

/* lock held: whether b may take a config of memory and disk now. */
static int may_change(struct box *b, uint64_t memory, uint64_t disk, char *why, size_t whylen)
{
	if (!b)
		return -ENOENT;
	if (b->info.state == FLEET_STOPPING) {
		snprintf(why, whylen, "it is being destroyed");
		return -EBUSY;
	}
	return bounds_fit_change(b, memory, disk, why, whylen) ? 0 : -ENOSPC;
}

int fleet_config_write(uint64_t serial, const char *text, size_t len, char *why, size_t whylen)
{
	uint64_t memory, disk;
	struct box *b;
	char id[FLEET_ID_MAX + 1], *ini, *tmp;
	int rc;

	pthread_mutex_lock(&fleet_lock);
	b = by_serial(serial);
	snprintf(id, sizeof(id), "%s", b ? b->info.id : "");
	pthread_mutex_unlock(&fleet_lock);
	if (!b)
		return -ENOENT;
	ini = box_path(id, "sbxfs.ini");
	tmp = box_path(id, "sbxfs.ini.new");
	if (memchr(text, '\0', len)) {
		snprintf(why, whylen, "a NUL byte in it");
		rc = -EINVAL;
		goto out;
	}
	if ((rc = write_new(tmp, text, len)) < 0)
		snprintf(why, whylen, "%s: %s", tmp, strerror(-rc));
	else if ((rc = bounds_cost(tmp, &memory, &disk, why, whylen)) < 0)
		unlink(tmp);
	if (rc < 0)
		goto out;
	pthread_mutex_lock(&fleet_lock);
	b = by_serial(serial);
	if ((rc = may_change(b, memory, disk, why, whylen)) == 0 && rename(tmp, ini) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", ini, strerror(-rc));
	}
	if (rc == 0) {
		b->memory = memory;
		b->disk = disk;
		log_info("sandbox %s: a new config", id);
		apply(b);
	}
	pthread_mutex_unlock(&fleet_lock);
	if (rc < 0)
		unlink(tmp);
out:
	if (rc < 0 && rc != -ENOENT)
		fleet_refused(id, "config not applied", why);
	free(ini);
	free(tmp);
	return rc;
}
