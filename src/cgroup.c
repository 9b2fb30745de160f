/* Control groups (see cgroup.h): finding where the daemon sits in each hierarchy, making the
 * sandbox's groups below it, and the freeze-signal-thaw recipe that catches processes forking
 * while they are being killed. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

enum cg_mode { CG_NONE, CG_V1, CG_V2 };

#define V1_FREEZER 0
#define NCTRL 4
static const char *const v1_ctrls[NCTRL] = {"freezer", "pids", "memory", "cpu"};

struct cgroup {
	char *dir[NCTRL]; /* v1: one per controller (NULL if absent); v2: dir[0] only */
};

static enum cg_mode mode = CG_NONE;
static struct cgroup *root;

const char *cgroup_mode(void)
{
	return mode == CG_V1 ? "v1" : mode == CG_V2 ? "v2" : "none";
}

static int write_file(const char *dir, const char *name, const char *value)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int rc = 0;

	free(path);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static ssize_t read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	free(path);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* The daemon's own group in a hierarchy: "ctrl" for v1, NULL for the v2 line. */
static char *own_group(const char *ctrl)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[4096], *found = NULL;

	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, "\n")] = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (ctrl ? strcmp(c1 + 1, ctrl) == 0 : c1[1] == '\0')
			found = xstrdup(c2 + 1);
	}
	fclose(f);
	return found;
}

static char *make_dir(const char *mount, const char *ctrl, const char *name)
{
	char *own = own_group(ctrl);
	char *dir;

	if (!own)
		return NULL;
	dir = xasprintf("%s%s/%s", mount, strcmp(own, "/") ? own : "", name);
	free(own);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		free(dir);
		return NULL;
	}
	return dir;
}

static bool v2_usable(const char *mount)
{
	char *probe = xasprintf("%s/cgroup.controllers", mount);
	bool ok = access(probe, F_OK) == 0;

	free(probe);
	return ok;
}

static struct cgroup *root_v1(const char *name)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));

	for (int i = 0; i < NCTRL; i++) {
		char *mount = xasprintf("/sys/fs/cgroup/%s", v1_ctrls[i]);

		cg->dir[i] = make_dir(mount, v1_ctrls[i], name);
		free(mount);
	}
	if (!cg->dir[V1_FREEZER]) {
		for (int i = 0; i < NCTRL; i++)
			free(cg->dir[i]);
		free(cg);
		return NULL;
	}
	return cg;
}

static struct cgroup *root_v2(const char *mount, const char *name)
{
	struct cgroup *cg;
	char *dir;

	if (!v2_usable(mount) || !(dir = make_dir(mount, NULL, name)))
		return NULL;
	cg = xcalloc(1, sizeof(*cg));
	cg->dir[0] = dir;
	return cg;
}

int cgroup_init(const char *want, char *err, size_t errlen)
{
	char name[64];

	snprintf(name, sizeof(name), "sbxfs-%d", (int)getpid());
	if (!strcmp(want, "none"))
		return 0;
	if (!strcmp(want, "auto") || !strcmp(want, "v2")) {
		/* Pure v2, or (when asked for) the v2 half of a hybrid machine. */
		root = root_v2("/sys/fs/cgroup", name);
		if (!root && !strcmp(want, "v2"))
			root = root_v2("/sys/fs/cgroup/unified", name);
		if (root)
			mode = CG_V2;
	}
	if (!root && (!strcmp(want, "auto") || !strcmp(want, "v1"))) {
		root = root_v1(name);
		if (root)
			mode = CG_V1;
	}
	if (!root && strcmp(want, "auto")) {
		snprintf(err, errlen, "cgroup %s: no usable hierarchy (need write access)", want);
		return -ENOENT;
	}
	if (!root)
		log_warnx("no usable cgroup: timeouts and kills reach only the shell's process group");
	return 0;
}

struct cgroup *cgroup_create(const char *name)
{
	struct cgroup *cg;

	if (!root)
		return NULL;
	cg = xcalloc(1, sizeof(*cg));
	for (int i = 0; i < NCTRL; i++) {
		if (!root->dir[i])
			continue;
		cg->dir[i] = xasprintf("%s/%s", root->dir[i], name);
		if (mkdir(cg->dir[i], 0755) < 0 && errno != EEXIST) {
			log_warn("cgroup %s", cg->dir[i]);
			free(cg->dir[i]);
			cg->dir[i] = NULL;
			continue;
		}
	}
	if (!cg->dir[0]) {
		cgroup_destroy(cg);
		return NULL;
	}
	return cg;
}

int cgroup_join_fds(struct cgroup *cg, int *fds, int max)
{
	int n = 0;

	for (int i = 0; cg && i < NCTRL && n < max; i++) {
		char *path;

		if (!cg->dir[i])
			continue;
		path = xasprintf("%s/cgroup.procs", cg->dir[i]);
		fds[n] = open(path, O_WRONLY | O_CLOEXEC);
		if (fds[n] >= 0)
			n++;
		else
			log_warn("%s", path);
		free(path);
	}
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};

	nanosleep(&ts, NULL);
}

static bool is_frozen(struct cgroup *cg)
{
	char buf[512];

	if (mode == CG_V1)
		return read_file(cg->dir[0], "freezer.state", buf, sizeof(buf)) > 0 &&
		       strncmp(buf, "FROZEN", 6) == 0;
	return read_file(cg->dir[0], "cgroup.events", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "frozen 1") != NULL;
}

static void set_frozen(struct cgroup *cg, bool on)
{
	int rc = mode == CG_V1 ? write_file(cg->dir[0], "freezer.state", on ? "FROZEN" : "THAWED")
			       : write_file(cg->dir[0], "cgroup.freeze", on ? "1" : "0");

	if (rc < 0) {
		errno = -rc;
		log_warn("cgroup %s: %s", cg->dir[0], on ? "freeze" : "thaw");
		return;
	}
	/* Freezing takes a moment; bounded so a stuck group can't hang the daemon. */
	for (int i = 0; on && i < 200 && !is_frozen(cg); i++)
		sleep_ms(1);
}

static size_t read_pids(struct cgroup *cg, pid_t **pids)
{
	char *path = xasprintf("%s/cgroup.procs", cg->dir[0]);
	FILE *f = fopen(path, "r");
	size_t n = 0, cap = 16;
	long pid;

	free(path);
	*pids = xmalloc(cap * sizeof(pid_t));
	while (f && fscanf(f, "%ld", &pid) == 1) {
		if (n == cap)
			*pids = xrealloc(*pids, (cap *= 2) * sizeof(pid_t));
		(*pids)[n++] = (pid_t)pid;
	}
	if (f)
		fclose(f);
	return n;
}

int cgroup_signal(struct cgroup *cg, pid_t keep, int sig)
{
	size_t n, hit = 0;
	pid_t *pids;

	if (!cg)
		return 0;
	set_frozen(cg, true);
	n = read_pids(cg, &pids);
	for (size_t i = 0; i < n; i++)
		if (pids[i] != keep && kill(pids[i], sig) == 0)
			hit++;
	set_frozen(cg, false);
	free(pids);
	return (int)hit;
}

void cgroup_destroy(struct cgroup *cg)
{
	if (!cg)
		return;
	/* Killed processes leave the group once they have run their exit: retry briefly. */
	for (int tries = 0; cg->dir[0] && tries < 100; tries++) {
		if (tries % 10 == 0)
			cgroup_signal(cg, 0, SIGKILL);
		if (rmdir(cg->dir[0]) == 0 || errno == ENOENT)
			break;
		sleep_ms(1);
	}
	for (int i = 0; i < NCTRL; i++) {
		if (!cg->dir[i])
			continue;
		if (rmdir(cg->dir[i]) < 0 && errno != ENOENT)
			log_warn("cgroup %s", cg->dir[i]);
		free(cg->dir[i]);
	}
	free(cg);
}

void cgroup_shutdown(void)
{
	cgroup_destroy(root);
	root = NULL;
	mode = CG_NONE;
}
