/* The daemon's settings: built-in defaults (conf/sbxfs.ini documents the same values), the ini
 * file read with inih, and command-line overrides; unknown keys are errors so typos surface. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "envlist.h"
#include "xmalloc.h"

static void set_str(char **dst, const char *value)
{
	free(*dst);
	*dst = xstrdup(value);
}

static void base_env_set(struct config *cfg, const char *name, const char *value)
{
	size_t nlen = strlen(name);
	char *entry = xasprintf("%s=%s", name, value);

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		if (strncmp(cfg->base_env[i], name, nlen) == 0 && cfg->base_env[i][nlen] == '=') {
			free(cfg->base_env[i]);
			cfg->base_env[i] = entry;
			return;
		}
	}
	cfg->base_env = xrealloc(cfg->base_env, (cfg->n_base_env + 2) * sizeof(char *));
	cfg->base_env[cfg->n_base_env++] = entry;
	cfg->base_env[cfg->n_base_env] = NULL;
}

static void base_env_unset(struct config *cfg, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		if (strncmp(cfg->base_env[i], name, nlen) == 0 && cfg->base_env[i][nlen] == '=') {
			free(cfg->base_env[i]);
			memmove(&cfg->base_env[i], &cfg->base_env[i + 1],
				(cfg->n_base_env - i) * sizeof(char *));
			cfg->n_base_env--;
			return;
		}
	}
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->workspace = xstrdup("/var/lib/sbxfs/workspace");
	cfg->state_dir = xstrdup("/var/lib/sbxfs/state");
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
	cfg->env_value_max = 128ull << 10;
	cfg->env_max = 1ull << 20;
	cfg->term_ring = 1ull << 20;
	cfg->term_wait_ms = 30000;
	cfg->isolate = true;
	cfg->user = xstrdup("");
	cfg->host_network = false;
	cfg->idmap = true;
	cfg->memory_max = 4ull << 30;
	cfg->pids_max = 4096;
	cfg->cpu_max = 0;
	cfg->tmp_size = 1ull << 30;
	cfg->shm_size = 256ull << 20;
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
	cfg->log_max = 10ull << 20;
	cfg->spool_max = 4ull << 30;
	cfg->workspace_max = 0;
	base_env_set(cfg, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	base_env_set(cfg, "LANG", "C.UTF-8");
	base_env_set(cfg, "TERM", "dumb");
}

static int parse_bool(const char *value, bool *out)
{
	if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcmp(value, "1")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(value, "no") || !strcasecmp(value, "false") || !strcmp(value, "0")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_seconds(const char *value, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(value, &end);
	if (errno || end == value || *end || !(d >= 0 && d <= 86400)) /* NaN too */
		return -EINVAL;
	*out = d;
	return 0;
}

static int parse_u64(const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static void free_list(char **list)
{
	for (size_t i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}

/* "/a:/b" into a NULL-terminated list; every entry an absolute path, "" for none. */
static int parse_roots(const char *value, char ***out)
{
	char *copy = xstrdup(value), *p = copy, *part;
	char **list = xcalloc(1, sizeof(char *));
	size_t n = 0;
	int rc = 0;

	while (value[0] && rc == 0 && (part = strsep(&p, ":"))) {
		if (part[0] != '/') {
			rc = -EINVAL;
			break;
		}
		list = xrealloc(list, (n + 2) * sizeof(char *));
		list[n++] = xstrdup(part);
		list[n] = NULL;
	}
	free(copy);
	if (rc < 0) {
		free_list(list);
		return rc;
	}
	free_list(*out);
	*out = list;
	return 0;
}

static int set_main(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "workspace"))
		set_str(&cfg->workspace, value);
	else if (!strcmp(key, "state_dir"))
		set_str(&cfg->state_dir, value);
	else if (!strcmp(key, "launcher"))
		set_str(&cfg->launcher, value);
	else if (!strcmp(key, "log_level"))
		return log_level_parse(value, &cfg->log_level);
	else if (!strcmp(key, "cgroup")) {
		if (strcmp(value, "auto") && strcmp(value, "v1") && strcmp(value, "v2") &&
		    strcmp(value, "none"))
			return -EINVAL;
		set_str(&cfg->cgroup, value);
	} else if (!strcmp(key, "log_max"))
		return config_parse_size(value, &cfg->log_max);
	else
		return -ENOENT;
	return 0;
}

/* A size as config_parse_size reads it, within [min, max] ("max" is no size here). */
static int parse_size_in(const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (config_parse_size(value, &v) < 0 || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int set_session(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "shell"))
		set_str(&cfg->shell, value);
	else if (!strcmp(key, "path"))
		base_env_set(cfg, "PATH", value);
	else if (!strcmp(key, "home") && !value[0])
		base_env_unset(cfg, "HOME"); /* the workspace, as commands see it */
	else if (!strcmp(key, "home"))
		base_env_set(cfg, "HOME", value);
	else if (!strcmp(key, "lang"))
		base_env_set(cfg, "LANG", value);
	else if (!strcmp(key, "timeout_ms"))
		return parse_u64(value, 0, UINT32_MAX, &cfg->timeout_ms);
	else if (!strcmp(key, "kill_grace_ms"))
		return parse_u64(value, 0, 3600000, &cfg->kill_grace_ms);
	else if (!strcmp(key, "history")) {
		uint64_t v;

		if (parse_u64(value, 1, 100000, &v) < 0)
			return -EINVAL;
		cfg->history = (unsigned)v;
	} else if (!strcmp(key, "output_cap"))
		return parse_u64(value, 1, UINT64_MAX >> 2, &cfg->output_cap);
	else if (!strcmp(key, "git_timeout_ms"))
		return parse_u64(value, 1, UINT32_MAX, &cfg->git_timeout_ms);
	else if (!strcmp(key, "git_allow_private"))
		return parse_bool(value, &cfg->git_allow_private);
	else if (!strcmp(key, "git_local_roots"))
		return parse_roots(value, &cfg->git_local_roots);
	else if (!strcmp(key, "env_value_max"))
		return parse_size_in(value, 2, ENV_STRING_LIMIT, &cfg->env_value_max);
	else if (!strcmp(key, "env_max"))
		return parse_size_in(value, 2, UINT32_MAX, &cfg->env_max);
	else if (!strcmp(key, "spool_max"))
		return config_parse_size(value, &cfg->spool_max);
	else if (!strcmp(key, "term_ring"))
		return parse_size_in(value, 1, 1ull << 30, &cfg->term_ring);
	else if (!strcmp(key, "term_wait_ms"))
		return parse_u64(value, 1, UINT32_MAX, &cfg->term_wait_ms);
	else
		return -ENOENT;
	return 0;
}

int config_parse_size(const char *value, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!strcmp(value, "max")) {
		*out = 0;
		return 0;
	}
	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || value[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int set_choice(const char *value, const char *yes, const char *no, bool *out)
{
	if (!strcmp(value, yes))
		*out = true;
	else if (!strcmp(value, no))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

/* "FIRST-LAST", inclusive: above root, and never (uid_t)-1, which is no id. */
static int parse_id_range(const char *value, uint32_t *first, uint32_t *last)
{
	const char *dash = strchr(value, '-');
	char *head;
	uint64_t a, b;
	int rc;

	if (!dash)
		return -EINVAL;
	head = xstrndup(value, (size_t)(dash - value));
	rc = parse_u64(head, 1, UINT32_MAX - 1, &a);
	free(head);
	if (rc < 0 || parse_u64(dash + 1, a, UINT32_MAX - 1, &b) < 0)
		return -EINVAL;
	*first = (uint32_t)a;
	*last = (uint32_t)b;
	return 0;
}

/* A number, max (or 0) for none, or a percentage of pids_max ("50%"). A bad value changes
 * nothing. */
static int set_session_pids(struct config *cfg, const char *value)
{
	size_t len = strlen(value);
	uint64_t n = 0, pct = 0;
	int rc = 0;

	if (len > 0 && value[len - 1] == '%') {
		char *num = xstrndup(value, len - 1);

		rc = parse_u64(num, 1, 100, &pct);
		free(num);
	} else if (strcmp(value, "max")) {
		rc = parse_u64(value, 0, 1u << 22, &n);
	}
	if (rc < 0)
		return rc;
	cfg->session_pids_max = n;
	cfg->session_pids_pct = (unsigned)pct;
	return 0;
}

uint64_t config_session_pids(const struct config *cfg)
{
	uint64_t n;

	if (!cfg->session_pids_pct)
		return cfg->session_pids_max;
	n = cfg->pids_max * cfg->session_pids_pct / 100;
	return cfg->pids_max && !n ? 1 : n;
}

static int set_sandbox(struct config *cfg, const char *key, const char *value)
{
	char *end;

	if (!strcmp(key, "isolation"))
		return set_choice(value, "bwrap", "none", &cfg->isolate);
	if (!strcmp(key, "network"))
		return set_choice(value, "host", "none", &cfg->host_network);
	if (!strcmp(key, "idmap"))
		return set_choice(value, "user", "none", &cfg->idmap);
	if (!strcmp(key, "user")) {
		set_str(&cfg->user, value);
		return 0;
	}
	if (!strcmp(key, "memory_max"))
		return config_parse_size(value, &cfg->memory_max);
	if (!strcmp(key, "pids_max"))
		return !strcmp(value, "max") ? (cfg->pids_max = 0, 0)
					     : parse_u64(value, 1, 1u << 22, &cfg->pids_max);
	if (!strcmp(key, "cpu_max")) {
		if (!strcmp(value, "max")) {
			cfg->cpu_max = 0;
			return 0;
		}
		cfg->cpu_max = strtod(value, &end);
		/* written so that NaN fails too */
		return (*end || end == value || !(cfg->cpu_max > 0 && cfg->cpu_max <= 4096))
			   ? -EINVAL
			   : 0;
	}
	if (!strcmp(key, "tmp_size"))
		return config_parse_size(value, &cfg->tmp_size);
	if (!strcmp(key, "shm_size"))
		return config_parse_size(value, &cfg->shm_size);
	if (!strcmp(key, "uid_range"))
		return parse_id_range(value, &cfg->uid_first, &cfg->uid_last);
	if (!strcmp(key, "workspace_max"))
		return config_parse_size(value, &cfg->workspace_max);
	if (!strcmp(key, "memory_reserve"))
		return config_parse_size(value, &cfg->memory_reserve);
	if (!strcmp(key, "session_pids_max"))
		return set_session_pids(cfg, value);
	return -ENOENT;
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

int config_check(const struct config *cfg, char *err, size_t errlen)
{
	uint64_t session_max = config_session_memory(cfg);

	if (check_base_env(cfg, err, errlen) < 0)
		return -EINVAL;
	/* tmpfs pages are charged to the sandbox and cannot be reclaimed: a full /tmp must not
	 * be able to take the whole memory limit. */
	if (cfg->memory_max && cfg->tmp_size + cfg->shm_size >= cfg->memory_max) {
		snprintf(err, errlen,
			 "[sandbox] tmp_size + shm_size (%llu) must stay below memory_max (%llu)",
			 (unsigned long long)(cfg->tmp_size + cfg->shm_size),
			 (unsigned long long)cfg->memory_max);
		return -EINVAL;
	}
	/* The same within a session: what it writes there is charged to its own group. */
	if (session_max && cfg->tmp_size + cfg->shm_size >= session_max) {
		snprintf(err, errlen,
			 "[sandbox] tmp_size + shm_size (%llu) must stay below a session's memory "
			 "limit, memory_max - memory_reserve (%llu)",
			 (unsigned long long)(cfg->tmp_size + cfg->shm_size),
			 (unsigned long long)session_max);
		return -EINVAL;
	}
	return 0;
}

static int set_workspace(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "cache"))
		return parse_bool(value, &cfg->ws_cache);
	if (!strcmp(key, "cache_timeout"))
		return parse_seconds(value, &cfg->ws_timeout);
	if (!strcmp(key, "passthrough"))
		return parse_bool(value, &cfg->ws_passthrough);
	if (!strcmp(key, "mount"))
		return set_choice(value, "kernel", "fuse", &cfg->ws_kernel);
	if (!strcmp(key, "host_symlinks"))
		return set_choice(value, "follow", "nofollow", &cfg->ws_symfollow);
	if (!strcmp(key, "max_fds"))
		return parse_u64(value, 0, 1u << 30, &cfg->ws_max_fds);
	return -ENOENT;
}

int config_set(struct config *cfg, const char *section, const char *key, const char *value,
	       char *err, size_t errlen)
{
	int rc;

	if (!strcmp(section, "sbxfs"))
		rc = set_main(cfg, key, value);
	else if (!strcmp(section, "session"))
		rc = set_session(cfg, key, value);
	else if (!strcmp(section, "workspace"))
		rc = set_workspace(cfg, key, value);
	else if (!strcmp(section, "sandbox"))
		rc = set_sandbox(cfg, key, value);
	else if (!strcmp(section, "env")) {
		rc = env_name_valid(key, strlen(key)) ? 0 : -EINVAL;
		if (rc == 0)
			base_env_set(cfg, key, value);
	} else {
		snprintf(err, errlen, "unknown section [%s]", section);
		return -EINVAL;
	}
	if (rc == -ENOENT)
		snprintf(err, errlen, "unknown key '%s' in [%s]", key, section);
	else if (rc < 0)
		snprintf(err, errlen, "bad value '%s' for %s in [%s]", value, key, section);
	return rc < 0 ? -EINVAL : 0;
}

struct load_ctx {
	struct config *cfg;
	char *err;
	size_t errlen;
	int rc;
};

static int load_handler(void *user, const char *section, const char *key, const char *value)
{
	struct load_ctx *ctx = user;

	if (ctx->rc)
		return 0;
	ctx->rc = config_set(ctx->cfg, section, key, value, ctx->err, ctx->errlen);
	return ctx->rc == 0;
}

/* inih reads a line in pieces of its buffer's size and takes what does not fit for a line of
 * its own, where a long value's tail could set a key of its choosing; and it reads a line only
 * up to a NUL byte, so text after one would be skipped. So a line longer than the buffer, or
 * with a NUL byte, ends the parse (as an end of file would), and the load fails. */
struct line_reader {
	FILE *f;
	int line;
	int bad;	 /* the first such line, 0: none */
	const char *why; /* what is wrong with it */
	char why_buf[48];
};

/* inih reads an indented line as more of the previous key's value, and hands it over as that
 * key set again: "a = 1" then "  2" would set a to 2, and a value could grow past what fits on
 * a line. Here an indented line is a line like any other. */
static char *skip_indent(char *str, int n)
{
	int k = 0;

	while (k < n && (str[k] == ' ' || str[k] == '\t' || str[k] == '\v' || str[k] == '\f' ||
			 str[k] == '\r'))
		k++;
	memmove(str, str + k, (size_t)(n - k) + 1);
	return str;
}

static char *read_line(char *str, int num, void *stream)
{
	struct line_reader *r = stream;
	int c = EOF, n = 0;

	if (r->bad)
		return NULL;
	while (n < num - 1 && (c = getc(r->f)) != EOF) {
		if (c == '\0') {
			r->bad = r->line + 1;
			r->why = "has a NUL byte";
			return NULL;
		}
		str[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0)
		return NULL;
	str[n] = '\0';
	r->line++;
	if (n == num - 1 && str[n - 1] != '\n' && (c = getc(r->f)) != EOF) {
		ungetc(c, r->f);
		r->bad = r->line;
		snprintf(r->why_buf, sizeof(r->why_buf), "longer than %d bytes", num - 2);
		r->why = r->why_buf;
		return NULL;
	}
	return skip_indent(str, n);
}

int config_load(struct config *cfg, const char *path, char *err, size_t errlen)
{
	struct load_ctx ctx = {cfg, err, errlen, 0};
	struct line_reader r = {.f = fopen(path, "r")};
	char reason[256] = "";
	int line;

	if (!r.f) {
		int e = errno ? errno : ENOENT;

		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
		return -e;
	}
	ctx.err = reason;
	ctx.errlen = sizeof(reason);
	line = ini_parse_stream(read_line, &r, load_handler, &ctx);
	fclose(r.f);
	if (line == 0 && r.bad) {
		snprintf(err, errlen, "%s:%d: %s", path, r.bad, r.why);
		return -EINVAL;
	}
	if (line != 0) {
		snprintf(err, errlen, "%s:%d: %s", path, line, reason[0] ? reason : "syntax error");
		return -EINVAL;
	}
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
	free_list(cfg->git_local_roots);
	for (size_t i = 0; i < cfg->n_base_env; i++)
		free(cfg->base_env[i]);
	free(cfg->base_env);
	memset(cfg, 0, sizeof(*cfg));
}
