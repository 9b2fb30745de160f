/* Live limits (cgroup_live.h): parsed in the limits file's own forms, written to the sandbox's
 * group file by file, the old values kept to be written back if a later one is refused. */
#include "cgroup_live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cgroup_priv.h"
#include "config.h"

static const char *const names[CGL_N] = {"memory_max", "pids_max", "cpu_max"};

const char *cgroup_live_name(enum cg_live_key k)
{
	return names[k];
}

static bool is_max(const char *v)
{
	return !strcmp(v, "max") || !strcmp(v, "none");
}

/* A count in decimal digits only (no sign, no space), within [min, max]. */
static bool count(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;

	if (*v < '0' || *v > '9')
		return false;
	*out = strtoull(v, &end, 10);
	return !*end && *out >= min && *out <= max;
}

/* CPUs ("1.5"), v2's "QUOTA PERIOD" (QUOTA "max" for none), or "max". */
static int parse_cpu(char *v, struct cg_live *l)
{
	char *sp = strchr(v, ' '), *end;
	double cpus;

	l->cpu_period = 100000;
	l->cpu_quota = 0;
	if (is_max(v))
		return 0;
	if (sp) {
		*sp = '\0';
		if (!count(sp + 1, 1000, 1000000, &l->cpu_period))
			return -EINVAL;
		return !strcmp(v, "max") || count(v, 1000, UINT64_MAX / 2, &l->cpu_quota) ? 0
											  : -EINVAL;
	}
	cpus = strtod(v, &end);
	if (end == v || *end || !(cpus >= 0.01 && cpus <= 4096))
		return -EINVAL;
	l->cpu_quota = (uint64_t)(cpus * 100000);
	return 0;
}

static int parse_value(enum cg_live_key k, char *v, struct cg_live *l)
{
	switch (k) {
	case CGL_MEMORY:
		if (is_max(v))
			return (l->memory = 0), 0;
		return config_parse_size(v, &l->memory) < 0 || l->memory < (1u << 20) ? -EINVAL : 0;
	case CGL_PIDS:
		if (is_max(v))
			return (l->pids = 0), 0;
		return count(v, 1, UINT64_MAX / 2, &l->pids) ? 0 : -EINVAL;
	case CGL_CPU:
		return parse_cpu(v, l);
	default:
		return -EINVAL;
	}
}

int cgroup_live_parse(const char *line, size_t len, struct cg_live *l, char *why, size_t whylen)
{
	char buf[128], *sp;
	int k;

	if (len >= sizeof(buf) || memchr(line, '\0', len)) {
		snprintf(why, whylen, "not a limit line");
		return -EINVAL;
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	sp = strchr(buf, ' ');
	if (sp)
		*sp++ = '\0';
	for (k = 0; k < CGL_N && strcmp(buf, names[k]); k++)
		;
	/* v1's own line for the CPU limit: a quota of a 100 ms period, -1 for none */
	if (k == CGL_N && !strcmp(buf, "cpu_quota_us") && sp) {
		char *end;
		long long q = strtoll(sp, &end, 10);

		if (end != sp && !*end && (q == -1 || q >= 1000)) {
			l->cpu_quota = q < 0 ? 0 : (uint64_t)q;
			l->cpu_period = 100000;
			l->set[CGL_CPU] = true;
			return 0;
		}
	}
	if (k == CGL_N) {
		snprintf(why, whylen,
			 "%.40s: not a limit that can be set (memory_max, pids_max, "
			 "cpu_max or cpu_quota_us)",
			 buf);
		return -EINVAL;
	}
	if (!sp || parse_value(k, sp, l) < 0) {
		snprintf(why, whylen, "%s: a bad value (%s)", names[k],
			 k == CGL_MEMORY ? "bytes or a size like 512M, at least 1M, or max"
			 : k == CGL_PIDS ? "a count, or max"
					 : "CPUs like 1.5, QUOTA PERIOD in microseconds, or max");
		return -EINVAL;
	}
	l->set[k] = true;
	return 0;
}

/* The sandbox group's file that holds key k, and the value to write there for l. */
static const char *file_of(enum cg_live_key k, const char **dir, const struct cg_live *l, char *v,
			   size_t vlen)
{
	struct cgroup *root = cgroup_sandbox();
	bool v1 = cg_is_v1();
	static const char *const v1_files[CGL_N] = {"memory.limit_in_bytes", "pids.max",
						    "cpu.cfs_quota_us"};
	static const char *const v2_files[CGL_N] = {"memory.max", "pids.max", "cpu.max"};
	static const int v1_ctrl[CGL_N] = {V1_MEMORY, V1_PIDS, V1_CPU};

	*dir = v1 ? root->dir[v1_ctrl[k]] : root->dir[0];
	switch (k) {
	case CGL_MEMORY:
		snprintf(v, vlen, l->memory ? "%lu" : v1 ? "-1" : "max", l->memory);
		break;
	case CGL_PIDS:
		snprintf(v, vlen, l->pids ? "%lu" : "max", l->pids);
		break;
	default:
		if (v1)
			snprintf(v, vlen, l->cpu_quota ? "%lu" : "-1", l->cpu_quota);
		else if (l->cpu_quota)
			snprintf(v, vlen, "%lu %lu", l->cpu_quota, l->cpu_period);
		else
			snprintf(v, vlen, "max %lu", l->cpu_period);
	}
	return v1 ? v1_files[k] : v2_files[k];
}

int cgroup_live_apply(const struct cg_live *l, char *why, size_t whylen)
{
	char old[CGL_N][64], v[64];
	const char *dir, *file;
	int k, rc = 0;

	if (!cgroup_sandbox() || !cgroup_limits_on()) {
		snprintf(why, whylen, "no cgroup limits here (limits says why)");
		return -EOPNOTSUPP;
	}
	for (k = 0; k < CGL_N && rc == 0; k++) {
		if (!l->set[k])
			continue;
		file = file_of(k, &dir, l, v, sizeof(v));
		if (!dir || cg_read_file(dir, file, old[k], sizeof(old[k])) <= 0) {
			snprintf(why, whylen, "%s: no %s for the sandbox's group", names[k], file);
			rc = -EOPNOTSUPP;
		} else if ((rc = cg_write_file(dir, file, v)) < 0) {
			snprintf(why, whylen, "%s: the kernel refused %s (%s)%s", names[k], v,
				 strerrorname_np(-rc),
				 rc == -EBUSY ? ": the sandbox holds more than that and cannot "
						"give it back"
					      : "");
		}
	}
	/* Take back what was written before the refusal, in reverse. */
	if (rc < 0)
		for (k--; k-- > 0;)
			if (l->set[k]) {
				file = file_of(k, &dir, l, v, sizeof(v));
				old[k][strcspn(old[k], "\n")] = '\0';
				cg_write_file(dir, file, old[k]);
			}
	return rc;
}
