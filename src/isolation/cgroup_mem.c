/* Memory limits of sessions, OOM accounting and OOM watches (see cgroup_mem.h), on the groups
 * cgroup.c made: cgroup v1's memory.limit_in_bytes and memory.oom_control (with an eventfd
 * through cgroup.event_control), or v2's memory.max and memory.events(.local) (polled). */
#include "cgroup_mem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cgroup.h"
#include "fdres.h"
#include "log.h"
#include "loop.h"
#include "xmalloc.h"

/* v1 notifies before the kill, so the victim is counted a moment later (later still on a busy
 * machine): fn runs soon after the event and once more a while after. */
#define OOM_SETTLE_MS  2
#define OOM_RECHECK_MS 50

struct cgroup_mem_watch {
	int fd; /* v1: the eventfd; v2: memory.events.local */
	struct loop_fd *lf;
	struct loop_timer settle;
	bool rechecked; /* the settle timer's second run is done */
	void (*fn)(void *arg);
	void *arg;
};

static uint64_t session_max;

void cgroup_mem_init(uint64_t max)
{
	session_max = max;
}

static bool is_v1(void)
{
	return !strcmp(cgroup_mode(), "v1");
}

static int write_value(const char *dir, const char *name, uint64_t value)
{
	char *path = xasprintf("%s/%s", dir, name), text[32];
	int fd = fdres_open(path, O_WRONLY, 0), rc = 0;

	free(path);
	if (fd < 0)
		return fd;
	snprintf(text, sizeof(text), "%llu", (unsigned long long)value);
	if (write(fd, text, strlen(text)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

void cgroup_mem_limit(struct cgroup *cg, uint64_t max)
{
	const char *dir = cgroup_memory_dir(cg);
	int rc;

	if (!dir || !max)
		return;
	rc = write_value(dir, is_v1() ? "memory.limit_in_bytes" : "memory.max", max);
	/* No such file: v2 has no memory controller there, its parent's limit is the one. */
	if (rc < 0 && rc != -ENOENT)
		log_warnx("cgroup %s: memory limit: %s", dir, strerror(-rc));
}

void cgroup_mem_limit_session(struct cgroup *cg)
{
	cgroup_mem_limit(cg, session_max);
}

/* The "oom_kill N" line of a group's file (v1 memory.oom_control, v2 memory.events). */
static uint64_t read_oom_kill(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), buf[1024], *p;
	int fd = fdres_open(path, O_RDONLY, 0);
	ssize_t n;

	free(path);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "oom_kill ");
	return p ? strtoull(p + 9, NULL, 10) : 0;
}

/* v1 counts a kill in the victim's group only: the tree is the sum of its groups. */
static uint64_t v1_tree_kills(const char *dir)
{
	uint64_t sum = read_oom_kill(dir, "memory.oom_control");
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", dir, de->d_name);
		sum += v1_tree_kills(sub);
		free(sub);
	}
	if (d)
		closedir(d);
	return sum;
}

uint64_t cgroup_mem_oom_kills(const struct cgroup *cg, bool tree)
{
	const char *dir = cgroup_memory_dir(cg);

	if (!dir)
		return 0;
	if (is_v1())
		return tree ? v1_tree_kills(dir) : read_oom_kill(dir, "memory.oom_control");
	return read_oom_kill(dir, tree ? "memory.events" : "memory.events.local");
}

static void settled(struct loop_timer *t)
{
	struct cgroup_mem_watch *w = container_of(t, struct cgroup_mem_watch, settle);

	if (!w->rechecked)
		loop_timer_arm(&w->settle, OOM_RECHECK_MS);
	w->rechecked = !w->rechecked;
	w->fn(w->arg);
}

static void on_event(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct cgroup_mem_watch *w = arg;
	char buf[1024];

	(void)lf;
	(void)events;
	/* Consumes the event: the eventfd's count, or (v2) marks the change as seen. */
	if ((is_v1() ? read(w->fd, buf, sizeof(buf)) : pread(w->fd, buf, sizeof(buf), 0)) < 0 &&
	    errno != EAGAIN)
		log_warn("OOM watch");
	if (!w->settle.armed || w->rechecked) { /* not during the first wait, which it joins */
		w->settle.fn = settled;
		w->rechecked = false;
		loop_timer_arm(&w->settle, OOM_SETTLE_MS);
	}
}

/* v1: an eventfd registered on memory.oom_control through cgroup.event_control. */
static int v1_event_fd(const char *dir)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ofd, cfd, rc;
	char *path, line[64];

	if (efd < 0)
		return -errno;
	path = xasprintf("%s/memory.oom_control", dir);
	ofd = fdres_open(path, O_RDONLY, 0);
	free(path);
	path = xasprintf("%s/cgroup.event_control", dir);
	rc = cfd = ofd < 0 ? ofd : fdres_open(path, O_WRONLY, 0);
	free(path);
	if (cfd >= 0) {
		snprintf(line, sizeof(line), "%d %d", efd, ofd);
		rc = write(cfd, line, strlen(line)) < 0 ? -errno : 0;
		close(cfd);
	}
	if (ofd >= 0)
		close(ofd); /* the registration keeps what it needs */
	if (rc < 0) {
		close(efd);
		return rc;
	}
	return efd;
}

struct cgroup_mem_watch *cgroup_mem_watch(struct cgroup *cg, void (*fn)(void *arg), void *arg)
{
	const char *dir = cgroup_memory_dir(cg);
	struct cgroup_mem_watch *w;
	char *path;
	int fd;

	if (!dir)
		return NULL;
	if (is_v1()) {
		fd = v1_event_fd(dir);
	} else {
		path = xasprintf("%s/memory.events.local", dir);
		fd = fdres_open(path, O_RDONLY, 0);
		free(path);
	}
	if (fd < 0) {
		log_warnx("cgroup %s: no OOM watch: %s", dir, strerror(-fd));
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	w->lf = loop_add_fd(fd, is_v1() ? EPOLLIN : EPOLLPRI, on_event, w);
	return w;
}

void cgroup_mem_unwatch(struct cgroup_mem_watch *w)
{
	if (!w)
		return;
	loop_del_fd(w->lf);
	loop_timer_cancel(&w->settle);
	close(w->fd);
	free(w);
}

void cgroup_mem_describe(FILE *out)
{
	if (session_max && cgroup_memory_dir(cgroup_launcher()))
		fprintf(out, "session_memory_max %llu\n", (unsigned long long)session_max);
}
