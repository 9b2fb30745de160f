/* The sandbox's lifetime: state directory (lock, spool), launcher location, and the order in
 * which the loop, the launcher and the sessions start and stop. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bwrap.h"
#include "cgroup_mem.h"
#include "cgroup.h"
#include "context.h"
#include "expose.h"
#include "fdres.h"
#include "home.h"
#include "journal.h"
#include "filter.h"
#include "checkout_run.h"
#include "identity.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "etcview.h"
#include "mountview.h"
#include "net.h"
#include "saved.h"
#include "netns.h"
#include "refused_calls.h"
#include "session.h"
#include "spool.h"
#include "spool_budget.h"
#include "state_lock.h"
#include "uidpool.h"
#include "watchdog.h"
#include "wsimage.h"
#include "wswatch.h"
#include "xmalloc.h"

extern char **environ;

static struct config *cfg;
static char *spool_dir;
static char *launcher;
static struct identity identity;
static bool own_uid; /* identity is from uid_range: no passwd entry on the host */
static char **bwrap;
static int seccomp_fd = -1;
static int notify_fd = -1; /* the launcher's filter (filter.h), or -1 */
static int etc_fds[2] = {-1, -1}; /* the sandbox's passwd and group, for an own uid */
static int etc_args_fd = -1;	  /* bwrap's arguments that make the sandbox's /etc */
static char *mountpoint;
static unsigned long own_mount; /* its device, as mountview_sbxfs_dev gives it */
static struct etcview *etcv; /* the sandbox's /etc, made in the launcher's namespace */
static char *git_helper;
static char *netproxy;
static char *home_dir; /* the sandbox user's home, its host path */
static char *stage_dir, *staged_ws, *staged_home, *staged_launcher, *staged_etc;
/* Why the sandbox cannot start, when the workspace's root could not be repaired (logged when it
 * changes); core lock. */
static char ws_problem[256];

static int mkdir_p(const char *path, mode_t mode)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		*p = '/';
	}
	if (rc == 0 && mkdir(copy, mode) < 0 && errno != EEXIST)
		rc = -errno;
	free(copy);
	return rc;
}

/* A directory the user may not make: a config written for root (/var/lib/sbxfs), read by
 * someone else. */
static bool denied(int rc)
{
	return rc == -EACCES || rc == -EPERM || rc == -EROFS;
}

/* Spool files of an earlier daemon that died are stale: start from an empty spool. */
const struct config *sandbox_config(void)
{
	return cfg;
}

/* The journal in STATE_DIR/journal, its first event this daemon's start. */
static int open_journal(char *err, size_t errlen)
{
	char *dir;
	struct jrec r;
	int rc;

	if (!cfg->journal_max) /* off */
		return 0;
	dir = xasprintf("%s/journal", cfg->state_dir);
	rc = journal_open(dir, cfg->journal_max, err, errlen);
	free(dir);
	if (rc < 0)
		return rc;
	journal_follow_init();
	jrec_begin(&r, "daemon.start", NULL);
	jrec_int(&r, "pid", getpid());
	jrec_commit(&r);
	return 0;
}

static void journal_note_stop(void)
{
	struct jrec r;

	jrec_begin(&r, "daemon.stop", NULL);
	jrec_int(&r, "pid", getpid());
	jrec_commit(&r);
}

static int reset_spool(const char *dir)
{
	DIR *d;
	struct dirent *de;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	return 0;
}

/* A helper program: next to the sbxfs binary (a build tree), else in libexec. */
static char *find_helper(const char *self_exe, const char *name)
{
	char *copy = xstrdup(self_exe), *path;

	path = xasprintf("%s/%s", dirname(copy), name);
	free(copy);
	if (access(path, X_OK) == 0)
		return path;
	free(path);
	return xasprintf("%s/%s", SBXFS_LIBEXECDIR, name);
}

/* A named user as configured; else, as root, this state dir's own uid. */
static int resolve_identity(char *err, size_t errlen)
{
	int rc;

	if (cfg->user[0] || getuid() != 0)
		return identity_resolve(cfg->user, &identity, err, errlen);
	own_uid = true;
	rc = uidpool_claim(cfg->uid_first, cfg->uid_last, cfg->state_dir, cfg->workspace,
			   &identity, err, errlen);
	if (rc == 0)
		log_info("sandbox uid and gid %u (%s/uid)", (unsigned)identity.uid, cfg->state_dir);
	return rc;
}

/* The home as commands see it. */
static const char *inside_home(void)
{
	return cfg->isolate ? SANDBOX_HOME : home_dir;
}

/* The sandbox user's home (home.c), and a new session's HOME unless [session] home sets one. */
static int prepare_home(char *err, size_t errlen)
{
	bool ours = cfg->isolate && getuid() == 0;
	int rc = home_prepare(cfg, ours ? identity.uid : (uid_t)-1, ours ? identity.gid : (gid_t)-1,
			      &home_dir, err, errlen);

	if (rc < 0) {
		wsimage_detach();
		return rc;
	}
	config_default_home(cfg, inside_home());
	return 0;
}

int sandbox_prepare(struct config *c, const char *self_exe, char *err, size_t errlen)
{
	int rc;

	cfg = c;
	if ((rc = mkdir_p(cfg->workspace, 0755)) < 0) {
		snprintf(err, errlen, "workspace %s: %s%s", cfg->workspace, strerror(-rc),
			 denied(rc) ? " (pass --workspace DIR, a directory you can write)" : "");
		return rc;
	}
	if ((rc = mkdir_p(cfg->state_dir, 0700)) < 0) {
		snprintf(err, errlen, "state dir %s: %s%s", cfg->state_dir, strerror(-rc),
			 denied(rc) ? " (pass --state-dir DIR, a directory you can write)" : "");
		return rc;
	}
	if ((rc = state_lock_take(cfg->state_dir, err, errlen)) < 0)
		return rc;
	spool_dir = xasprintf("%s/spool", cfg->state_dir);
	if ((rc = reset_spool(spool_dir)) < 0) {
		snprintf(err, errlen, "spool dir %s: %s", spool_dir, strerror(-rc));
		return rc;
	}
	launcher = cfg->launcher[0] ? xstrdup(cfg->launcher)
				    : find_helper(self_exe, "sbxfs-launcher");
	git_helper = find_helper(self_exe, "sbxfs-git");
	netproxy = find_helper(self_exe, "sbxfs-netproxy");
	contexts_set_exe(self_exe);
	if (access(launcher, X_OK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "launcher %s: %s", launcher, strerror(-rc));
		return rc;
	}
	if ((rc = config_check(cfg, err, errlen)) < 0)
		return rc;
	if (cfg->isolate && (rc = resolve_identity(err, errlen)) < 0)
		return rc;
	/* Before anything opens the workspace by its path, so that all of them get the image. */
	if (cfg->workspace_max &&
	    (rc = wsimage_attach(cfg->workspace, cfg->state_dir, cfg->workspace_max,
				 cfg->workspace_xfs ? "xfs" : "ext4", err, errlen)) < 0)
		return rc;
	/* The sandbox's commands must be able to create files at the top of their workspace. */
	if (cfg->isolate && getuid() == 0 && chown(cfg->workspace, identity.uid, identity.gid) < 0) {
		rc = -errno;
		snprintf(err, errlen, "workspace %s: chown: %s", cfg->workspace, strerror(-rc));
		wsimage_detach();
		return rc;
	}
	return prepare_home(err, errlen);
}

/* bwrap runs as the sandbox's user and must reach the workspace and the launcher by path,
 * whatever the modes of the directories above them: as root, bind both into a staging
 * directory that only needs to be traversable. */
static int stage(const char *src, const char *name, bool dir, char **dst)
{
	*dst = xasprintf("%s/%s", stage_dir, name);
	if (dir ? mkdir(*dst, 0700) < 0 : mknod(*dst, S_IFREG | 0600, 0) < 0)
		return -errno;
	if (mount(src, *dst, NULL, MS_BIND, NULL) < 0)
		return -errno;
	/* What is staged is reachable from the host too: nothing there runs set-id. */
	if (mount(NULL, *dst, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, NULL) < 0)
		return -errno;
	return 0;
}

static void unstage(char **path)
{
	if (!*path)
		return;
	umount2(*path, MNT_DETACH);
	if (rmdir(*path) < 0)
		unlink(*path);
	free(*path);
	*path = NULL;
}

/* Staging dirs of daemons that died without their watchdog cleaning up. */
static void remove_stale_stages(void)
{
	static const char *const names[] = {"workspace", "home", "launcher"};
	struct dirent *de;
	DIR *d = opendir("/run");

	while (d && (de = readdir(d))) {
		long pid;

		if (strncmp(de->d_name, "sbxfs-", 6))
			continue;
		pid = strtol(de->d_name + 6, NULL, 10);
		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			char *path = xasprintf("/run/%s/%s", de->d_name, names[i]);

			umount2(path, MNT_DETACH);
			if (rmdir(path) < 0)
				unlink(path);
			free(path);
		}
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
}

static int stage_paths(char *err, size_t errlen)
{
	int rc;

	if (getuid() != 0) {
		staged_ws = xstrdup(cfg->workspace);
		staged_home = xstrdup(home_dir);
		staged_launcher = xstrdup(launcher);
		return 0;
	}
	remove_stale_stages();
	stage_dir = xasprintf("/run/sbxfs-%d", (int)getpid());
	if (mkdir(stage_dir, 0711) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", stage_dir, strerror(-rc));
		return rc;
	}
	staged_etc = xasprintf("%s/etc", stage_dir); /* mounted in the launcher's namespace only */
	if ((rc = stage(cfg->workspace, "workspace", true, &staged_ws)) < 0 ||
	    (rc = stage(home_dir, "home", true, &staged_home)) < 0 ||
	    (rc = stage(launcher, "launcher", false, &staged_launcher)) < 0 ||
	    (mkdir(staged_etc, 0755) < 0 && (rc = -errno) != -EEXIST)) {
		snprintf(err, errlen, "staging the sandbox's paths in %s: %s", stage_dir,
			 strerror(-rc));
		return rc;
	}
	return 0;
}

static void unstage_paths(void)
{
	if (!stage_dir) {
		free(staged_ws);
		free(staged_home);
		free(staged_launcher);
		staged_ws = staged_home = staged_launcher = NULL;
		return;
	}
	unstage(&staged_ws);
	unstage(&staged_home);
	unstage(&staged_launcher);
	unstage(&staged_etc);
	rmdir(stage_dir);
	free(stage_dir);
	stage_dir = NULL;
}

/* A uid from uid_range has no passwd entry on the host: tools inside (whoami, git's ident,
 * getpwuid callers) get one from the sandbox's own /etc/passwd and /etc/group. */
static int make_etc_ids(char *err, size_t errlen)
{
	for (int i = 0; i < 2; i++) {
		etc_fds[i] = identity_etc_fd(&identity, SANDBOX_HOME, i == 1);
		if (etc_fds[i] < 0) {
			snprintf(err, errlen, "the sandbox's /etc/%s: %s", i ? "group" : "passwd",
				 strerror(-etc_fds[i]));
			return etc_fds[i];
		}
	}
	return 0;
}

static int prepare_isolation(char *err, size_t errlen)
{
	struct bwrap_spec bs = {
	    .bwrap = "/usr/bin/bwrap",
	    .tmp_size = config_tmp_size(cfg),
	    .shm_size = config_shm_size(cfg),
	    .uid = identity.uid,
	    .gid = identity.gid,
	};
	int rc;

	if (access(bs.bwrap, X_OK) < 0) {
		snprintf(err, errlen, "isolation = bwrap, but %s: %s (install bubblewrap, or set "
			 "isolation = none)", bs.bwrap, strerror(errno));
		return -ENOENT;
	}
	notify_fd = filter_notify_bpf_fd();
	if (notify_fd < 0)
		log_warnx("refused system calls will not be in the journal: %s", strerror(-notify_fd));
	seccomp_fd = filter_bpf_fd(notify_fd < 0);
	if (seccomp_fd < 0) {
		snprintf(err, errlen, "seccomp filter: %s", strerror(-seccomp_fd));
		return seccomp_fd;
	}
	if (own_uid && (rc = make_etc_ids(err, errlen)) < 0)
		return rc;
	if ((rc = stage_paths(err, errlen)) < 0)
		return rc;
	bs.etc_ids = own_uid;
	/* after bwrap's own fds (launch_spec's pass_fds) */
	bs.filter_fd = notify_fd >= 0 ? 4 + (own_uid ? 4 : 2) : 0;
	bs.etc_stage = staged_etc;
	if (staged_etc && !(etcv = etcview_prepare(staged_etc, own_uid))) {
		snprintf(err, errlen, "the sandbox's /etc: cannot list /etc: %s", strerror(errno));
		return -errno;
	}
	if ((etc_args_fd = bwrap_etc_fd(&bs)) < 0) {
		snprintf(err, errlen, "the sandbox's /etc: %s", strerror(-etc_args_fd));
		return etc_args_fd;
	}
	/* The daemon's own namespace, so that it can open the proxy's listeners in it; bwrap
	 * makes one itself where the daemon cannot (not root). */
	if (cfg->net_mode != NET_HOST && getuid() == 0 && (rc = netns_create()) < 0)
		log_warnx("no network namespace of the daemon's (%s): bwrap makes the sandbox's, "
			  "and there is no proxy",
			  strerror(-rc));
	bs.keep_net = cfg->net_mode == NET_HOST || netns_fd() >= 0;
	bs.workspace = staged_ws;
	bs.home = staged_home;
	bs.launcher = staged_launcher;
	bwrap = bwrap_argv(&bs);
	return 0;
}

/* The workspace as commands see it. */
static const char *inside_workspace(void)
{
	return cfg->isolate ? SANDBOX_WORKSPACE : cfg->workspace;
}

int sandbox_user(uid_t *uid, gid_t *gid)
{
	if (!cfg->isolate || getuid() != 0)
		return 0;
	*uid = identity.uid;
	*gid = identity.gid;
	return 1;
}

#define DESCRIBERS_MAX 4
static char *(*describers[DESCRIBERS_MAX])(void);
static size_t ndescribers;

void sandbox_describe_also(char *(*fn)(void))
{
	if (ndescribers == DESCRIBERS_MAX)
		fatalx("sandbox_describe_also: more than %d", DESCRIBERS_MAX);
	describers[ndescribers++] = fn;
}

char *sandbox_describe(void)
{
	char *cg = cgroup_describe(), *text, *net;
	bool dropped = cfg->isolate && getuid() == 0;

	net = net_describe();
	text = xasprintf("%suid %u\ngid %u\n%s", cg, (unsigned)(dropped ? identity.uid : getuid()),
			 (unsigned)(dropped ? identity.gid : getgid()), net);
	free(cg);
	free(net);
	core_lock();
	if (launch_failing()) {
		cg = text;
		text = xasprintf("%ssandbox down %s\n", cg,
				 ws_problem[0] ? ws_problem : "the launcher does not start");
		free(cg);
	}
	core_unlock();
	for (size_t i = 0; i < ndescribers; i++) {
		char *more = describers[i]();

		cg = text;
		text = xasprintf("%s%s", cg, more);
		free(cg);
		free(more);
	}
	return text;
}

/* In the watchdog, once the daemon died: what sandbox_stop would have undone. The mount is
 * detached only if it is still the daemon's own: a mount made since on the same path (a
 * fleet starts the sandbox's daemon again at once) is not this watchdog's to take. As root,
 * by umount2, which asks nothing of the filesystem above it (fusermount3 looks at the mount
 * point, and in a fleet that look can wait for the sandbox's new daemon). */
static void cleanup_after_daemon(void)
{
	char *argv[] = {"fusermount3", "-u", "-z", mountpoint, NULL};
	pid_t pid;

	log_warnx("the daemon died: cleaning up its sandbox and unmounting %s", mountpoint);
	cgroup_shutdown();
	unstage_paths();
	wsimage_detach();
	if (!own_mount || mountview_sbxfs_dev(mountpoint) != own_mount) {
		log_info("%s is no longer the dead daemon's mount: left as it is", mountpoint);
	} else if (getuid() == 0) {
		if (umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			log_warn("unmounting %s", mountpoint);
	} else if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) == 0) {
		waitpid(pid, NULL, 0);
	}
}

/* Commands own the workspace's root, and one that takes away its own access to it (chmod 000
 * /workspace) keeps bwrap, run as the same user, from entering it: before a restart that
 * follows a failed start, the user gets rwx and, with a root daemon, ownership of the root
 * back. Nothing below the root is touched. */
static void repair_workspace_root(void)
{
	char was[sizeof(ws_problem)];
	bool chown_it, chmod_it;
	struct stat st;
	int rc = 0;

	memcpy(was, ws_problem, sizeof(was));
	if (stat(cfg->workspace, &st) < 0) {
		snprintf(ws_problem, sizeof(ws_problem), "workspace %s: %s", cfg->workspace,
			 strerror(errno));
		if (strcmp(was, ws_problem) != 0)
			log_warnx("the sandbox cannot start: %s", ws_problem);
		return;
	}
	chown_it = getuid() == 0 && (st.st_uid != identity.uid || st.st_gid != identity.gid);
	chmod_it = (st.st_mode & 0700) != 0700;
	if (chown_it && chown(cfg->workspace, identity.uid, identity.gid) < 0)
		rc = -errno;
	if (rc == 0 && chmod_it && chmod(cfg->workspace, (st.st_mode & 07777) | 0700) < 0)
		rc = -errno;
	if (rc == 0) {
		if (chown_it || chmod_it)
			log_warnx("the sandbox did not start: its workspace root had mode %04o and "
				  "owner %u:%u; gave the sandbox's user rwx and ownership back",
				  st.st_mode & 07777, st.st_uid, st.st_gid);
		ws_problem[0] = '\0';
		return;
	}
	snprintf(ws_problem, sizeof(ws_problem),
		 "workspace root has mode %04o and owner %u:%u, and cannot be repaired: %s",
		 st.st_mode & 07777, st.st_uid, st.st_gid, strerror(-rc));
	if (strcmp(was, ws_problem) != 0)
		log_warnx("the sandbox cannot start: %s", ws_problem);
}

/* In the launcher's child, as root (launch.h): a mount namespace of its own with the sandbox's
 * /etc made in it, and nothing of the host's but what bwrap binds from (mountview.h). */
static int launcher_mounts(void)
{
	int rc = mountview_own();

	if (rc == 0)
		rc = etcview_make(etcv);
	return rc < 0 ? rc : mountview_prune(stage_dir);
}

int sandbox_start(const char *mnt, char *err, size_t errlen)
{
	struct cg_limits lim = {cfg->memory_max, cfg->pids_max, cfg->cpu_max};
	struct launch_spec ls = {.launcher = launcher, .netns = -1};
	int rc;

	state_lock_running(); /* the daemon's pid: sandbox_prepare ran before the fork */
	/* after the fork: its writer thread is this process's */
	if ((rc = open_journal(err, errlen)) < 0)
		return rc;
	if ((rc = loop_init()) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-rc));
		return rc;
	}
	if ((rc = cgroup_init(cfg->cgroup, &lim, err, errlen)) < 0)
		return rc;
	cgroup_mem_init(config_session_memory(cfg));
	log_info("cgroup: %s; isolation: %s", cgroup_mode(), cfg->isolate ? "bwrap" : "none");
	if (cfg->isolate) {
		if ((rc = prepare_isolation(err, errlen)) < 0)
			return rc;
		ls = (struct launch_spec){.launcher = launcher,
					  .bwrap_argv = bwrap,
					  .pass_fds = {seccomp_fd, etc_args_fd, etc_fds[0],
						       etc_fds[1]},
					  .npass = own_uid ? 4 : 2,
					  .id = &identity,
					  .netns = netns_fd(),
					  .child_setup = getuid() == 0 ? launcher_mounts : NULL,
					  .repair = repair_workspace_root};
	}
	if (cfg->isolate && notify_fd >= 0)
		ls.pass_fds[ls.npass++] = notify_fd;
	ls.cg = cgroup_launcher();
	refused_calls_init();
	fdres_init();
	core_lock();
	rc = launch_init(&ls, err, errlen);
	core_unlock();
	if (rc < 0)
		return rc;
	if ((rc = net_init(cfg, netproxy, err, errlen)) < 0)
		return rc;
	if ((rc = expose_init(cfg)) < 0) {
		snprintf(err, errlen, "exposed ports: %s", strerror(-rc));
		return rc;
	}
	spool_budget_init(cfg->spool_max);
	saved_init(cfg->state_dir);
	sessions_init(cfg, spool_dir, inside_workspace(),
		      cfg->isolate && getuid() == 0 ? &identity : NULL);
	/* As the sandbox's user, it reaches the workspace where bwrap does (the staged bind). */
	checkout_run_init(git_helper, staged_ws ? staged_ws : cfg->workspace, inside_workspace(),
			  cfg->isolate && getuid() == 0 ? &identity : NULL);
	contexts_init(cfg, spool_dir, inside_workspace(),
		      cfg->isolate && getuid() == 0 ? &identity : NULL);
	if ((rc = session_create(SESSION_DEFAULT, NULL, NULL)) < 0) {
		snprintf(err, errlen, "default session: %s", strerror(-rc));
		return rc;
	}
	mountpoint = xstrdup(mnt);
	own_mount = mountview_sbxfs_dev(mnt); /* before the watchdog, which compares with it */
	if ((rc = watchdog_start(cleanup_after_daemon, state_lock_fd())) < 0)
		log_warnx("no watchdog: %s", strerror(-rc));
	if ((rc = loop_start()) < 0) {
		snprintf(err, errlen, "event loop thread: %s", strerror(-rc));
		return rc;
	}
	saved_restore();
	if (cfg->journal_max && (rc = wswatch_start(cfg->workspace)) < 0)
		log_warnx("workspace changes will not be in the journal: %s", strerror(-rc));
	return 0;
}

void sandbox_stop(void)
{
	saved_stop(); /* before anything of it goes */
	wswatch_stop();
	/* From here on, a launcher that dies was told to (or signalled with the daemon) and a
	 * mount waiting for the state dir knows this daemon is on its way out. */
	state_lock_stopping();
	launch_stopping();
	expose_shutdown();
	contexts_shutdown();
	sessions_shutdown();
	journal_follow_shutdown();
	core_lock();
	refused_calls_stop();
	core_unlock();
	loop_stop();
	net_shutdown();
	launch_shutdown();
	checkout_run_shutdown();
	spool_pool_clear();
	fdres_shutdown();
	cgroup_shutdown();
	bwrap_argv_free(bwrap);
	if (seccomp_fd >= 0)
		close(seccomp_fd);
	if (notify_fd >= 0)
		close(notify_fd);
	seccomp_fd = notify_fd = -1;
	if (etc_args_fd >= 0)
		close(etc_args_fd);
	etc_args_fd = -1;
	for (int i = 0; i < 2; i++)
		if (etc_fds[i] >= 0)
			close(etc_fds[i]);
	unstage_paths();
	wsimage_detach();
	free(home_dir);
	home_dir = NULL;
	free(mountpoint);
	etcview_free(etcv);
	etcv = NULL;
	free(git_helper);
	free(netproxy);
	free(launcher);
	free(spool_dir);
	journal_note_stop();
	journal_close();
	state_lock_release();
	/* Only now: a daemon killed while it was stopping (a bomb slowing its kills, a second
	 * signal) leaves the rest to the watchdog, which redoes what is done harmlessly. */
	watchdog_disarm();
	launch_reap_all();
}
