/* The daemon's settings: built-in defaults (conf/sbxfs.ini documents the same values), the
 * checks across keys, and the limits derived from them. Setting keys is config_set.c's, loading
 * the ini file config_load.c's. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_priv.h"
#include "journal.h"
#include "xmalloc.h"

/* The index of name's entry in base_env, or n_base_env. */
static size_t base_env_find(const struct config *cfg, const char *name)
{
	size_t nlen = strlen(name), i;

	for (i = 0; i < cfg->n_base_env; i++)
		if (strncmp(cfg->base_env[i], name, nlen) == 0 && cfg->base_env[i][nlen] == '=')
			break;
	return i;
}

void config_base_env_set(struct config *cfg, const char *name, const char *value)
{
	size_t i = base_env_find(cfg, name);
	char *entry = xasprintf("%s=%s", name, value);

	if (i < cfg->n_base_env) {
		free(cfg->base_env[i]);
		cfg->base_env[i] = entry;
		return;
	}
	cfg->base_env = xrealloc(cfg->base_env, (cfg->n_base_env + 2) * sizeof(char *));
	cfg->base_env[cfg->n_base_env++] = entry;
	cfg->base_env[cfg->n_base_env] = NULL;
}

void config_default_home(struct config *cfg, const char *home)
{
	if (base_env_find(cfg, "HOME") == cfg->n_base_env)
		config_base_env_set(cfg, "HOME", home);
}

/* An XDG base directory: the variable's value if it is absolute (the spec has relative ones
 * ignored), else HOME/fallback, HOME from the environment or else the passwd entry. */
static char *xdg_dir(const char *var, const char *fallback)
{
	const char *v = getenv(var), *home = getenv("HOME");
	struct passwd *pw;

	if (v && v[0] == '/')
		return xstrdup(v);
	if ((!home || home[0] != '/') && (pw = getpwuid(getuid())))
		home = pw->pw_dir;
	return home && home[0] == '/' ? xasprintf("%s/%s", home, fallback) : NULL;
}

char *config_default_dir(const char *name)
{
	char *base = NULL, *dir;

	if (getuid() != 0 && strcmp(name, "workspace") == 0)
		base = xdg_dir("XDG_DATA_HOME", ".local/share");
	else if (getuid() != 0)
		base = xdg_dir("XDG_STATE_HOME", ".local/state");
	if (!base)
		return xasprintf("/var/lib/sbxfs/%s", name);
	dir = xasprintf("%s/sbxfs/%s", base, name);
	free(base);
	return dir;
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->workspace = config_default_dir("workspace");
	cfg->state_dir = config_default_dir("state");
	cfg->launcher = xstrdup("");
	cfg->log_level = LOG_LVL_INFO;
	cfg->cgroup = xstrdup("auto");
	cfg->shell = xstrdup("/bin/bash");
	cfg->timeout_ms = 0;
	cfg->kill_grace_ms = 2000;
	cfg->history = 100;
	cfg->output_cap = 1ull << 30;
	cfg->git_timeout_ms = 600000;
	cfg->git_allow_private = false;
	cfg->git_local_roots = xcalloc(1, sizeof(char *));
	cfg->git_object_max = 100ull << 20;
	cfg->git_file_max = 8ull << 30;
	cfg->env_value_max = 128ull << 10;
	cfg->env_max = 1ull << 20;
	cfg->term_ring = 1ull << 20;
	cfg->term_wait_ms = 30000;
	cfg->terms_max = 64;
	/* 64 terminals of 300x100; each cell costs about 100 bytes of emulator */
	cfg->term_cells_max = 2u << 20;
	cfg->isolate = true;
	cfg->user = xstrdup("");
	cfg->net_mode = NET_NONE;
	cfg->net_allow = xstrdup("");
	cfg->net_deny = xstrdup("");
	cfg->net_conns_max = 256;
	cfg->idmap = IDMAP_HANDOVER;
	cfg->memory_max = 4ull << 30;
	cfg->pids_max = 4096;
	cfg->cpu_max = 0;
	cfg->tmp_size = CONFIG_SIZE_AUTO;
	cfg->shm_size = CONFIG_SIZE_AUTO;
	cfg->uid_first = 2000000000;
	cfg->uid_last = 2000065535;
	cfg->memory_reserve = 256ull << 20;
	cfg->session_pids_pct = 50;
	cfg->ws_cache = true;
	cfg->ws_timeout = 1.0;
	cfg->ws_passthrough = true;
	cfg->ws_kernel = true;
	cfg->ws_symfollow = false;
	cfg->ws_max_fds = 0;
	cfg->expose_address = xstrdup("127.0.0.1");
	cfg->expose_public = false;
	cfg->expose_max_ports = 32;
	cfg->expose_max_connections = 256;
	cfg->log_max = 10ull << 20;
	cfg->journal_max = JOURNAL_MAX_DEFAULT;
	cfg->spool_max = 4ull << 30;
	cfg->workspace_max = 0;
	cfg->home_max = CONFIG_SIZE_AUTO;
	cfg->snap_dir = xstrdup("");
	cfg->snap_max = 100;
	cfg->snap_space_max = 8ull << 30;
	cfg->snap_import_files = 1000000;
	cfg->snap_files_max = 1000000;
	config_base_env_set(cfg, "PATH",
			    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	config_base_env_set(cfg, "LANG", "C.UTF-8");
	config_base_env_set(cfg, "TERM", "dumb");
}

/* Appends "VERB ENTRY\n" for each comma-separated entry of list. */
static char *add_rules(char *text, const char *verb, const char *list)
{
	char *copy = xstrdup(list), *p = copy, *item;

	while ((item = strsep(&p, ","))) {
		char *next;

		item += strspn(item, " \t");
		if (!item[0])
			continue;
		next = xasprintf("%s%s %s\n", text, verb, item);
		free(text);
		text = next;
	}
	free(copy);
	return text;
}

char *config_net_policy(const struct config *cfg)
{
	char *text = xasprintf("mode %s\n", net_mode_name(cfg->net_mode));

	text = add_rules(text, "allow", cfg->net_allow);
	return add_rules(text, "deny", cfg->net_deny);
}

uint64_t config_session_pids(const struct config *cfg)
{
	uint64_t n;

	if (!cfg->session_pids_pct)
		return cfg->session_pids_max;
	n = cfg->pids_max * cfg->session_pids_pct / 100;
	return cfg->pids_max && !n ? 1 : n;
}

/* The configured env ([env], path, home, lang) within the env bounds it sets itself. */
static int check_base_env(const struct config *cfg, char *err, size_t errlen)
{
	uint64_t total = 0;

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		size_t bytes = strlen(cfg->base_env[i]) + 1;

		if (bytes > cfg->env_value_max) {
			snprintf(err, errlen,
				 "%.*s: %zu bytes, over [session] env_value_max (%llu)",
				 (int)strcspn(cfg->base_env[i], "="), cfg->base_env[i], bytes,
				 (unsigned long long)cfg->env_value_max);
			return -EFBIG;
		}
		total += bytes;
	}
	if (total > cfg->env_max) {
		snprintf(err, errlen,
			 "the configured env takes %llu bytes, over [session] env_max "
			 "(%llu)",
			 (unsigned long long)total, (unsigned long long)cfg->env_max);
		return -EFBIG;
	}
	return 0;
}

uint64_t config_session_memory(const struct config *cfg)
{
	uint64_t reserve = cfg->memory_reserve;

	if (!cfg->memory_max || !reserve)
		return 0;
	if (reserve > cfg->memory_max / 4)
		reserve = cfg->memory_max / 4;
	return cfg->memory_max - reserve;
}

static uint64_t derived(const struct config *cfg, uint64_t set, unsigned div, uint64_t cap)
{
	if (set != CONFIG_SIZE_AUTO)
		return set;
	return cfg->memory_max && cfg->memory_max / div < cap ? cfg->memory_max / div : cap;
}

uint64_t config_tmp_size(const struct config *cfg)
{
	return derived(cfg, cfg->tmp_size, 4, 1ull << 30);
}

uint64_t config_home_max(const struct config *cfg)
{
	if (cfg->home_max != CONFIG_SIZE_AUTO)
		return cfg->home_max;
	if (!cfg->workspace_max)
		return 0;
	return cfg->workspace_max / 4 > (64ull << 20) ? cfg->workspace_max / 4 : 64ull << 20;
}

uint64_t config_shm_size(const struct config *cfg)
{
	return derived(cfg, cfg->shm_size, 16, 256ull << 20);
}

/* A size as the ini file would give it: the largest unit that divides it. */
static void size_text(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%.*s", (unsigned long long)v, u >= 0, u >= 0 ? units + u : "");
}

/* Why tmp_size + shm_size does not fit below limit, the two named with where they came from. */
static int tmpfs_too_big(const struct config *cfg, const char *what, uint64_t limit, char *err,
			 size_t errlen)
{
	char tmp[32], shm[32], lim[32];

	size_text(config_tmp_size(cfg), tmp, sizeof(tmp));
	size_text(config_shm_size(cfg), shm, sizeof(shm));
	size_text(limit, lim, sizeof(lim));
	snprintf(err, errlen,
		 "[sandbox] tmp_size (%s%s) + shm_size (%s%s) must stay below %s (%s): lower "
		 "them, or leave them unset to derive them from memory_max",
		 tmp, cfg->tmp_size == CONFIG_SIZE_AUTO ? ", from memory_max" : "", shm,
		 cfg->shm_size == CONFIG_SIZE_AUTO ? ", from memory_max" : "", what, lim);
	return -EINVAL;
}

int config_expose_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len,
		       bool *loopback)
{
	struct sockaddr_storage any, *dst = ss ? ss : &any;
	struct sockaddr_in *in = (struct sockaddr_in *)dst;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)dst;

	memset(dst, 0, sizeof(*dst));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		if (len)
			*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		if (len)
			*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

/* Anyone who reaches a public expose_address reaches the sandbox's servers: only when asked. */
static int check_expose(const struct config *cfg, char *err, size_t errlen)
{
	bool loopback;

	if (config_expose_addr(cfg->expose_address, NULL, NULL, &loopback) < 0 || loopback ||
	    cfg->expose_public)
		return 0;
	snprintf(err, errlen,
		 "[network] expose_address %s is not a loopback address: anyone who reaches it "
		 "would reach the sandbox's exposed servers; set expose_public = yes to allow it",
		 cfg->expose_address);
	return -EINVAL;
}

int config_check(const struct config *cfg, char *err, size_t errlen)
{
	uint64_t session_max = config_session_memory(cfg);
	uint64_t tmpfs = config_tmp_size(cfg) + config_shm_size(cfg);

	if (check_base_env(cfg, err, errlen) < 0 || check_expose(cfg, err, errlen) < 0)
		return -EINVAL;
	if (cfg->net_mode == NET_FILTERED && !cfg->isolate) {
		snprintf(err, errlen,
			 "[sandbox] network = filtered needs isolation = bwrap: without "
			 "it, commands have the host's network");
		return -EINVAL;
	}
	/* tmpfs pages are charged to the sandbox and cannot be reclaimed: a full /tmp must not
	 * be able to take the whole memory limit. */
	if (cfg->memory_max && tmpfs >= cfg->memory_max)
		return tmpfs_too_big(cfg, "memory_max", cfg->memory_max, err, errlen);
	/* The same within a session: what it writes there is charged to its own group. */
	if (session_max && tmpfs >= session_max)
		return tmpfs_too_big(cfg, "a session's memory limit, memory_max - memory_reserve",
				     session_max, err, errlen);
	return 0;
}

void config_free(struct config *cfg)
{
	free(cfg->workspace);
	free(cfg->state_dir);
	free(cfg->launcher);
	free(cfg->shell);
	free(cfg->cgroup);
	free(cfg->user);
	free(cfg->expose_address);
	free(cfg->net_allow);
	free(cfg->net_deny);
	free(cfg->snap_dir);
	config_free_list(cfg->git_local_roots);
	for (size_t i = 0; i < cfg->n_base_env; i++)
		free(cfg->base_env[i]);
	free(cfg->base_env);
	memset(cfg, 0, sizeof(*cfg));
}
