/* Unit tests: bwrap's argv is made of the configuration only, with the pieces the sandbox
 * depends on, and signal names parse as users write them. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bwrap.h"
#include "check.h"
#include "signame.h"

static int index_of(char **argv, const char *arg)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], arg))
			return i;
	return -1;
}

static void test_argv(void)
{
	struct bwrap_spec sp = {.bwrap = "/usr/bin/bwrap",
				.workspace = "/run/sbxfs-1/workspace",
				.home = "/run/sbxfs-1/home",
				.launcher = "/run/sbxfs-1/launcher",
				.tmp_size = 1 << 20,
				.shm_size = 1 << 16,
				.uid = 999,
				.gid = 999};
	char **argv = bwrap_argv(&sp);
	int dash = index_of(argv, "--");

	CHECK(!strcmp(argv[0], "/usr/bin/bwrap"));
	CHECK(index_of(argv, "--unshare-net") > 0);
	CHECK(index_of(argv, "--disable-userns") > index_of(argv, "--unshare-user"));
	CHECK(index_of(argv, "--die-with-parent") > 0 && index_of(argv, "--new-session") > 0);
	CHECK(index_of(argv, "--seccomp") > 0);
	/* every mount comes before the root turns read-only; the program comes last */
	CHECK(index_of(argv, "--remount-ro") > index_of(argv, "/workspace"));
	/* the home, read-write, from its own host path */
	CHECK(index_of(argv, SANDBOX_HOME) == index_of(argv, "/run/sbxfs-1/home") + 1);
	CHECK(!strcmp(argv[index_of(argv, SANDBOX_HOME) - 2], "--bind"));
	CHECK(index_of(argv, "--remount-ro") > index_of(argv, SANDBOX_HOME));
	CHECK(dash > index_of(argv, "--remount-ro") && !strcmp(argv[dash + 1], SANDBOX_LAUNCHER));
	CHECK(argv[dash + 2] == NULL);
	bwrap_argv_free(argv);

	sp.keep_net = true;
	argv = bwrap_argv(&sp);
	CHECK(index_of(argv, "--unshare-net") < 0);
	CHECK(index_of(argv, "/etc/passwd") < 0);
	bwrap_argv_free(argv);

	/* /etc comes from the arguments in BWRAP_FD_ETC, before the root turns read-only */
	argv = bwrap_argv(&sp);
	CHECK(index_of(argv, "--args") > 0 &&
	      index_of(argv, "--args") < index_of(argv, "--remount-ro"));
	CHECK(index_of(argv, "/etc") < 0);
	bwrap_argv_free(argv);
}

/* The NUL-separated arguments of bwrap_etc_fd as an argv (at most 4096). */
static char **etc_args(const struct bwrap_spec *sp, char *buf, size_t size)
{
	static char *v[4096];
	int fd = bwrap_etc_fd(sp), n = 0;
	ssize_t len = fd < 0 ? -1 : pread(fd, buf, size - 1, 0);

	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < len && n < 4095; i += (ssize_t)strlen(buf + i) + 1)
		v[n++] = buf + i;
	v[n] = NULL;
	return v;
}

static void test_etc(void)
{
	struct bwrap_spec sp = {.etc_ids = true};
	static char buf[1 << 20];
	char **a = etc_args(&sp, buf, sizeof(buf));
	int tmpfs = index_of(a, "--tmpfs"), last = 0;

	while (a[last])
		last++;
	/* a tmpfs of its own, the host's entries on it, its own passwd and group, read-only */
	CHECK(tmpfs >= 0 && !strcmp(a[tmpfs + 1], "/etc"));
	CHECK(index_of(a, "/etc/hostname") > tmpfs);
	CHECK(index_of(a, "/etc/passwd") > tmpfs &&
	      !strcmp(a[index_of(a, "/etc/passwd") - 2], "--ro-bind-data"));
	CHECK(index_of(a, "/etc/group") > tmpfs);
	CHECK(last >= 2 && !strcmp(a[last - 2], "--remount-ro") && !strcmp(a[last - 1], "/etc"));
	/* the host's passwd is not bound under the sandbox's */
	for (int i = 0; a[i]; i++)
		CHECK(strcmp(a[i], "--ro-bind-try") || strcmp(a[i + 1], "/etc/passwd"));
	sp.etc_ids = false;
	a = etc_args(&sp, buf, sizeof(buf));
	CHECK(index_of(a, "--ro-bind-data") < 0 && index_of(a, "/etc/passwd") > 0);
}

static void test_signals(void)
{
	int sig = 0;

	CHECK(signal_parse("TERM", &sig) == 0 && sig == SIGTERM);
	CHECK(signal_parse("SIGkill", &sig) == 0 && sig == SIGKILL);
	CHECK(signal_parse("2", &sig) == 0 && sig == SIGINT);
	CHECK(signal_parse("0", &sig) < 0);
	CHECK(signal_parse("999", &sig) < 0);
	CHECK(signal_parse("SIG", &sig) < 0);
	CHECK(signal_parse("NOSUCH", &sig) < 0);
}

int main(void)
{
	test_argv();
	test_etc();
	test_signals();
	return check_done();
}
