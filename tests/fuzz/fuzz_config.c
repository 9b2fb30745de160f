/* Fuzz target: config files (src/core/config.c over inih), read through config_load as the daemon
 * reads /etc/sbxfs/sbxfs.ini (from a memfd). Properties: a file that loads leaves every value in
 * its documented range (no NaN), a valid base environment, and written back out as an ini file
 * loads to the same settings; a file that fails says why. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "envlist.h"
#include "fuzz.h"
#include "xmalloc.h"

static int memfd = -1;
static char path[64];

static int load(const char *text, size_t len, struct config *cfg, char *err, size_t errlen)
{
	FUZZ_ASSERT(ftruncate(memfd, 0) == 0);
	FUZZ_ASSERT(pwrite(memfd, text, len, 0) == (ssize_t)len);
	config_defaults(cfg);
	err[0] = '\0';
	return config_load(cfg, path, err, errlen);
}

static const char *yes(bool b, const char *y, const char *n)
{
	return b ? y : n;
}

/* Every setting as an ini file: the base environment as [env] over the defaults' names. */
static char *write_back(const struct config *c, size_t *len)
{
	static const char *levels[] = {"error", "warn", "info", "debug"};
	static const char *idmaps[] = {"none", "handover", "user"};
	char *out;
	char *env = xstrdup(""), *roots = xstrdup(""), *t, pids[32], cpus[40], spids[32];
	char tmp[32] = "auto", shm[32] = "auto";

	for (size_t i = 0; i < c->n_base_env; i++) {
		const char *eq = strchr(c->base_env[i], '=');

		t = xasprintf("%s%.*s=%s\n", env, (int)(eq - c->base_env[i]), c->base_env[i],
			      eq + 1);
		free(env);
		env = t;
	}
	for (size_t i = 0; c->git_local_roots[i]; i++) {
		t = xasprintf("%s%s%s", roots, i ? ":" : "", c->git_local_roots[i]);
		free(roots);
		roots = t;
	}
	/* 0 is no limit, which these keys spell max */
	snprintf(pids, sizeof(pids), "%llu", (unsigned long long)c->pids_max);
	snprintf(cpus, sizeof(cpus), "%.17g", c->cpu_max);
	if (c->tmp_size != CONFIG_SIZE_AUTO)
		snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)c->tmp_size);
	if (c->shm_size != CONFIG_SIZE_AUTO)
		snprintf(shm, sizeof(shm), "%llu", (unsigned long long)c->shm_size);
	out = xasprintf(
	    "[sbxfs]\nworkspace=%s\nstate_dir=%s\nlauncher=%s\nlog_level=%s\ncgroup=%s\n"
	    "[session]\nshell=%s\ntimeout_ms=%llu\nkill_grace_ms=%llu\nhistory=%u\n"
	    "output_cap=%llu\ngit_timeout_ms=%llu\ngit_allow_private=%s\ngit_local_roots=%s\n"
	    "[sandbox]\nisolation=%s\nuser=%s\nnetwork=%s\nidmap=%s\nmemory_max=%llu\n"
	    "pids_max=%s\ncpu_max=%s\ntmp_size=%s\nshm_size=%s\n"
	    "[workspace]\ncache=%s\ncache_timeout=%.17g\npassthrough=%s\nmount=%s\n"
	    "host_symlinks=%s\nmax_fds=%llu\n[network]\nallow_private=%s\nconnections_max=%llu\n"
	    "[env]\n%s",
	    c->workspace, c->state_dir, c->launcher, levels[c->log_level], c->cgroup, c->shell,
	    (unsigned long long)c->timeout_ms, (unsigned long long)c->kill_grace_ms, c->history,
	    (unsigned long long)c->output_cap, (unsigned long long)c->git_timeout_ms,
	    yes(c->git_allow_private, "yes", "no"), roots, yes(c->isolate, "bwrap", "none"),
	    c->user, net_mode_name(c->net_mode), idmaps[c->idmap],
	    (unsigned long long)c->memory_max, c->pids_max ? pids : "max",
	    c->cpu_max ? cpus : "max", tmp, shm, yes(c->ws_cache, "yes", "no"), c->ws_timeout,
	    yes(c->ws_passthrough, "yes", "no"), yes(c->ws_kernel, "kernel", "fuse"),
	    yes(c->ws_symfollow, "follow", "nofollow"), (unsigned long long)c->ws_max_fds,
	    yes(c->net_allow_private, "yes", "no"), (unsigned long long)c->net_conns_max, env);
	if (c->session_pids_pct)
		snprintf(spids, sizeof(spids), "%u%%", c->session_pids_pct);
	else
		snprintf(spids, sizeof(spids), "%llu", (unsigned long long)c->session_pids_max);
	/* sections may come again: the bounds and ids, apart */
	t = xasprintf("%s[sbxfs]\nlog_max=%llu\n[session]\nspool_max=%llu\nenv_value_max=%llu\n"
		      "env_max=%llu\n[sandbox]\nuid_range=%u-%u\nworkspace_max=%llu\n"
		      "memory_reserve=%llu\nsession_pids_max=%s\n[session]\nterm_ring=%llu\n"
		      "term_wait_ms=%llu\nterms_max=%llu\nterm_cells_max=%llu\n",
		      out, (unsigned long long)c->log_max, (unsigned long long)c->spool_max,
		      (unsigned long long)c->env_value_max, (unsigned long long)c->env_max,
		      c->uid_first, c->uid_last, (unsigned long long)c->workspace_max,
		      (unsigned long long)c->memory_reserve, spids,
		      (unsigned long long)c->term_ring, (unsigned long long)c->term_wait_ms,
		      (unsigned long long)c->terms_max, (unsigned long long)c->term_cells_max);
	free(out);
	free(env);
	free(roots);
	*len = strlen(t);
	return t;
}

static void check_ranges(const struct config *c)
{
	FUZZ_ASSERT(c->history >= 1 && c->history <= 100000);
	FUZZ_ASSERT(c->cpu_max >= 0 && c->cpu_max <= 4096); /* false for NaN */
	FUZZ_ASSERT(c->ws_timeout >= 0 && c->ws_timeout <= 86400);
	FUZZ_ASSERT(c->output_cap >= 1 && c->git_timeout_ms >= 1);
	FUZZ_ASSERT(c->env_value_max >= 2 && c->env_value_max <= ENV_STRING_LIMIT);
	FUZZ_ASSERT(c->env_max >= 2 && c->uid_first <= c->uid_last);
	FUZZ_ASSERT(c->log_level <= LOG_LVL_DEBUG);
	FUZZ_ASSERT(c->base_env[c->n_base_env] == NULL);
	for (size_t i = 0; c->git_local_roots[i]; i++)
		FUZZ_ASSERT(c->git_local_roots[i][0] == '/' && !strchr(c->git_local_roots[i], ':'));
	for (size_t i = 0; i < c->n_base_env; i++) {
		const char *eq = strchr(c->base_env[i], '=');

		FUZZ_ASSERT(eq && env_name_valid(c->base_env[i], (size_t)(eq - c->base_env[i])));
		for (size_t k = 0; k < i; k++)
			FUZZ_ASSERT(strncmp(c->base_env[k], c->base_env[i],
					    (size_t)(eq - c->base_env[i]) + 1));
	}
}

#define SAME(f)	    FUZZ_ASSERT(a->f == b->f)
#define SAME_STR(f) FUZZ_ASSERT(!strcmp(a->f, b->f))

static void check_same(const struct config *a, const struct config *b)
{
	SAME_STR(workspace), SAME_STR(state_dir), SAME_STR(launcher), SAME(log_level);
	SAME_STR(cgroup), SAME_STR(shell), SAME(timeout_ms), SAME(kill_grace_ms), SAME(history);
	SAME(output_cap), SAME(git_timeout_ms), SAME(isolate), SAME_STR(user);
	SAME(net_mode), SAME(idmap), SAME(memory_max), SAME(pids_max), SAME(cpu_max);
	SAME(tmp_size), SAME(shm_size), SAME(ws_cache), SAME(ws_timeout), SAME(ws_passthrough);
	SAME(ws_kernel), SAME(ws_symfollow), SAME(ws_max_fds), SAME(n_base_env);
	for (size_t i = 0; i < a->n_base_env; i++)
		SAME_STR(base_env[i]);
	SAME(git_allow_private), SAME(net_allow_private), SAME(net_conns_max);
	SAME(log_max), SAME(spool_max), SAME(env_value_max), SAME(env_max), SAME(uid_first);
	SAME(uid_last), SAME(workspace_max), SAME(memory_reserve), SAME(session_pids_max);
	SAME(session_pids_pct), SAME(term_ring), SAME(term_wait_ms), SAME(terms_max);
	SAME(term_cells_max);
	for (size_t i = 0; a->git_local_roots[i] || b->git_local_roots[i]; i++)
		FUZZ_ASSERT(a->git_local_roots[i] && b->git_local_roots[i] &&
			    !strcmp(a->git_local_roots[i], b->git_local_roots[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg, again;
	char err[512], err2[512], *text;
	size_t len;
	int rc;

	if (memfd < 0) {
		memfd = memfd_create("fuzz_config", 0);
		FUZZ_ASSERT(memfd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	rc = load((const char *)data, size, &cfg, err, sizeof(err));
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		FUZZ_ASSERT(err[0]);
		config_free(&cfg);
		return 0;
	}
	check_ranges(&cfg);
	config_check(&cfg, err, sizeof(err));
	text = write_back(&cfg, &len);
	if (load(text, len, &again, err2, sizeof(err2)) < 0) {
		fprintf(stderr, "%s\n---\n%s\n", err2, text);
		FUZZ_ASSERT(!"the written-back settings load");
	}
	check_same(&cfg, &again);
	free(text);
	config_free(&again);
	config_free(&cfg);
	return 0;
}
