/* Live limits (live_limits.h). */
#include "live_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cgroup_live.h"
#include "cgroup_mem.h"
#include "config.h"
#include "journal.h"
#include "sandbox.h"
#include "session.h"

int live_limits_check(const char *line, size_t len, char *why, size_t whylen)
{
	struct cg_live l = {0};

	return len ? cgroup_live_parse(line, len, &l, why, whylen) : 0;
}

/* Each session's group gets the memory limit a new one would get under memory_max. */
static void derive_sessions(uint64_t memory_max)
{
	struct config c = *sandbox_config();
	struct session_info *ids = NULL;
	size_t n;

	c.memory_max = memory_max;
	cgroup_mem_init(config_session_memory(&c));
	n = session_list(&ids);
	for (size_t i = 0; i < n; i++) {
		struct session *s = session_find(ids[i].id);

		if (s) {
			cgroup_mem_limit_session(session_cgroup(s));
			session_unref(s);
		}
	}
	free(ids);
}

static void journal_limits(const struct cg_live *l)
{
	char v[48];
	struct jrec r;

	jrec_begin(&r, "limits.set", NULL);
	if (l->set[CGL_MEMORY]) {
		snprintf(v, sizeof(v), l->memory ? "%lu" : "max", l->memory);
		jrec_str(&r, "memory_max", v);
	}
	if (l->set[CGL_PIDS]) {
		snprintf(v, sizeof(v), l->pids ? "%lu" : "max", l->pids);
		jrec_str(&r, "pids_max", v);
	}
	if (l->set[CGL_CPU]) {
		if (l->cpu_quota)
			snprintf(v, sizeof(v), "%lu %lu", l->cpu_quota, l->cpu_period);
		else
			snprintf(v, sizeof(v), "max");
		jrec_str(&r, "cpu_max", v);
	}
	jrec_commit(&r);
}

int live_limits_apply(const char *text, size_t len, char *why, size_t whylen)
{
	struct cg_live l = {0};
	int rc = 0;

	for (const char *p = text, *nl; p < text + len && rc == 0; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			nl = text + len;
		if (nl > p)
			rc = cgroup_live_parse(p, (size_t)(nl - p), &l, why, whylen);
	}
	if (rc == 0)
		rc = cgroup_live_apply(&l, why, whylen);
	if (rc < 0)
		return rc;
	if (l.set[CGL_MEMORY])
		derive_sessions(l.memory);
	journal_limits(&l);
	return 0;
}
