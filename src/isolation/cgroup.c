/* Control groups (see cgroup.h): finding where the daemon sits in each hierarchy, making the
 * sandbox's groups below it with their limits, removing them (and those of dead daemons), and
 * the file helpers the kills in cgroup_kill.c share. */
#include "cgroup.h"
#include "cgroup_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_mem.h"
#include "fdres.h"
#include "log.h"
#include "xmalloc.h"

#define PREFIX "sbxfs-"
static const char *const v1_ctrls[NCTRL] = {"freezer", "pids", "memory", "cpu"};

static enum cg_mode mode = CG_NONE;
static struct cgroup parent; /* where the daemon sits */
static struct cgroup *root, *launcher_cg;
static bool v2_limits;
static uint64_t session_pids; /* each session's pids.max as set, for the limits file */

bool cg_is_v1(void)
{
	return mode == CG_V1;
}

const char *cgroup_mode(void)
{
	return mode == CG_V1 ? "v1" : mode == CG_V2 ? "v2" : "none";
}

struct cgroup *cgroup_sandbox(void)
{
	return root;
}

struct cgroup *cgroup_launcher(void)
{
	return launcher_cg;
}

int cg_write_file(const char *dir, const char *name, const char *value)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = fdres_open(path, O_WRONLY, 0); /* freeze, thaw: a kill must work at the limit */
	int rc = 0;

	free(path);
	if (fd < 0)
		return fd;
	if (write(fd, value, strlen(value)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

ssize_t cg_read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = fdres_open(path, O_RDONLY, 0);
	ssize_t n;

	free(path);
	if (fd < 0)
		return fd;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* The daemon's own group in a hierarchy, as a directory under mount. */
static char *own_dir(const char *mount, const char *ctrl)
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
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (ctrl ? strcmp(c1 + 1, ctrl) == 0 : c1[1] == '\0')
			found = xasprintf("%s%s", mount, strcmp(c2 + 1, "/") ? c2 + 1 : "");
	}
	fclose(f);
	return found;
}

void cg_sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};

	nanosleep(&ts, NULL);
}

size_t cg_read_pids(const char *dir, pid_t **pids)
{
	char *path = xasprintf("%s/cgroup.procs", dir);
	int fd = fdres_open(path, O_RDONLY, 0); /* a kill must find its processes at the limit */
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	size_t n = 0, cap = 16;
	long pid;

	free(path);
	if (!f && fd >= 0)
		close(fd);
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

/* Calls fn on every child group of dir. */
void cg_for_each_child(const char *dir, void (*fn)(const char *sub, void *arg), void *arg)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char *sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", dir, de->d_name);
		fn(sub, arg);
		free(sub);
	}
	if (d)
		closedir(d);
}

size_t cgroup_pids(struct cgroup *cg, pid_t **pids)
{
	if (!cg) {
		*pids = NULL;
		return 0;
	}
	return cg_read_pids(cg->dir[0], pids);
}

void cgroup_kill_all(void)
{
	cgroup_kill_tree(root);
}

/* Removes dir's child groups first, then dir. */
static void remove_tree_at(const char *dir, void *unused)
{
	cg_for_each_child(dir, remove_tree_at, unused);
	/* Killed processes leave the group once they have run their exit: retry briefly. */
	for (int tries = 0; tries < 100; tries++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		cg_sleep_ms(1);
	}
	log_warn("cgroup %s", dir);
}

/* What is still inside is killed first, the whole tree in one frozen moment (the freezer,
 * or the v2 group, holds the processes; the other v1 hierarchies follow). */
static void remove_tree(const char *dir, bool with_freezer)
{
	struct cgroup one = {{(char *)dir}};

	if (with_freezer)
		cg_signal_dir(&one, true, 0, 0, SIGKILL);
	remove_tree_at(dir, NULL);
}

static void destroy_dirs(struct cgroup *cg)
{
	/* The freezer (v1) or the v2 group holds the processes; the others follow. */
	for (int i = 0; i < NCTRL; i++)
		if (cg->dir[i])
			remove_tree(cg->dir[i], i == 0);
}

void cgroup_destroy(struct cgroup *cg)
{
	if (!cg)
		return;
	destroy_dirs(cg);
	for (int i = 0; i < NCTRL; i++)
		free(cg->dir[i]);
	free(cg);
}

static struct cgroup *child_of(const struct cgroup *base, const char *name, bool create)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));

	for (int i = 0; i < NCTRL; i++) {
		if (!base->dir[i])
			continue;
		cg->dir[i] = xasprintf("%s/%s", base->dir[i], name);
		if (create && mkdir(cg->dir[i], 0755) < 0 && errno != EEXIST) {
			log_warn("cgroup %s", cg->dir[i]);
			free(cg->dir[i]);
			cg->dir[i] = NULL;
		}
	}
	if (!cg->dir[0]) {
		cgroup_destroy(cg);
		return NULL;
	}
	return cg;
}

struct cgroup *cgroup_create(struct cgroup *parent_cg, const char *name)
{
	if (!root)
		return NULL;
	return child_of(parent_cg ? parent_cg : root, name, true);
}

int cgroup_join_fds(struct cgroup *cg, int *fds, int max)
{
	int n = 0;

	for (int i = 0; cg && i < NCTRL && n < max; i++) {
		char *path;

		if (!cg->dir[i])
			continue;
		path = xasprintf("%s/cgroup.procs", cg->dir[i]);
		fds[n] = fdres_open(path, O_WRONLY, 0);
		if (fds[n] < 0) {
			int rc = fds[n];

			log_warnx("%s: %s", path, strerror(-rc));
			free(path);
			while (n > 0)
				close(fds[--n]);
			return rc;
		}
		n++;
		free(path);
	}
	return n;
}

/* Groups named after daemons that no longer run are what a SIGKILL'd daemon left. */
static void remove_stale(const struct cgroup *base)
{
	for (int i = 0; i < NCTRL; i++) {
		struct dirent *de;
		DIR *d = base->dir[i] ? opendir(base->dir[i]) : NULL;

		while (d && (de = readdir(d))) {
			long pid;
			char *dir;

			if (strncmp(de->d_name, PREFIX, strlen(PREFIX)))
				continue;
			pid = strtol(de->d_name + strlen(PREFIX), NULL, 10);
			if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH)) {
				dir = xasprintf("%s/%s", base->dir[i], de->d_name);
				remove_tree(dir, i == 0);
				free(dir);
			}
		}
		if (d)
			closedir(d);
	}
}

static bool find_parent(const char *want)
{
	if (!strcmp(want, "auto") || !strcmp(want, "v2")) {
		/* Pure v2, or (when asked for) the v2 half of a hybrid machine. */
		const char *mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

		for (int m = 0; m < (!strcmp(want, "v2") ? 2 : 1) && !parent.dir[0]; m++) {
			char *probe = xasprintf("%s/cgroup.controllers", mounts[m]);

			if (access(probe, F_OK) == 0)
				parent.dir[0] = own_dir(mounts[m], NULL);
			free(probe);
		}
		if (parent.dir[0])
			mode = CG_V2;
	}
	if (!parent.dir[0] && (!strcmp(want, "auto") || !strcmp(want, "v1"))) {
		for (int i = 0; i < NCTRL; i++) {
			char *mount = xasprintf("/sys/fs/cgroup/%s", v1_ctrls[i]);

			if (access(mount, W_OK) == 0)
				parent.dir[i] = own_dir(mount, v1_ctrls[i]);
			free(mount);
		}
		if (parent.dir[V1_FREEZER])
			mode = CG_V1;
	}
	return mode != CG_NONE;
}

static void limit(const char *dir, const char *file, const char *value)
{
	int rc;

	if (!dir)
		return;
	rc = cg_write_file(dir, file, value);
	if (rc < 0)
		log_warnx("cgroup %s/%s: %s", dir, file, strerror(-rc));
}

static void apply_v1(const struct cg_limits *lim)
{
	char v[64];

	if (lim->memory_max) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)lim->memory_max);
		limit(root->dir[V1_MEMORY], "memory.limit_in_bytes", v);
	}
	if (lim->pids_max) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)lim->pids_max);
		limit(root->dir[V1_PIDS], "pids.max", v);
	}
	if (lim->cpu_max > 0) {
		limit(root->dir[V1_CPU], "cpu.cfs_period_us", "100000");
		snprintf(v, sizeof(v), "%lld", (long long)(lim->cpu_max * 100000));
		limit(root->dir[V1_CPU], "cpu.cfs_quota_us", v);
	}
}

/* v2 limits need the controllers enabled below the daemon's group, which only works if it is
 * delegated to us (or is the root); else the limits are off, and we say so. */
static void apply_v2(const struct cg_limits *lim)
{
	char v[64];

	v2_limits =
	    cg_write_file(parent.dir[0], "cgroup.subtree_control", "+memory +pids +cpu") == 0;
	if (!v2_limits) {
		log_warnx("cgroup v2: cannot enable controllers under %s: limits are off",
			  parent.dir[0]);
		return;
	}
	cg_write_file(root->dir[0], "cgroup.subtree_control", "+memory +pids +cpu");
	if (lim->memory_max) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)lim->memory_max);
		limit(root->dir[0], "memory.max", v);
	}
	if (lim->pids_max) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)lim->pids_max);
		limit(root->dir[0], "pids.max", v);
	}
	if (lim->cpu_max > 0) {
		snprintf(v, sizeof(v), "%lld 100000", (long long)(lim->cpu_max * 100000));
		limit(root->dir[0], "cpu.max", v);
	}
}

void cgroup_limit_session(struct cgroup *cg, uint64_t pids_max)
{
	const char *pids_dir;
	char v[32];
	int rc;

	if (!cg || (mode == CG_V2 && !v2_limits))
		return;
	/* Written even where it is the default: equal is the point, whatever the parent says. */
	if (mode == CG_V1)
		limit(cg->dir[V1_CPU], "cpu.shares", "1024");
	else
		limit(cg->dir[0], "cpu.weight", "100");
	pids_dir = mode == CG_V1 ? cg->dir[V1_PIDS] : cg->dir[0];
	if (!pids_max || !pids_dir)
		return;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)pids_max);
	if ((rc = cg_write_file(pids_dir, "pids.max", v)) < 0)
		log_warnx("cgroup %s/pids.max: %s", pids_dir, strerror(-rc));
	else
		session_pids = pids_max;
}

int cgroup_init(const char *want, const struct cg_limits *lim, char *err, size_t errlen)
{
	char name[64];

	if (!strcmp(want, "none"))
		return 0;
	if (!find_parent(want)) {
		if (strcmp(want, "auto")) {
			snprintf(err, errlen, "cgroup %s: no usable hierarchy", want);
			return -ENOENT;
		}
		log_warnx("no usable cgroup: no limits, and a kill reaches only the shell's "
			  "process group");
		return 0;
	}
	remove_stale(&parent);
	snprintf(name, sizeof(name), PREFIX "%d", (int)getpid());
	root = child_of(&parent, name, true);
	if (!root) {
		snprintf(err, errlen, "cannot create cgroup %s under %s", name, parent.dir[0]);
		return -EACCES;
	}
	if (mode == CG_V1)
		apply_v1(lim);
	else
		apply_v2(lim);
	launcher_cg = child_of(root, "launcher", true);
	return 0;
}

/* v1 counts an OOM kill in the group of the victim only: add up the whole tree. */
static void add_oom_kills(const char *dir, void *sum)
{
	char buf[512], *p;

	if (cg_read_file(dir, "memory.oom_control", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "oom_kill ")))
		*(long *)sum += strtol(p + 9, NULL, 10);
	cg_for_each_child(dir, add_oom_kills, sum);
}

static long v1_oom_kills(const char *dir)
{
	long n = 0;

	add_oom_kills(dir, &n);
	return n;
}

static void describe_v1(FILE *out)
{
	char buf[4096];

	if (cg_read_file(root->dir[V1_MEMORY] ? root->dir[V1_MEMORY] : "", "memory.limit_in_bytes",
			 buf, sizeof(buf)) > 0)
		fprintf(out, "memory_max %s", buf);
	if (root->dir[V1_MEMORY] &&
	    cg_read_file(root->dir[V1_MEMORY], "memory.usage_in_bytes", buf, sizeof(buf)) > 0)
		fprintf(out, "memory_current %s", buf);
	if (root->dir[V1_MEMORY])
		fprintf(out, "oom_kills %ld\n", v1_oom_kills(root->dir[V1_MEMORY]));
	if (root->dir[V1_PIDS] &&
	    cg_read_file(root->dir[V1_PIDS], "pids.max", buf, sizeof(buf)) > 0)
		fprintf(out, "pids_max %s", buf);
	if (root->dir[V1_PIDS] &&
	    cg_read_file(root->dir[V1_PIDS], "pids.current", buf, sizeof(buf)) > 0)
		fprintf(out, "pids_current %s", buf);
	if (root->dir[V1_CPU] &&
	    cg_read_file(root->dir[V1_CPU], "cpu.cfs_quota_us", buf, sizeof(buf)) > 0)
		fprintf(out, "cpu_quota_us %s", buf);
}

static void describe_v2(FILE *out)
{
	static const char *const files[][2] = {{"memory.max", "memory_max"},
					       {"memory.current", "memory_current"},
					       {"pids.max", "pids_max"},
					       {"pids.current", "pids_current"},
					       {"cpu.max", "cpu_max"}};
	char buf[4096], *p;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (cg_read_file(root->dir[0], files[i][0], buf, sizeof(buf)) > 0)
			fprintf(out, "%s %s", files[i][1], buf);
	if (cg_read_file(root->dir[0], "memory.events", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "oom_kill ")))
		fprintf(out, "oom_kills %ld\n", strtol(p + 9, NULL, 10));
}

bool cgroup_limits_on(void)
{
	return root && (mode == CG_V1 || v2_limits);
}

const char *cgroup_memory_dir(const struct cgroup *cg)
{
	if (!cg)
		return NULL;
	if (mode == CG_V1)
		return cg->dir[V1_MEMORY];
	return v2_limits ? cg->dir[0] : NULL;
}

char *cgroup_describe(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	fprintf(out, "cgroup %s\n", cgroup_mode());
	if (root && mode == CG_V1)
		describe_v1(out);
	else if (root && v2_limits)
		describe_v2(out);
	else
		fprintf(out, "limits off\n");
	cgroup_mem_describe(out);
	if (session_pids)
		fprintf(out, "session_pids_max %llu\n", (unsigned long long)session_pids);
	fclose(out);
	return text;
}

void cgroup_shutdown(void)
{
	if (launcher_cg) {
		free(launcher_cg->dir[0]); /* removed with the root's tree */
		for (int i = 1; i < NCTRL; i++)
			free(launcher_cg->dir[i]);
		free(launcher_cg);
		launcher_cg = NULL;
	}
	cgroup_destroy(root);
	root = NULL;
	for (int i = 0; i < NCTRL; i++) {
		free(parent.dir[i]);
		parent.dir[i] = NULL;
	}
	mode = CG_NONE;
	session_pids = 0;
}
