/* Memory limits of sessions and OOM accounting (see cgmem.h), on the groups cgroup.c made:
 * cgroup v1's memory.limit_in_bytes and memory.oom_control, or v2's memory.max and
 * memory.events(.local). */
#include "cgmem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "fdres.h"
#include "log.h"
#include "xmalloc.h"

static uint64_t session_max;

void cgmem_init(uint64_t max)
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

void cgmem_limit_session(struct cgroup *cg)
{
	const char *dir = cgroup_memory_dir(cg);
	int rc;

	if (!dir || !session_max)
		return;
	rc = write_value(dir, is_v1() ? "memory.limit_in_bytes" : "memory.max", session_max);
	if (rc < 0)
		log_warnx("cgroup %s: session memory limit: %s", dir, strerror(-rc));
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

uint64_t cgmem_oom_kills(const struct cgroup *cg, bool tree)
{
	const char *dir = cgroup_memory_dir(cg);

	if (!dir)
		return 0;
	if (is_v1())
		return tree ? v1_tree_kills(dir) : read_oom_kill(dir, "memory.oom_control");
	return read_oom_kill(dir, tree ? "memory.events" : "memory.events.local");
}

void cgmem_describe(FILE *out)
{
	if (session_max && cgroup_memory_dir(cgroup_launcher()))
		fprintf(out, "session_memory_max %llu\n", (unsigned long long)session_max);
}
