/* Unit tests: bwrap's argv is made of the configuration only, with the pieces the sandbox
 * depends on, and signal names parse as users write them. */
#include <signal.h>
#include <string.h>

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
	struct bwrap_spec sp = {"/usr/bin/bwrap", "/run/sbxfs-1/workspace", "/run/sbxfs-1/launcher",
				false, 1 << 20, 1 << 16, 999, 999, false};
	char **argv = bwrap_argv(&sp);
	int dash = index_of(argv, "--");

	CHECK(!strcmp(argv[0], "/usr/bin/bwrap"));
	CHECK(index_of(argv, "--unshare-net") > 0);
	CHECK(index_of(argv, "--disable-userns") > index_of(argv, "--unshare-user"));
	CHECK(index_of(argv, "--die-with-parent") > 0 && index_of(argv, "--new-session") > 0);
	CHECK(index_of(argv, "--seccomp") > 0);
	/* every mount comes before the root turns read-only; the program comes last */
	CHECK(index_of(argv, "--remount-ro") > index_of(argv, "/workspace"));
	CHECK(dash > index_of(argv, "--remount-ro") && !strcmp(argv[dash + 1], SANDBOX_LAUNCHER));
	CHECK(argv[dash + 2] == NULL);
	bwrap_argv_free(argv);

	sp.keep_net = true;
	argv = bwrap_argv(&sp);
	CHECK(index_of(argv, "--unshare-net") < 0);
	CHECK(index_of(argv, "/etc/passwd") < 0);
	bwrap_argv_free(argv);

	/* an own uid's account files go over the host's /etc, before the root turns read-only */
	sp.etc_ids = true;
	argv = bwrap_argv(&sp);
	CHECK(index_of(argv, "/etc/passwd") > index_of(argv, "/etc"));
	CHECK(index_of(argv, "/etc/group") > index_of(argv, "/etc"));
	CHECK(index_of(argv, "--remount-ro") > index_of(argv, "/etc/group"));
	bwrap_argv_free(argv);
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
	test_signals();
	return check_done();
}
