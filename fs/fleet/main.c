/* sbxfs-fleet: mounts a fleet at MOUNTPOINT and keeps its sandboxes, each a whole sbxfs mount at
 * MOUNTPOINT/ID/fs served by a daemon of its own (src/fleet), in the foreground until SIGTERM or
 * SIGINT. A fleet left by a supervisor that died is found again: its stale mount detached, its
 * daemons stopped, and each of its sandboxes started anew (what outlives a daemon comes back). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fleet.h"
#include "fleetfs.h"
#include "log.h"
#include "stopsig.h"
#include "xmalloc.h"

struct cmdline {
	const char *mountpoint, *state_dir, *sandbox_config;
	unsigned max, max_running;
	uint64_t memory_budget, disk_budget;
	bool debug;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sbxfs-fleet [-d] [--state-dir DIR] [--sandbox-config INI] [--max N]\n"
		"                   [--max-running N] [--memory-budget SIZE] [--disk-budget SIZE]\n"
		"                   [MOUNTPOINT]\n"
		"\n"
		"Mounts a fleet of sandboxes at MOUNTPOINT (default /run/sbxfs/fleet as root,\n"
		"$XDG_RUNTIME_DIR/sbxfs/fleet otherwise) and keeps them, in the foreground:\n"
		"ls lists them, mkdir ID (or reading clone) makes one, rmdir ID destroys it; each\n"
		"is a whole sbxfs mount at MOUNTPOINT/ID/fs, with its own daemon.\n"
		"\n"
		"  --state-dir DIR        where the sandboxes live (default /var/lib/sbxfs/fleet\n"
		"                         as root, $XDG_STATE_HOME/sbxfs/fleet otherwise)\n"
		"  --sandbox-config INI   the config each new sandbox starts with (its copy is\n"
		"                         in DIR/sandboxes/ID/sbxfs.ini)\n"
		"  --max N                sandboxes at most (default 64); one more is ENOSPC\n"
		"  --max-running N        sandboxes with a daemon at once (default: --max); a\n"
		"                         create or a wake past it is ENOSPC\n"
		"  --memory-budget SIZE   the sum of memory_max of the sandboxes with a daemon\n"
		"                         (e.g. 16G; default none); a create or a wake past it is\n"
		"                         ENOSPC\n"
		"  --disk-budget SIZE     the sum of workspace_max of all sandboxes (default\n"
		"                         none); a create past it is ENOSPC\n"
		"  -d                     debug: log every FUSE request\n"
		"  -h, --help             this text\n");
}

/* An XDG directory (absolute value of var, else HOME/fallback) with sub appended. */
static char *user_dir(const char *var, const char *fallback, const char *sub)
{
	const char *v = getenv(var), *home = getenv("HOME");

	if (v && v[0] == '/')
		return xasprintf("%s/%s", v, sub);
	return xasprintf("%s/%s/%s", home ? home : "/", fallback, sub);
}

static void parse_cmdline(int argc, char **argv, struct cmdline *cl)
{
	static const struct option longopts[] = {
	    {"state-dir", required_argument, NULL, 's'},
	    {"sandbox-config", required_argument, NULL, 'c'},
	    {"max", required_argument, NULL, 'm'},
	    {"max-running", required_argument, NULL, 'r'},
	    {"memory-budget", required_argument, NULL, 'M'},
	    {"disk-budget", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	long v;
	int c;

	cl->max = 64;
	while ((c = getopt_long(argc, argv, "dh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			cl->state_dir = optarg;
			break;
		case 'c':
			cl->sandbox_config = optarg;
			break;
		case 'm':
		case 'r':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000)
				fatalx("--%s %s: a number from 1 to 100000",
				       c == 'm' ? "max" : "max-running", optarg);
			*(c == 'm' ? &cl->max : &cl->max_running) = (unsigned)v;
			break;
		case 'M':
		case 'D':
			if (config_parse_size(optarg,
					      c == 'M' ? &cl->memory_budget : &cl->disk_budget) < 0)
				fatalx("--%s %s: a size (64M, 8G) or max",
				       c == 'M' ? "memory-budget" : "disk-budget", optarg);
			break;
		case 'd':
			cl->debug = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		exit(2);
	}
	cl->mountpoint = optind < argc	 ? argv[optind]
			 : getuid() == 0 ? "/run/sbxfs/fleet"
					 : user_dir("XDG_RUNTIME_DIR", ".cache", "sbxfs/fleet");
	if (!cl->state_dir)
		cl->state_dir = getuid() == 0
				    ? "/var/lib/sbxfs/fleet"
				    : user_dir("XDG_STATE_HOME", ".local/state", "sbxfs/fleet");
}

static void mkdir_p(const char *path)
{
	char *copy = xstrdup(path);

	for (char *p = copy + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(copy, 0755);
			*p = '/';
		}
	if (mkdir(copy, 0755) < 0 && errno != EEXIST)
		fatal("%s", path);
	free(copy);
}

/* A path made absolute, its directory existing (the file itself need not). */
static char *absolute(const char *path)
{
	char *copy = xstrdup(path), *dir = realpath(dirname(copy), NULL), *base, *abs;

	free(copy);
	if (!dir)
		fatal("%s", path);
	copy = xstrdup(path);
	base = basename(copy);
	abs = xasprintf("%s/%s", dir, base);
	free(copy);
	free(dir);
	return abs;
}

/* The sbxfs next to this program, as a build tree and an install have it. */
static char *find_sbxfs(void)
{
	char *exe = realpath("/proc/self/exe", NULL), *dir, *path, *copy;

	if (!exe)
		fatal("/proc/self/exe");
	copy = xstrdup(exe);
	dir = dirname(copy);
	path = xasprintf("%s/sbxfs", dir);
	free(copy);
	free(exe);
	if (access(path, X_OK) < 0)
		fatal("%s (sbxfs-fleet runs the sbxfs next to it)", path);
	return path;
}

static struct fuse_session *session; /* for the stop signals */

static void stop_session(void)
{
	fuse_session_exit(session);
}

static struct fuse_session *mount_fleet(const char *self, const char *mnt, bool debug)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;

	fuse_opt_add_arg(&args, self);
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, "default_permissions,fsname=sbxfs-fleet,subtype=sbxfs-fleet");
	if (debug)
		fuse_opt_add_arg(&args, "-d");
	se = fuse_session_new(&args, &fleet_ops, sizeof(fleet_ops), NULL);
	fuse_opt_free_args(&args);
	if (!se)
		fatalx("cannot create the FUSE session");
	if (fuse_set_signal_handlers(se) < 0)
		fatalx("cannot set signal handlers");
	session = se;
	stopsig_install(stop_session);
	if (fuse_session_mount(se, mnt) < 0)
		fatalx("cannot mount on %s", mnt);
	return se;
}

int main(int argc, char **argv)
{
	struct cmdline cl = {0};
	struct fuse_session *se;
	struct stat st;
	struct fuse_loop_config *lc;
	char err[512], *mnt, *state, *ini, *sbxfs;
	int rc;

	log_init("sbxfs-fleet", LOG_LVL_INFO, NULL);
	parse_cmdline(argc, argv, &cl);
	/* The mount of a supervisor that died answers ENOTCONN: detach it, and what is on it. */
	if (stat(cl.mountpoint, &st) < 0 && errno == ENOTCONN &&
	    umount2(cl.mountpoint, MNT_DETACH) == 0)
		log_warnx("%s: detached the mount of a supervisor that died", cl.mountpoint);
	mkdir_p(cl.mountpoint);
	mkdir_p(cl.state_dir);
	mnt = realpath(cl.mountpoint, NULL);
	state = realpath(cl.state_dir, NULL);
	if (!mnt || !state)
		fatal("%s", mnt ? cl.state_dir : cl.mountpoint);
	ini = cl.sandbox_config ? absolute(cl.sandbox_config) : xstrdup("");
	sbxfs = find_sbxfs();
	/* The daemons a supervisor that died left stop first: their way out is through paths
	 * below the mount point, which a mount not yet served would hold up. */
	if (fleet_init(&(struct fleet_config){.root = mnt,
					      .state_dir = state,
					      .sbxfs = sbxfs,
					      .sandbox_config = ini,
					      .max = cl.max,
					      .max_running = cl.max_running,
					      .memory_budget = cl.memory_budget,
					      .disk_budget = cl.disk_budget},
		       fleetfs_changed, err, sizeof(err)) < 0)
		fatalx("%s", err);
	se = mount_fleet(argv[0], mnt, cl.debug);
	fleet_start();
	log_info("fleet mounted on %s (state in %s)", mnt, state);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(lc, 16);
	rc = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	/* Detached first, with the sandboxes' mounts on it: their daemons then stop without a
	 * path through a mount nobody serves any more. */
	fuse_session_unmount(se);
	fleet_shutdown();
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	log_info("fleet on %s stopped", mnt);
	free(mnt);
	free(state);
	free(ini);
	free(sbxfs);
	return rc < 0 ? 1 : 0;
}
