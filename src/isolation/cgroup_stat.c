/* A group's use (cgroup_stat.h): the cgroup files first, /proc for what they lack. */
#include "cgroup_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_priv.h"

static void set(struct cg_stats *st, enum cg_stat k, uint64_t v)
{
	st->v[k] = v;
	st->has[k] = true;
}

/* One number from dir/name ("max" and a missing file: absent). */
static void read_num(const char *dir, const char *name, struct cg_stats *st, enum cg_stat k)
{
	char buf[64], *end;
	unsigned long long v;

	if (!dir || cg_read_file(dir, name, buf, sizeof(buf)) <= 0)
		return;
	v = strtoull(buf, &end, 10);
	if (end != buf && (*end == '\n' || !*end))
		set(st, k, v);
}

/* "key value" lines of dir/name: each key of keys[] into its stat. */
static void read_keyed(const char *dir, const char *name, const char *const *keys,
		       const enum cg_stat *stats, int n, struct cg_stats *st)
{
	char buf[4096], *line, *save = NULL;

	if (!dir || cg_read_file(dir, name, buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		for (int i = 0; i < n; i++) {
			size_t kl = strlen(keys[i]);

			if (!strncmp(line, keys[i], kl) && line[kl] == ' ')
				set(st, stats[i], strtoull(line + kl + 1, NULL, 10));
		}
}

/* v2's io.stat: "MAJ:MIN rbytes=N wbytes=N ..." per device, summed. */
static void read_io_v2(const char *dir, struct cg_stats *st)
{
	char buf[8192], *p;
	uint64_t r = 0, w = 0;

	if (cg_read_file(dir, "io.stat", buf, sizeof(buf)) < 0)
		return;
	for (p = buf; (p = strstr(p, "bytes=")); p += 6) {
		if (p >= buf + 1 && p[-1] == 'r')
			r += strtoull(p + 6, NULL, 10);
		else if (p >= buf + 1 && p[-1] == 'w')
			w += strtoull(p + 6, NULL, 10);
	}
	set(st, CGS_IO_READ, r);
	set(st, CGS_IO_WRITE, w);
}

static void stats_v2(const char *dir, struct cg_stats *st)
{
	static const char *const mem_keys[] = {"high", "max", "oom", "oom_kill"};
	static const enum cg_stat mem_stats[] = {CGS_EV_HIGH, CGS_EV_MAX, CGS_EV_OOM,
						 CGS_EV_OOM_KILL};
	static const char *const cpu_keys[] = {"usage_usec"};
	static const enum cg_stat cpu_stats[] = {CGS_CPU_USEC};

	read_keyed(dir, "cpu.stat", cpu_keys, cpu_stats, 1, st);
	read_num(dir, "memory.current", st, CGS_MEM);
	read_num(dir, "memory.peak", st, CGS_MEM_PEAK);
	read_num(dir, "memory.max", st, CGS_MEM_MAX);
	read_keyed(dir, "memory.events", mem_keys, mem_stats, 4, st);
	read_io_v2(dir, st);
	read_num(dir, "pids.current", st, CGS_PIDS);
	read_num(dir, "pids.max", st, CGS_PIDS_MAX);
}

static void stats_v1(const struct cgroup *cg, struct cg_stats *st)
{
	static const char *const oom_keys[] = {"oom_kill"};
	static const enum cg_stat oom_stats[] = {CGS_EV_OOM_KILL};
	const char *mem = cg->dir[V1_MEMORY];

	read_num(mem, "memory.usage_in_bytes", st, CGS_MEM);
	read_num(mem, "memory.max_usage_in_bytes", st, CGS_MEM_PEAK);
	read_num(mem, "memory.limit_in_bytes", st, CGS_MEM_MAX);
	/* the limit no one set reads as the largest page-aligned number */
	if (st->has[CGS_MEM_MAX] && st->v[CGS_MEM_MAX] >= (1ull << 62))
		st->has[CGS_MEM_MAX] = false;
	read_num(mem, "memory.failcnt", st, CGS_EV_MAX);
	read_keyed(mem, "memory.oom_control", oom_keys, oom_stats, 1, st);
	read_num(cg->dir[V1_PIDS], "pids.current", st, CGS_PIDS);
	read_num(cg->dir[V1_PIDS], "pids.max", st, CGS_PIDS_MAX);
}

/* utime + stime and the waited-for children's, in clock ticks, of /proc/PID/stat. */
static uint64_t proc_ticks(int pfd)
{
	char buf[1024], *p;
	unsigned long long ut, st, cut, cst;
	int fd = openat(pfd, "stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* past the command's name, which may hold anything but ends at the last ')' */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ut,
		   &st, &cut, &cst) != 4)
		return 0;
	return ut + st + cut + cst;
}

static void proc_io(int pfd, uint64_t *r, uint64_t *w)
{
	char buf[512], *p;
	int fd = openat(pfd, "io", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if ((p = strstr(buf, "\nread_bytes: ")))
		*r += strtoull(p + 13, NULL, 10);
	if ((p = strstr(buf, "\nwrite_bytes: ")))
		*w += strtoull(p + 14, NULL, 10);
}

static uint64_t count_fds(int pfd)
{
	int fd = openat(pfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (readdir(d))
		n++;
	closedir(d);
	return n >= 2 ? n - 2 : 0;
}

/* What the group's files lack, summed over its live processes. */
static void stats_proc(struct cgroup *cg, struct cg_stats *st)
{
	uint64_t ticks = 0, r = 0, w = 0, fds = 0;
	long hz = sysconf(_SC_CLK_TCK);
	pid_t *pids;
	size_t n = cgroup_tree_pids(cg, &pids);

	for (size_t i = 0; i < n; i++) {
		char path[32];
		int pfd;

		snprintf(path, sizeof(path), "/proc/%d", (int)pids[i]);
		if ((pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		ticks += proc_ticks(pfd);
		proc_io(pfd, &r, &w);
		fds += count_fds(pfd);
		close(pfd);
	}
	free(pids);
	set(st, CGS_OPEN_FILES, fds);
	st->from_proc[CGS_OPEN_FILES] = true;
	if (!st->has[CGS_CPU_USEC] && hz > 0) {
		set(st, CGS_CPU_USEC, ticks * 1000000 / (uint64_t)hz);
		st->from_proc[CGS_CPU_USEC] = true;
	}
	if (!st->has[CGS_IO_READ]) {
		set(st, CGS_IO_READ, r);
		set(st, CGS_IO_WRITE, w);
		st->from_proc[CGS_IO_READ] = st->from_proc[CGS_IO_WRITE] = true;
	}
}

uint64_t cgroup_pids_max_hits(const struct cgroup *cg)
{
	static const char *const keys[] = {"max"};
	static const enum cg_stat stats[] = {CGS_PIDS};
	struct cg_stats st = {0};

	if (cg)
		read_keyed(cg->dir[cg_is_v1() ? V1_PIDS : 0], "pids.events", keys, stats, 1, &st);
	return st.v[CGS_PIDS];
}

void cgroup_stats(struct cgroup *cg, struct cg_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!cg)
		return;
	if (cg_is_v1())
		stats_v1(cg, st);
	else
		stats_v2(cg->dir[0], st);
	stats_proc(cg, st);
}
