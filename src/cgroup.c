/* Control groups (see cgroup.h): finding where the daemon sits in each hierarchy, making the
 * sandbox's groups below it with their limits, the freeze-signal-thaw recipe that catches
 * processes forking while they are being killed, and removing groups of dead daemons. */
#include "cgroup.h"

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

#include "cgmem.h"
#include "fdres.h"
#include "log.h"
#include "xmalloc.h"

enum cg_mode { CG_NONE, CG_V1, CG_V2 };

#define V1_FREEZER 0
#define V1_PIDS 1
#define V1_MEMORY 2
#define V1_CPU 3
#define NCTRL 4
#define PREFIX "sbxfs-"
static const char *const v1_ctrls[NCTRL] = {"freezer", "pids", "memory", "cpu"};
/* How long a SIGKILL of a group may go on freezing and killing before it gives up (logged),
 * and how long each round waits for the killed to leave before the next one. */
#define KILL_DEADLINE_MS 2000
#define KILL_SETTLE_MS 20

struct cgroup {
	char *dir[NCTRL]; /* v1: one per controller (NULL if absent); v2: dir[0] only */
};

static enum cg_mode mode = CG_NONE;
static struct cgroup parent; /* where the daemon sits */
static struct cgroup *root, *launcher_cg;
static bool v2_limits;
static uint64_t session_pids; /* each session's pids.max as set, for the limits file */

const char *cgroup_mode(void)
{
	return mode == CG_V1 ? "v1" : mode == CG_V2 ? "v2" : "none";
}

struct cgroup *cgroup_launcher(void)
{
	return launcher_cg;
}

static int write_file(const char *dir, const char *name, const char *value)
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

static ssize_t read_file(const char *dir, const char *name, char *buf, size_t size)
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

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};

	nanosleep(&ts, NULL);
}

static bool is_frozen(const struct cgroup *cg)
{
	char buf[512];

	if (mode == CG_V1)
		return read_file(cg->dir[0], "freezer.state", buf, sizeof(buf)) > 0 &&
		       strncmp(buf, "FROZEN", 6) == 0;
	return read_file(cg->dir[0], "cgroup.events", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "frozen 1") != NULL;
}

static void set_frozen(const struct cgroup *cg, bool on)
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

static size_t read_pids(const char *dir, pid_t **pids)
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

/* The pid a process has in the innermost pid namespace (what the launcher reports). */
static pid_t inner_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t inner = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
			inner = (pid_t)v;
		break;
	}
	fclose(f);
	return inner;
}

/* Calls fn on every child group of dir. */
static void for_each_child(const char *dir, void (*fn)(const char *sub, void *arg), void *arg)
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

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

struct pidvec {
	pid_t *v;
	size_t n;
};

static void pidvec_add(struct pidvec *pv, const pid_t *pids, size_t n)
{
	pv->v = xrealloc(pv->v, (pv->n + n + 1) * sizeof(pid_t));
	memcpy(pv->v + pv->n, pids, n * sizeof(pid_t));
	pv->n += n;
}

/* Whether a kill reached pid in an earlier round (reached is sorted), so a process still
 * dying is counted once. */
static bool reached_before(const struct pidvec *reached, pid_t pid)
{
	return reached->n && bsearch(&pid, reached->v, reached->n, sizeof(pid_t), cmp_pid);
}

/* Appends the processes of dir and of every group below it. */
static void collect_tree(const char *dir, void *pv)
{
	pid_t *here;
	size_t k = read_pids(dir, &here);

	pidvec_add(pv, here, k);
	free(here);
	for_each_child(dir, collect_tree, pv);
}

static void collect_pids(const struct cgroup *cg, bool tree, struct pidvec *pv)
{
	if (tree) {
		collect_tree(cg->dir[0], pv);
	} else {
		free(pv->v);
		pv->n = read_pids(cg->dir[0], &pv->v);
	}
}

/* A group frozen on its own (a daemon killed in the middle of a kill) stays frozen when its
 * parent thaws, and its killed processes with it. */
static void thaw_tree(const char *dir, void *unused)
{
	struct cgroup one = {{(char *)dir}};

	if (is_frozen(&one))
		set_frozen(&one, false);
	for_each_child(dir, thaw_tree, unused);
}

/* One frozen moment: sig to every process but keep (keep_sig to keep). Returns how many
 * processes there were besides keep; *hit counts those signalled for the first time. */
static size_t signal_round(const struct cgroup *cg, bool tree, pid_t keep, int keep_sig, int sig,
			   struct pidvec *reached, int *hit)
{
	struct pidvec pv = {NULL, 0};
	size_t others = 0;
	bool kept = !keep; /* once found, no other process needs the look at its inner pid */

	set_frozen(cg, true);
	collect_pids(cg, tree, &pv);
	for (size_t i = 0; i < pv.n; i++) {
		pid_t pid = pv.v[i];

		if (!kept && (pid == keep || inner_pid(pid) == keep)) {
			if (keep_sig)
				kill(pid, keep_sig);
			kept = true;
			pv.v[i--] = pv.v[--pv.n]; /* not one of those killed */
			continue;
		}
		others++;
		if (kill(pid, sig) == 0 && !reached_before(reached, pid))
			(*hit)++;
	}
	set_frozen(cg, false);
	if (tree)
		for_each_child(cg->dir[0], thaw_tree, NULL);
	pidvec_add(reached, pv.v, pv.n);
	qsort(reached->v, reached->n, sizeof(pid_t), cmp_pid);
	free(pv.v);
	return others;
}

/* Whether nothing but keep is left, waiting up to ms for the killed to finish exiting
 * (without freezing them again, which would hold them back). */
static bool emptied(const struct cgroup *cg, bool tree, pid_t keep, long ms)
{
	/* A killed process is gone in well under a millisecond: look often. */
	const struct timespec poll = {0, 200000};

	for (long end = now_ms() + ms;; nanosleep(&poll, NULL)) {
		struct pidvec pv = {NULL, 0};
		bool only_keep;

		collect_pids(cg, tree, &pv);
		/* At most one is keep: only a lone process needs the look at its inner pid. */
		only_keep = pv.n == 0 ||
			    (pv.n == 1 && keep && (pv.v[0] == keep || inner_pid(pv.v[0]) == keep));
		free(pv.v);
		if (only_keep)
			return true;
		if (now_ms() >= end)
			return false;
	}
}

/* Freeze, signal, thaw. A SIGKILL repeats it until nothing but keep is left: where the
 * freeze did not complete in time (thousands of forking processes, a process stuck in the
 * kernel), children forked meanwhile are caught by the next round. Bounded, so a group that
 * cannot be emptied cannot hang the daemon: it is logged. */
static int signal_dir(const struct cgroup *cg, bool tree, pid_t keep, int keep_sig, int sig)
{
	struct pidvec reached = {NULL, 0};
	long end = now_ms() + KILL_DEADLINE_MS;
	int hit = 0, rounds = 1;
	size_t left = signal_round(cg, tree, keep, keep_sig, sig, &reached, &hit);

	while (sig == SIGKILL && left && !emptied(cg, tree, keep, KILL_SETTLE_MS)) {
		if (now_ms() >= end) {
			log_warnx("cgroup %s: not empty after %d freeze-kill rounds in %d ms",
				  cg->dir[0], rounds, KILL_DEADLINE_MS);
			break;
		}
		left = signal_round(cg, tree, keep, 0, SIGKILL, &reached, &hit);
		rounds++;
	}
	free(reached.v);
	return hit;
}

size_t cgroup_pids(struct cgroup *cg, pid_t **pids)
{
	if (!cg) {
		*pids = NULL;
		return 0;
	}
	return read_pids(cg->dir[0], pids);
}

int cgroup_signal(struct cgroup *cg, pid_t keep, int sig)
{
	return cg ? signal_dir(cg, false, keep, 0, sig) : 0;
}

int cgroup_signal_keep(struct cgroup *cg, pid_t keep, int keep_sig, int sig)
{
	return cg ? signal_dir(cg, false, keep, keep_sig, sig) : 0;
}

int cgroup_kill_tree(struct cgroup *cg)
{
	return cg ? signal_dir(cg, true, 0, 0, SIGKILL) : 0;
}

void cgroup_kill_all(void)
{
	cgroup_kill_tree(root);
}

/* Removes dir's child groups first, then dir. */
static void remove_tree_at(const char *dir, void *unused)
{
	for_each_child(dir, remove_tree_at, unused);
	/* Killed processes leave the group once they have run their exit: retry briefly. */
	for (int tries = 0; tries < 100; tries++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		sleep_ms(1);
	}
	log_warn("cgroup %s", dir);
}

/* What is still inside is killed first, the whole tree in one frozen moment (the freezer,
 * or the v2 group, holds the processes; the other v1 hierarchies follow). */
static void remove_tree(const char *dir, bool with_freezer)
{
	struct cgroup one = {{(char *)dir}};

	if (with_freezer)
		signal_dir(&one, true, 0, 0, SIGKILL);
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
	rc = write_file(dir, file, value);
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

	v2_limits = write_file(parent.dir[0], "cgroup.subtree_control", "+memory +pids +cpu") == 0;
	if (!v2_limits) {
		log_warnx("cgroup v2: cannot enable controllers under %s: limits are off",
			  parent.dir[0]);
		return;
	}
	write_file(root->dir[0], "cgroup.subtree_control", "+memory +pids +cpu");
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
	if ((rc = write_file(pids_dir, "pids.max", v)) < 0)
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

void cgroup_cleanup_daemon(pid_t pid)
{
	char name[64];
	struct cgroup *dead;

	snprintf(name, sizeof(name), PREFIX "%d", (int)pid);
	dead = child_of(&parent, name, false);
	cgroup_destroy(dead);
}

/* v1 counts an OOM kill in the group of the victim only: add up the whole tree. */
static void add_oom_kills(const char *dir, void *sum)
{
	char buf[512], *p;

	if (read_file(dir, "memory.oom_control", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "oom_kill ")))
		*(long *)sum += strtol(p + 9, NULL, 10);
	for_each_child(dir, add_oom_kills, sum);
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

	if (read_file(root->dir[V1_MEMORY] ? root->dir[V1_MEMORY] : "", "memory.limit_in_bytes",
		      buf, sizeof(buf)) > 0)
		fprintf(out, "memory_max %s", buf);
	if (root->dir[V1_MEMORY] &&
	    read_file(root->dir[V1_MEMORY], "memory.usage_in_bytes", buf, sizeof(buf)) > 0)
		fprintf(out, "memory_current %s", buf);
	if (root->dir[V1_MEMORY])
		fprintf(out, "oom_kills %ld\n", v1_oom_kills(root->dir[V1_MEMORY]));
	if (root->dir[V1_PIDS] && read_file(root->dir[V1_PIDS], "pids.max", buf, sizeof(buf)) > 0)
		fprintf(out, "pids_max %s", buf);
	if (root->dir[V1_PIDS] &&
	    read_file(root->dir[V1_PIDS], "pids.current", buf, sizeof(buf)) > 0)
		fprintf(out, "pids_current %s", buf);
	if (root->dir[V1_CPU] &&
	    read_file(root->dir[V1_CPU], "cpu.cfs_quota_us", buf, sizeof(buf)) > 0)
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
		if (read_file(root->dir[0], files[i][0], buf, sizeof(buf)) > 0)
			fprintf(out, "%s %s", files[i][1], buf);
	if (read_file(root->dir[0], "memory.events", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "oom_kill ")))
		fprintf(out, "oom_kills %ld\n", strtol(p + 9, NULL, 10));
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
	cgmem_describe(out);
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
