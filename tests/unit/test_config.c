/* Unit tests: config defaults, the ini file, and errors for unknown keys and bad values. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static char *write_ini_bytes(const char *text, size_t len)
{
	static char path[] = "/tmp/sbxfs-test-config-XXXXXX";
	int fd;

	strcpy(path, "/tmp/sbxfs-test-config-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		abort();
	close(fd);
	return path;
}

static char *write_ini(const char *text)
{
	return write_ini_bytes(text, strlen(text));
}

static const char *env_of(const struct config *cfg, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < cfg->n_base_env; i++)
		if (!strncmp(cfg->base_env[i], name, n) && cfg->base_env[i][n] == '=')
			return cfg->base_env[i] + n + 1;
	return NULL;
}

static void test_defaults(void)
{
	struct config cfg;

	config_defaults(&cfg);
	CHECK(!strcmp(cfg.shell, "/bin/bash"));
	CHECK(env_of(&cfg, "TERM") && !strcmp(env_of(&cfg, "TERM"), "dumb"));
	CHECK(env_of(&cfg, "PATH") != NULL);
	CHECK(cfg.base_env[cfg.n_base_env] == NULL);
	config_free(&cfg);
}

/* The workspace and state dir an ordinary user gets: under the XDG base directories when set
 * (and absolute), else under HOME. */
static bool user_defaults_ok(void)
{
	struct config cfg;
	bool ok;

	setenv("XDG_DATA_HOME", "/x/data", 1);
	setenv("XDG_STATE_HOME", "/x/state", 1);
	config_defaults(&cfg);
	ok = !strcmp(cfg.workspace, "/x/data/sbxfs/workspace") &&
	     !strcmp(cfg.state_dir, "/x/state/sbxfs/state");
	config_free(&cfg);
	setenv("XDG_STATE_HOME", "relative", 1);
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/h", 1);
	config_defaults(&cfg);
	ok = ok && !strcmp(cfg.workspace, "/h/.local/share/sbxfs/workspace") &&
	     !strcmp(cfg.state_dir, "/h/.local/state/sbxfs/state");
	config_free(&cfg);
	return ok;
}

/* Root's defaults are /var/lib/sbxfs/{workspace,state}, another user's its own (checked in a
 * child that drops to nobody when run as root); an empty value sets the default back. */
static void test_default_dirs(void)
{
	struct config cfg, def;
	char err[256];
	int status;
	pid_t pid;

	if (getuid() != 0) {
		CHECK(user_defaults_ok());
		return;
	}
	config_defaults(&def);
	CHECK(!strcmp(def.workspace, "/var/lib/sbxfs/workspace"));
	CHECK(!strcmp(def.state_dir, "/var/lib/sbxfs/state"));
	config_defaults(&cfg);
	CHECK(config_set(&cfg, "sbxfs", "state_dir", "/s", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "sbxfs", "workspace", "/w", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "sbxfs", "state_dir", "", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "sbxfs", "workspace", "", err, sizeof(err)) == 0);
	CHECK(!strcmp(cfg.state_dir, def.state_dir) && !strcmp(cfg.workspace, def.workspace));
	config_free(&cfg);
	config_free(&def);
	pid = fork();
	if (pid == 0)
		_exit(setgid(65534) == 0 && setuid(65534) == 0 && user_defaults_ok() ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
}

static void test_load(void)
{
	struct config cfg;
	char err[256];
	char *path = write_ini("[sbxfs]\nworkspace = /tmp/ws\nlog_level = debug\n"
			       "[session]\nlang = C\n[env]\nFOO = bar baz\n"
			       "[workspace]\ncache = no\n");

	config_defaults(&cfg);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == 0);
	CHECK(!strcmp(cfg.workspace, "/tmp/ws"));
	CHECK(cfg.log_level == LOG_LVL_DEBUG);
	CHECK(!strcmp(env_of(&cfg, "LANG"), "C"));
	CHECK(!strcmp(env_of(&cfg, "FOO"), "bar baz"));
	CHECK(!cfg.ws_cache);
	unlink(path);
	config_free(&cfg);
}

static void test_errors(void)
{
	struct config cfg;
	char err[256];
	char *path;

	config_defaults(&cfg);
	path = write_ini("[sbxfs]\nworkspce = /x\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, ":2:") && strstr(err, "workspce"));
	unlink(path);
	path = write_ini("[workspace]\ncache = maybe\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	unlink(path);
	path = write_ini("[env]\n1BAD = x\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	unlink(path);
	path = write_ini("[nosuch]\na = b\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	unlink(path);
	CHECK(config_load(&cfg, "/nonexistent/sbxfs.ini", err, sizeof(err)) == -ENOENT);
	config_free(&cfg);
}

/* A line past inih's buffer would have its tail read as a line of its own: here a key. */
static void test_long_line(void)
{
	char text[512], err[256], *path;
	struct config cfg;
	int n;

	config_defaults(&cfg);
	/* inih's 200-byte buffer takes 199 bytes of the line: "A=" and 197 digits */
	n = snprintf(text, sizeof(text), "[env]\nA=%0*d", 197, 0);
	snprintf(text + n, sizeof(text) - (size_t)n, "LD_PRELOAD=/tmp/x.so\n");
	path = write_ini(text);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, ":2: longer than 198 bytes") != NULL);
	for (size_t i = 0; i < cfg.n_base_env; i++)
		CHECK(strncmp(cfg.base_env[i], "LD_PRELOAD=", 11) != 0);
	unlink(path);
	config_free(&cfg);
	config_defaults(&cfg);
	snprintf(text, sizeof(text), "[env]\nA=%0*d", 196, 0);
	path = write_ini(text);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == 0);
	unlink(path);
	config_free(&cfg);
}

/* inih reads a line only up to a NUL byte: the rest of a long one would come back as a line of
 * its own, as above, however short the part before the NUL. */
static void test_nul_byte(void)
{
	char text[512], err[256], *path;
	struct config cfg;
	int n;

	config_defaults(&cfg);
	n = snprintf(text, sizeof(text), "[env]\nA=x");
	text[n++] = '\0';
	n += snprintf(text + n, sizeof(text) - (size_t)n, "%0*dLD_PRELOAD=/tmp/x.so\n", 195, 0);
	path = write_ini_bytes(text, (size_t)n);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, ":2: has a NUL byte") != NULL);
	for (size_t i = 0; i < cfg.n_base_env; i++)
		CHECK(strncmp(cfg.base_env[i], "LD_PRELOAD=", 11) != 0);
	unlink(path);
	config_free(&cfg);
}

/* An indented line is a line of its own, never more of the key above. */
static void test_indented_lines(void)
{
	char err[256], *path;
	struct config cfg;

	config_defaults(&cfg);
	path = write_ini("[sbxfs]\nworkspace = /a\n    /b\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, ":3: ") != NULL);
	CHECK(!strcmp(cfg.workspace, "/a"));
	unlink(path);
	config_free(&cfg);
	config_defaults(&cfg);
	path = write_ini("  [sbxfs]\n\tworkspace = /a\n  state_dir = /s\n");
	CHECK(config_load(&cfg, path, err, sizeof(err)) == 0);
	CHECK(!strcmp(cfg.workspace, "/a") && !strcmp(cfg.state_dir, "/s"));
	unlink(path);
	config_free(&cfg);
}

static void test_git_policy(void)
{
	struct config cfg;
	char err[256];

	config_defaults(&cfg);
	CHECK(!cfg.git_allow_private && cfg.git_local_roots && !cfg.git_local_roots[0]);
	CHECK(config_set(&cfg, "session", "git_allow_private", "yes", err, sizeof(err)) == 0);
	CHECK(cfg.git_allow_private);
	CHECK(config_set(&cfg, "session", "git_local_roots", "/srv/git:/a b", err, sizeof(err)) ==
	      0);
	CHECK(!strcmp(cfg.git_local_roots[0], "/srv/git") &&
	      !strcmp(cfg.git_local_roots[1], "/a b") && !cfg.git_local_roots[2]);
	/* a bad list changes nothing */
	CHECK(config_set(&cfg, "session", "git_local_roots", "/x:rel", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "session", "git_local_roots", "/x::/y", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "session", "git_local_roots", "/x:", err, sizeof(err)) < 0);
	CHECK(!strcmp(cfg.git_local_roots[0], "/srv/git") && !cfg.git_local_roots[2]);
	CHECK(config_set(&cfg, "session", "git_local_roots", "", err, sizeof(err)) == 0);
	CHECK(!cfg.git_local_roots[0]);
	CHECK(config_set(&cfg, "session", "git_allow_private", "maybe", err, sizeof(err)) < 0);
	config_free(&cfg);
}

/* uid_range is FIRST-LAST within the ids; the env bounds stay within what execve takes, and
 * the configured env within them. */
/* Exposed ports: a numeric address only; one that is not loopback only with expose_public. */
static void test_expose_keys(void)
{
	struct sockaddr_storage ss;
	struct config cfg;
	char err[256];
	socklen_t len;
	bool loopback;

	config_defaults(&cfg);
	CHECK(!strcmp(cfg.expose_address, "127.0.0.1") && !cfg.expose_public);
	CHECK(cfg.expose_max_ports == 32 && cfg.expose_max_connections == 256);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	CHECK(config_expose_addr("127.0.0.2", &ss, &len, &loopback) == 0 && loopback &&
	      ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in));
	CHECK(config_expose_addr("::1", &ss, &len, &loopback) == 0 && loopback &&
	      ss.ss_family == AF_INET6);
	CHECK(config_expose_addr("192.168.1.2", NULL, NULL, &loopback) == 0 && !loopback);
	CHECK(config_expose_addr("::", NULL, NULL, &loopback) == 0 && !loopback);
	CHECK(config_expose_addr("localhost", NULL, NULL, &loopback) == -EINVAL);
	CHECK(config_set(&cfg, "network", "expose_address", "localhost", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "network", "expose_address", "0.0.0.0", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) < 0 && strstr(err, "expose_public"));
	CHECK(config_set(&cfg, "network", "expose_public", "yes", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "network", "expose_max_ports", "0", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "network", "expose_max_ports", "1025", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "network", "expose_max_connections", "4097", err, sizeof(err)) < 0);
	CHECK(cfg.expose_max_ports == 0 && cfg.expose_max_connections == 256);
	config_free(&cfg);
}

static void test_uid_range_and_env_bounds(void)
{
	struct config cfg;
	char err[256], *big;

	config_defaults(&cfg);
	CHECK(!cfg.user[0] && cfg.uid_first == 2000000000u && cfg.uid_last == 2000065535u);
	CHECK(cfg.env_value_max == 128u << 10 && cfg.env_max == 1u << 20);
	CHECK(config_set(&cfg, "sandbox", "uid_range", "3000-3999", err, sizeof(err)) == 0);
	CHECK(cfg.uid_first == 3000 && cfg.uid_last == 3999);
	CHECK(config_set(&cfg, "sandbox", "uid_range", "0-10", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "sandbox", "uid_range", "10-9", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "sandbox", "uid_range", "10-4294967295", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "sandbox", "uid_range", "10", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "sandbox", "user", "", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "session", "env_value_max", "129K", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "session", "env_value_max", "max", err, sizeof(err)) < 0);
	CHECK(config_set(&cfg, "session", "env_value_max", "1K", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	big = calloc(2000, 1);
	memset(big, 'x', 1999);
	CHECK(config_set(&cfg, "env", "BIG", big, err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) < 0 && strstr(err, "BIG"));
	CHECK(config_set(&cfg, "session", "env_value_max", "4K", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "session", "env_max", "2K", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) < 0 && strstr(err, "env_max"));
	free(big);
	config_free(&cfg);
}

/* A session's own memory limit: memory_max less the reserve, which is at most a quarter. */
static void test_session_memory(void)
{
	struct config cfg;
	char err[256];

	config_defaults(&cfg);
	CHECK(config_session_memory(&cfg) == (4ull << 30) - (256ull << 20));
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	cfg.memory_max = 256ull << 20;
	CHECK(config_session_memory(&cfg) == 192ull << 20);
	cfg.tmp_size = 160ull << 20;
	cfg.shm_size = 32ull << 20;
	CHECK(config_check(&cfg, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "memory_reserve") != NULL);
	cfg.memory_reserve = 0;
	CHECK(config_session_memory(&cfg) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	cfg.memory_reserve = 1;
	cfg.memory_max = 0;
	CHECK(config_session_memory(&cfg) == 0);
	config_free(&cfg);
}

/* /tmp and /dev/shm follow memory_max unless set: a natural memory_max always fits; an explicit
 * size that does not is refused, saying which sizes were set and which derived. */
static void test_tmpfs_sizes(void)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	CHECK(config_tmp_size(&cfg) == 1ull << 30 && config_shm_size(&cfg) == 256ull << 20);
	CHECK(config_set(&cfg, "sandbox", "memory_max", "1G", err, sizeof(err)) == 0);
	CHECK(config_tmp_size(&cfg) == 256ull << 20 && config_shm_size(&cfg) == 64ull << 20);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	for (const char *const *m = (const char *const[]){"1M", "64M", "512M", "3G", "64G", NULL};
	     *m; m++) {
		CHECK(config_set(&cfg, "sandbox", "memory_max", *m, err, sizeof(err)) == 0);
		CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	}
	CHECK(config_tmp_size(&cfg) == 1ull << 30 && config_shm_size(&cfg) == 256ull << 20);
	CHECK(config_set(&cfg, "sandbox", "memory_max", "max", err, sizeof(err)) == 0);
	CHECK(config_tmp_size(&cfg) == 1ull << 30 && config_shm_size(&cfg) == 256ull << 20);
	CHECK(config_set(&cfg, "sandbox", "memory_max", "1G", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "sandbox", "tmp_size", "1000M", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "tmp_size (1000M) + shm_size (64M, from memory_max) must stay below "
			  "memory_max (1G)") != NULL);
	CHECK(config_set(&cfg, "sandbox", "tmp_size", "900M", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "below a session's memory limit, memory_max - memory_reserve (768M)"));
	CHECK(config_set(&cfg, "sandbox", "tmp_size", "auto", err, sizeof(err)) == 0);
	CHECK(config_check(&cfg, err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "sandbox", "tmp_size", "18446744073709551615", err, sizeof(err)) <
	      0);
	config_free(&cfg);
}

/* A number, a percentage of pids_max, or max/0 for none of its own. */
static void test_session_pids(void)
{
	static const struct {
		const char *pids_max, *value;
		int rc;
		uint64_t want;
	} cases[] = {
		{"4096", NULL, 0, 2048},
		{"4096", "300", 0, 300},
		{"4096", "25%", 0, 1024},
		{"max", "50%", 0, 0},
		{"4096", "max", 0, 0},
		{"4096", "0", 0, 0},
		{"1", "50%", 0, 1},
		{"4096", "0%", -EINVAL, 0},
		{"4096", "101%", -EINVAL, 0},
		{"4096", "%", -EINVAL, 0},
		{"4096", "-1", -EINVAL, 0},
		{"4096", "x", -EINVAL, 0},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config cfg;

		config_defaults(&cfg);
		CHECK(config_set(&cfg, "sandbox", "pids_max", cases[i].pids_max, err,
				 sizeof(err)) == 0);
		if (cases[i].value)
			CHECK(config_set(&cfg, "sandbox", "session_pids_max", cases[i].value, err,
					 sizeof(err)) == cases[i].rc);
		if (cases[i].rc == 0)
			CHECK(config_session_pids(&cfg) == cases[i].want);
		config_free(&cfg);
	}
}

/* fuzz_config's range property: strtod takes "nan", which no range comparison rejected. */
static void test_not_a_number(void)
{
	static const char *bad[] = {"nan", "NAN", "-nan", "inf", "infinity", "1e400"};
	struct config cfg;
	char err[256];

	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(config_set(&cfg, "sandbox", "cpu_max", bad[i], err, sizeof(err)) == -EINVAL);
		CHECK(config_set(&cfg, "workspace", "cache_timeout", bad[i], err, sizeof(err)) ==
		      -EINVAL);
	}
	CHECK(config_set(&cfg, "sandbox", "cpu_max", "0.5", err, sizeof(err)) == 0);
	CHECK(config_set(&cfg, "workspace", "cache_timeout", "0", err, sizeof(err)) == 0);
	config_free(&cfg);
}

int main(void)
{
	test_defaults();
	test_default_dirs();
	test_load();
	test_errors();
	test_git_policy();
	test_expose_keys();
	test_uid_range_and_env_bounds();
	test_session_memory();
	test_tmpfs_sizes();
	test_session_pids();
	test_not_a_number();
	test_long_line();
	test_nul_byte();
	test_indented_lines();
	return check_done();
}
