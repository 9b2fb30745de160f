/* sbxfs: command line, configuration, mounting, daemonizing, and the order of start and
 * shutdown between the FUSE session, the workspace and the sandbox core. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#include "config.h"
#include "ctl.h"
#include "ctxfs.h"
#include "daemon.h"
#include "guard.h"
#include "handover.h"
#include "holders.h"
#include "idle.h"
#include "idmap.h"
#include "log.h"
#include "mountopts.h"
#include "ops.h"
#include "root.h"
#include "portfs.h"
#include "sandbox.h"
#include "snapfs.h"
#include "snapshot.h"
#include "stopsig.h"
#include "termfs.h"
#include "unmount.h"
#include "workspace.h"
#include "ws_mount.h"
#include "ws_view.h"
#include "wsimage.h"
#include "xmalloc.h"

#define DEFAULT_CONFIG "/etc/sbxfs/sbxfs.ini"

struct cmdline {
	bool foreground, debug, unmount, lazy;
	const char *config, *workspace, *state_dir, *isolation, *network, *source, *mountpoint;
	struct mountopts opts;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: sbxfs [-f] [-d] [-c CONFIG] [--workspace DIR] [--state-dir DIR]\n"
	    "             [--isolation bwrap|none] [--network none|filtered|host]\n"
	    "             [-o OPT[=VALUE],...] [SOURCE] MOUNTPOINT\n"
	    "       sbxfs -u MOUNTPOINT\n"
	    "       sbxfs attach MOUNTPOINT/sessions/ID/terms/NAME\n"
	    "\n"
	    "Mounts a sandbox at MOUNTPOINT: sessions/ holds shell sessions driven through\n"
	    "control files, workspace/ is the workspace their commands share (SOURCE, the\n"
	    "same as --workspace SOURCE; mount -t fuse.sbxfs SOURCE MOUNTPOINT runs this).\n"
	    "\n"
	    "  -f                stay in the foreground (default: become a daemon)\n"
	    "  -d                debug: log every FUSE request (implies -f)\n"
	    "  -c CONFIG         ini file (default " DEFAULT_CONFIG " if it exists)\n"
	    "  --workspace DIR   backing directory of workspace/\n"
	    "  --state-dir DIR   spool files and lock of this mount\n"
	    "  --isolation MODE  bwrap (default): commands run in a bubblewrap sandbox as an\n"
	    "                    unprivileged user, with seccomp, no network, cgroup limits;\n"
	    "                    none: they run as the daemon's user, unconfined, seeing the\n"
	    "                    whole host (only cgroup limits and kills still apply)\n"
	    "  --network MODE    none (default): no way out; filtered: through the proxy, per\n"
	    "                    network/policy; host: the host's network\n"
	    "  -o OPTS           comma-separated: any config key as KEY=VALUE (or\n"
	    "                    SECTION.KEY=VALUE, env.NAME=VALUE), e.g. network=host,\n"
	    "                    memory_max=2G; config=PATH (as -c); syslog (log there);\n"
	    "                    FUSE's mount options (allow_other, nosuid, fsname=...);\n"
	    "                    fstab's own (defaults, nofail, x-*) are ignored.\n"
	    "                    Precedence: the ini file < -o < the flags above\n"
	    "  -u                unmount MOUNTPOINT and what is mounted on it, or nothing if\n"
	    "                    any of it is in use (it says by which processes); this ends\n"
	    "                    the sandbox and every session; returns once its daemon has\n"
	    "                    exited\n"
	    "  -z, --lazy        with -u: stop the daemon whatever is open; what held the mount\n"
	    "                    gets ENOTCONN\n"
	    "  -h, --help        this text\n"
	    "  -V, --version     the version\n"
	    "  attach PATH       attach this terminal to the sandbox terminal PATH (made if\n"
	    "                    missing): Ctrl-] d detaches and leaves it running,\n"
	    "                    Ctrl-] Ctrl-] sends one Ctrl-]\n"
	    "\n"

	    "Unmount with: sbxfs -u MOUNTPOINT (or SIGTERM / SIGINT to the daemon). A workspace\n"
	    "the kernel mounts makes a plain fusermount3 -u fail with EBUSY.\n");
}

static void parse_cmdline(int argc, char **argv, struct cmdline *cl)
{
	static const struct option longopts[] = {
	    {"workspace", required_argument, NULL, 'w'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"isolation", required_argument, NULL, 'i'},
	    {"network", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"lazy", no_argument, NULL, 'z'},
	    {NULL, 0, NULL, 0},
	};
	char err[512];
	int c;

	memset(cl, 0, sizeof(*cl));
	while ((c = getopt_long(argc, argv, "fdc:o:uzhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			cl->foreground = true;
			break;
		case 'd':
			cl->debug = cl->foreground = true;
			break;
		case 'c':
			cl->config = optarg;
			break;
		case 'o':
			if (mountopts_add(&cl->opts, optarg, err, sizeof(err)) < 0)
				fatalx("%s", err);
			break;
		case 'u':
			cl->unmount = true;
			break;
		case 'z':
			cl->lazy = true;
			break;
		case 'w':
			cl->workspace = optarg;
			break;
		case 's':
			cl->state_dir = optarg;
			break;
		case 'i':
			cl->isolation = optarg;
			break;
		case 'n':
			cl->network = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("sbxfs %s\n", SBXFS_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind == argc - 2 && !cl->unmount)
		cl->source = argv[optind++];
	if (optind != argc - 1) {
		usage(stderr);
		exit(2);
	}
	cl->mountpoint = argv[optind];
}

/* A flag's setting, over the file and -o. */
static void set_flag(struct config *cfg, const char *flag, const char *section, const char *key,
		     const char *value)
{
	char err[512];

	if (value && config_set(cfg, section, key, value, err, sizeof(err)) < 0)
		fatalx("%s: %s", flag, err);
}

/* A relative state dir would be lost when the daemon changes to /. */
static void absolute_state_dir(struct config *cfg)
{
	char cwd[PATH_MAX], *abs, err[512];

	if (cfg->state_dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	abs = xasprintf("%s/%s", cwd, cfg->state_dir);
	config_set(cfg, "sbxfs", "state_dir", abs, err, sizeof(err));
	free(abs);
}

static void load_config(const struct cmdline *cl, struct config *cfg)
{
	const char *path = cl->config ? cl->config : cl->opts.config;
	char err[512];

	config_defaults(cfg);
	if (!path && access(DEFAULT_CONFIG, F_OK) == 0)
		path = DEFAULT_CONFIG;
	if (path && config_load(cfg, path, err, sizeof(err)) < 0)
		fatalx("%s", err);
	if (mountopts_apply(&cl->opts, cfg, err, sizeof(err)) < 0)
		fatalx("-o: %s", err);
	set_flag(cfg, "SOURCE", "sbxfs", "workspace", cl->source);
	set_flag(cfg, "--workspace", "sbxfs", "workspace", cl->workspace);
	set_flag(cfg, "--state-dir", "sbxfs", "state_dir", cl->state_dir);
	set_flag(cfg, "--isolation", "sandbox", "isolation", cl->isolation);
	set_flag(cfg, "--network", "sandbox", "network", cl->network);
	if (cl->debug)
		cfg->log_level = LOG_LVL_DEBUG;
	absolute_state_dir(cfg);
}

static char *absolute(const char *path)
{
	char *abs = realpath(path, NULL);

	if (!abs)
		fatal("%s", path);
	return abs;
}

/* Before anything else is made: libfuse's own message for a /dev/fuse it cannot open says
 * nothing of what to do. */
static void check_fuse_device(void)
{
	if (access("/dev/fuse", R_OK | W_OK) == 0)
		return;
	if (errno == ENOENT)
		fatalx(
		    "/dev/fuse: %s (load the fuse module: modprobe fuse; in a container, pass the "
		    "device: --device /dev/fuse)",
		    strerror(errno));
	if (errno == EACCES && getuid() != 0)
		fatalx("/dev/fuse: %s: mounting as a normal user needs read and write access to it "
		       "(Debian makes it mode 0666; as root: chmod 0666 /dev/fuse, or give it to a "
		       "group of yours)",
		       strerror(errno));
}

/* libfuse installs its handlers only over SIG_DFL, and a daemon started in the background of a
 * script inherits SIGINT (and SIGQUIT) ignored, as bash does to background jobs: it would then
 * ignore kill -INT and Ctrl-C. An ignored SIGHUP is kept in the foreground only, where it is
 * nohup's request to outlive the terminal; a daemon has no terminal to hang up. */
static void default_stop_signals(bool foreground)
{
	struct sigaction sa;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (!foreground || (sigaction(SIGHUP, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN))
		signal(SIGHUP, SIG_DFL);
}

static struct fuse_session *session; /* for the stop signals */

static void stop_session(void)
{
	fuse_session_exit(session);
}

/* Mounts on the mount point by its absolute path (*abs, caller frees): libfuse unmounts by the
 * path it mounted, after the daemon changed its directory to /. */
static struct fuse_session *mount_fs(const struct cmdline *cl, const char *self, char **abs)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	char *fsname = xasprintf("fsname=%s", cl->source ? cl->source : "sbxfs"), *opts = NULL;
	int rc;

	/* mount(8) lists SOURCE as what is mounted, as for any device. */
	if (fuse_opt_add_opt_escaped(&opts, fsname) < 0 ||
	    fuse_opt_add_opt(&opts, "default_permissions,subtype=sbxfs") < 0 ||
	    (cl->opts.fuse && fuse_opt_add_opt(&opts, cl->opts.fuse) < 0))
		fatalx("out of memory");
	free(fsname);
	fuse_opt_add_arg(&args, self);
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	free(opts);
	if (cl->debug)
		fuse_opt_add_arg(&args, "-d");
	se = fuse_session_new(&args, &sbx_ops, sizeof(sbx_ops), NULL);
	fuse_opt_free_args(&args);
	if (!se)
		fatalx("cannot create the FUSE session");
	default_stop_signals(cl->foreground);
	if (fuse_set_signal_handlers(se) < 0)
		fatalx("cannot set signal handlers");
	session = se;
	stopsig_install(stop_session);
	if (mkdir(cl->mountpoint, 0755) < 0 && (rc = errno) != EEXIST)
		fatalx("mount point %s: %s%s", cl->mountpoint, strerror(rc),
		       rc == EACCES && getuid() != 0 ? " (mount on a directory you own)" : "");
	*abs = absolute(cl->mountpoint);
	if (fuse_session_mount(se, *abs) < 0)
		fatalx("cannot mount on %s", cl->mountpoint);
	if ((rc = ws_dev_attach_session(se)) < 0)
		fatalx("cannot hook the FUSE device: %s", strerror(-rc));
	return se;
}

static int serve(struct fuse_session *se)
{
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	int rc;

	fuse_loop_cfg_set_clone_fd(lc, 1);
	/* Waiting readers hold no thread (they are parked), so few threads serve many clients;
	 * each costs a 1 MiB request buffer, which is most of the daemon's memory. */
	fuse_loop_cfg_set_max_threads(lc, 16);
	fuse_loop_cfg_set_idle_threads(lc, 4);
	rc = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	return rc;
}

static void log_to_state_dir(const struct config *cfg)
{
	char *path = xasprintf("%s/sbxfs.log", cfg->state_dir);
	int rc = log_open_file("sbxfs", cfg->log_level, path, cfg->log_max);

	if (rc < 0)
		log_warnx("log file %s: %s", path, strerror(-rc));
	free(path);
}

/* snapshots/: where [snapshots] dir says, else in an XFS workspace image (reflinks), else in
 * the state dir. */
static int start_snapshots(const struct config *cfg, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char *dir = cfg->snap_dir[0]	     ? xstrdup(cfg->snap_dir)
		    : wsimage_snapshot_dir() ? xstrdup(wsimage_snapshot_dir())
					     : xasprintf("%s/snapshots", cfg->state_dir);
	int rc = snapshots_init(cfg, dir, cfg->workspace, uid, gid, err, errlen);

	snapshots_set_restore_hook(ws_inval_everything);
	if (rc == 0)
		log_info("snapshots in %s", dir);
	free(dir);
	return rc;
}

/* The mount point, for mount_whole (set before the attach thread starts). */
static const char *whole_at;

/* Once workspace/ is attached (its attach thread): the other trees get their covers, then the
 * mount is whole and ready. */
static void mount_whole(void)
{
	guard_attach(whole_at);
	daemon_ready();
}

/* For sleep_after (idle.h): what holds the mount, bar the daemon; a stop as SIGTERM's. */
static bool mount_held(void)
{
	return holders_any(whole_at, getpid());
}

static void go_to_sleep(void)
{
	kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
	struct fuse_session *se;
	struct ws_opts wso;
	struct cmdline cl;
	struct config cfg;
	char err[512], *self, *ws_abs, *mnt_abs, *readme;
	uid_t sb_uid = getuid();
	gid_t sb_gid = getgid();
	bool own_user;
	int rc;

	if (argc > 1 && strcmp(argv[1], "attach") == 0)
		return attach_main(argc - 1, argv + 1);
	parse_cmdline(argc, argv, &cl);
	if (cl.unmount)
		unmount_main(cl.mountpoint, cl.lazy);
	load_config(&cl, &cfg);
	log_init("sbxfs", cfg.log_level, NULL);
	check_fuse_device();
	self = absolute("/proc/self/exe");
	if (sandbox_prepare(&cfg, self, err, sizeof(err)) < 0)
		fatalx("%s", err);
	ws_abs = absolute(cfg.workspace);
	config_set(&cfg, "sbxfs", "workspace", ws_abs, err, sizeof(err));
	free(ws_abs);
	wso = (struct ws_opts){
	    .cache = cfg.ws_cache, .timeout = cfg.ws_timeout, .passthrough = cfg.ws_passthrough};
	wso.max_fds = cfg.ws_max_fds;
	own_user = sandbox_user(&sb_uid, &sb_gid);
	if (cfg.idmap == IDMAP_USER && own_user)
		idmap_swap(getuid(), getgid(), sb_uid, sb_gid);
	/* Before anything reaps children: it forks (see ws_mount_prepare). */
	sandbox_describe_also(guard_describe);
	guard_prepare(!cfg.ws_symfollow);
	ws_view_prepare(&(struct ws_view_spec){
	    .backing = cfg.workspace,
	    .kernel = cfg.ws_kernel,
	    .symfollow = cfg.ws_symfollow,
	    .idmap = cfg.idmap == IDMAP_USER && own_user,
	    .owner_uid = getuid(),
	    .owner_gid = getgid(),
	    .sandbox_uid = sb_uid,
	    .sandbox_gid = sb_gid,
	});
	if ((rc = ws_open(cfg.workspace, &wso)) < 0)
		fatalx("workspace %s: %s", cfg.workspace, strerror(-rc));
	readme = root_readme();
	ctl_set_readme(readme);
	se = mount_fs(&cl, self, &mnt_abs);
	if (!cl.foreground) {
		char *pidfile = xasprintf("%s/sbxfs.pid", cfg.state_dir);

		daemon_start(mnt_abs, pidfile);
		free(pidfile);
	}
	if (cl.opts.syslog)
		log_open_syslog("sbxfs", cfg.log_level);
	else if (!cl.foreground)
		log_to_state_dir(&cfg);
	if (sandbox_start(mnt_abs, err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		sandbox_stop();
		fuse_session_unmount(se);
		daemon_failed(err); /* once unmounted: the starting process's exit says so */
		return 1;
	}
	if (start_snapshots(&cfg, sb_uid, sb_gid, err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		sandbox_stop();
		fuse_session_unmount(se);
		daemon_failed(err);
		return 1;
	}
	/* After the launcher started, so that its children keep the limits the daemon got. */
	ws_raise_nofile();
	/* After the limit is raised: it keeps a descriptor of every workspace directory. */
	if (cfg.idmap == IDMAP_HANDOVER && own_user &&
	    (rc = handover_start(cfg.workspace, getuid(), getgid(), sb_uid, sb_gid)) < 0)
		log_warnx("the host's files in the workspace stay closed to the sandbox: cannot "
			  "watch the workspace: %s",
			  strerror(-rc));
	ws_dev_tune_mount(mnt_abs);
	log_info("mounted on %s (workspace %s)", cl.mountpoint, cfg.workspace);
	whole_at = mnt_abs;
	ws_view_attach(mnt_abs, mount_whole);
	idle_start((unsigned)cfg.sleep_after, cfg.state_dir,
		   &(struct idle_cbs){.held = mount_held, .sleep = go_to_sleep});
	rc = serve(se);
	idle_stop();
	/* Nothing is served any more: what the kernel never released goes first, then the work
	 * under way, before the sessions a restore would stop. */
	snapfile_shutdown();
	snapshots_shutdown();
	handover_stop(); /* its descriptors would keep a workspace image busy */
	sandbox_stop();
	ws_mount_detach();
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	ws_dev_detach_session(se);
	fuse_session_destroy(se);
	ctlfile_shutdown();
	termfile_shutdown();
	portfile_shutdown();
	ctxfile_shutdown();
	ws_close();
	daemon_end();
	config_free(&cfg);
	mountopts_free(&cl.opts);
	free(self);
	free(mnt_abs);
	free(readme);
	log_info("unmounted");
	return rc < 0 ? 1 : 0;
}
