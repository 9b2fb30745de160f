/* The sandbox's lifetime: state directory (lock, spool), launcher location, and the order in
 * which the loop, the launcher and the sessions start and stop. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "session.h"
#include "xmalloc.h"

static struct config *cfg;
static char *spool_dir;
static char *launcher;
static int lock_fd = -1;

static int mkdir_p(const char *path, mode_t mode)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		*p = '/';
	}
	if (rc == 0 && mkdir(copy, mode) < 0 && errno != EEXIST)
		rc = -errno;
	free(copy);
	return rc;
}

/* Spool files of an earlier daemon that died are stale: start from an empty spool. */
static int reset_spool(const char *dir)
{
	DIR *d;
	struct dirent *de;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	return 0;
}

static char *find_launcher(const char *self_exe)
{
	char *copy, *path;

	if (cfg->launcher[0])
		return xstrdup(cfg->launcher);
	copy = xstrdup(self_exe);
	path = xasprintf("%s/sbxfs-launcher", dirname(copy));
	free(copy);
	if (access(path, X_OK) == 0)
		return path;
	free(path);
	return xstrdup(SBXFS_LIBEXECDIR "/sbxfs-launcher");
}

static int take_lock(const char *state_dir)
{
	char *path = xasprintf("%s/lock", state_dir);

	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	if (lock_fd < 0)
		return -errno;
	if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return 0;
}

int sandbox_prepare(struct config *c, const char *self_exe, char *err, size_t errlen)
{
	int rc;

	cfg = c;
	if ((rc = mkdir_p(cfg->workspace, 0755)) < 0) {
		snprintf(err, errlen, "workspace %s: %s", cfg->workspace, strerror(-rc));
		return rc;
	}
	if ((rc = mkdir_p(cfg->state_dir, 0700)) < 0) {
		snprintf(err, errlen, "state dir %s: %s", cfg->state_dir, strerror(-rc));
		return rc;
	}
	if ((rc = take_lock(cfg->state_dir)) < 0) {
		snprintf(err, errlen, "state dir %s: %s", cfg->state_dir,
			 rc == -EBUSY ? "in use by another sbxfs" : strerror(-rc));
		return rc;
	}
	spool_dir = xasprintf("%s/spool", cfg->state_dir);
	if ((rc = reset_spool(spool_dir)) < 0) {
		snprintf(err, errlen, "spool dir %s: %s", spool_dir, strerror(-rc));
		return rc;
	}
	launcher = find_launcher(self_exe);
	if (access(launcher, X_OK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "launcher %s: %s", launcher, strerror(-rc));
		return rc;
	}
	return 0;
}

int sandbox_start(char *err, size_t errlen)
{
	int rc;

	if ((rc = loop_init()) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-rc));
		return rc;
	}
	core_lock();
	rc = launch_init(launcher);
	core_unlock();
	if (rc < 0) {
		snprintf(err, errlen, "launcher %s: %s", launcher, strerror(-rc));
		return rc;
	}
	if ((rc = cgroup_init(cfg->cgroup, err, errlen)) < 0)
		return rc;
	log_info("cgroup: %s", cgroup_mode());
	sessions_init(cfg, spool_dir);
	if ((rc = session_create(SESSION_DEFAULT, NULL)) < 0) {
		snprintf(err, errlen, "default session: %s", strerror(-rc));
		return rc;
	}
	if ((rc = loop_start()) < 0) {
		snprintf(err, errlen, "event loop thread: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

void sandbox_stop(void)
{
	sessions_shutdown();
	loop_stop();
	launch_shutdown();
	cgroup_shutdown();
	free(launcher);
	free(spool_dir);
	if (lock_fd >= 0)
		close(lock_fd);
}
