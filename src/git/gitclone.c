/* sbxfs-git: clones one repository into the workspace with libgit2, for a session's checkout
 * file. The daemon starts it as the sandbox's user, outside the sandbox (so it works when the
 * sandbox has no network), and reads its stdout: progress lines, then one last line,
 * "ok SHA DIR BRANCH" or "error CODE: MESSAGE". Before cloning it creates the target below the
 * workspace without following any symlink, then confines its own writes to the target with
 * Landlock, so a hostile repository or a planted symlink cannot make it write elsewhere.
 *
 * Its policy: no connection to a loopback, private or other non-public address (gitnet.c)
 * unless --allow-private, and local sources only in the workspace or a --local-root
 * (gitlocal.c), kept by confining its reads with Landlock too. What it reads is the sandbox's
 * to choose, so it refuses a blob larger than --object-max before reading it (libgit2 reads a
 * blob whole), keeps libgit2's caches small, and names no host path in its errors (gitpath.c):
 * a local source that cannot be read ends with one text, whether what it leads to is missing
 * or not allowed. The daemon bounds its memory and file sizes (cgroup, rlimits).
 *
 * usage: sbxfs-git [--allow-private] [--local-root=DIR]... [--inside=DIR] [--object-max=N]
 *                  [--] WORKSPACE TARGET-RELATIVE-TO-WORKSPACE SHOWN-DIR URL [BRANCH]
 * --inside: the workspace as commands see it; a local source there is read by WORKSPACE.
 * --object-max: in bytes, 0 for no bound (the default).
 * The credential for https comes from $GIT_TOKEN. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "escape.h"
#include "gitconfine.h"
#include "giterr.h"
#include "gitlocal.h"
#include "gitnet.h"
#include "gitpath.h"
#include "xmalloc.h"

/* Under LeakSanitizer (the CI's ASan build): pcre2, which libgit2 uses for its config,
 * keeps match data until exit; that is not ours to free. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpcre2-8.so\n";
}

/* Under AddressSanitizer: its quarantine of freed blocks (256 MiB by default, and the daemon
 * passes no ASAN_OPTIONS on) would count against the checkout's memory limit. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=4";
}

/* libgit2's own memory: its object cache, and the pack windows it maps (1 GiB each and 8 GiB
 * in all by default), which a large pack would otherwise map whole. */
#define CACHE_MAX      (32 << 20)
#define MWINDOW_SIZE   (32 << 20)
#define MWINDOW_MAPPED (128 << 20)

struct progress {
	int recv_pct, delta_pct, checkout_pct;
	int cred_tries;
	git_repository *repo;	 /* the clone, once made */
	unsigned long long max;	 /* --object-max, 0: none */
	char *large;		 /* the file whose blob is past max */
	unsigned long long size; /* and its size */
	const char *shown;	 /* the target as commands see it */
	bool fetched;		 /* errors from now on are not the source's */
};

/* What the clone reads from: a local source's errors all read the same (see fail_git). */
static bool local_source;

static void __attribute__((format(printf, 2, 3), noreturn)) fail(const char *code,
								   const char *fmt, ...)
{
	char *msg = NULL, *shown;
	size_t n;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vasprintf(&msg, fmt, ap);
	va_end(ap);
	/* one line whatever a server said: the last line alone tells ok from error */
	shown = len < 0 ? NULL : esc_encode(msg, strnlen(msg, (size_t)len), &n);
	printf("error %s: %s\n", code, shown ? shown : "(no memory for the message)");
	fflush(stdout);
	free(shown);
	free(msg);
	exit(1);
}

static int percent(unsigned done, unsigned total)
{
	return total ? (int)((100ull * done) / total) : 100;
}

static int on_transfer(const git_indexer_progress *st, void *payload)
{
	struct progress *p = payload;
	int r = percent(st->received_objects, st->total_objects);
	int d = percent(st->indexed_deltas, st->total_deltas);

	if (st->received_objects < st->total_objects || p->recv_pct < 100) {
		if (r != p->recv_pct)
			printf("receiving objects %d%% (%u/%u)\n", r, st->received_objects,
			       st->total_objects);
		p->recv_pct = r;
	} else if (st->total_deltas && d != p->delta_pct) {
		printf("resolving deltas %d%% (%u/%u)\n", d, st->indexed_deltas,
		       st->total_deltas);
		p->delta_pct = d;
	}
	fflush(stdout);
	return 0;
}

static void on_checkout(const char *path, size_t done, size_t total, void *payload)
{
	struct progress *p = payload;
	int c = percent((unsigned)done, (unsigned)total);

	(void)path;
	p->fetched = true;
	if (c != p->checkout_pct) {
		printf("checking out files %d%% (%zu/%zu)\n", c, done, total);
		fflush(stdout);
	}
	p->checkout_pct = c;
}

/* Before a file is written (and its blob read): its blob's size from the object's header. */
static int on_notify(git_checkout_notify_t why, const char *path, const git_diff_file *baseline,
		     const git_diff_file *target, const git_diff_file *workdir, void *payload)
{
	struct progress *p = payload;
	git_object_t type;
	git_odb *odb = NULL;
	size_t size = 0;
	int rc;

	(void)why;
	(void)baseline;
	(void)workdir;
	p->fetched = true;
	if (!p->max || !p->repo || !target || git_oid_is_zero(&target->id) ||
	    git_repository_odb(&odb, p->repo) < 0)
		return 0;
	/* A submodule's commit is not there: checkout skips it. */
	rc = git_odb_read_header(&size, &type, odb, &target->id);
	git_odb_free(odb);
	if (rc < 0 || type != GIT_OBJECT_BLOB || size <= p->max)
		return 0;
	p->large = xstrdup(path ? path : "");
	p->size = size;
	/* Cancels the checkout before anything is written; negative, as the callers test. */
	return GIT_EUSER;
}

static void set_checkout_callbacks(git_checkout_options *co, struct progress *p)
{
	co->progress_cb = on_checkout;
	co->progress_payload = p;
	co->notify_flags = GIT_CHECKOUT_NOTIFY_UPDATED;
	co->notify_cb = on_notify;
	co->notify_payload = p;
}

/* git_clone's own, keeping the repository for on_notify. */
static int make_repo(git_repository **out, const char *path, int bare, void *payload)
{
	struct progress *p = payload;
	int rc = git_repository_init(out, path, (unsigned)bare);

	if (rc == 0)
		p->repo = *out;
	return rc;
}

static int on_credentials(git_credential **out, const char *url, const char *user,
			  unsigned int allowed, void *payload)
{
	const char *token = getenv("GIT_TOKEN");
	struct progress *p = payload;

	(void)url;
	/* One try: a wrong token must end as an auth error, not a loop. */
	if (!token || !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) || p->cred_tries++ > 0)
		return GIT_PASSTHROUGH;
	return git_credential_userpass_plaintext_new(out, user ? user : "git", token);
}

/* The libgit2 error in our codes, told by libgit2's own text; shown without what a server
 * said, and without host paths. */
static void __attribute__((noreturn)) fail_git(int rc, const char *url, const struct progress *p)
{
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "unknown error";
	char *shown = gitpath_shown(giterr_shown(msg));

	if (p->large)
		fail("too-large",
		     "%s/%s is %llu bytes, more than the %llu a checkout takes "
		     "([session] git_object_max)",
		     p->shown, p->large, p->size, p->max);
	if ((e && e->klass == GIT_ERROR_NOMEMORY) || strstr(msg, strerror(ENOMEM)))
		fail("too-large", "out of memory: an object is larger than a checkout may hold "
				  "([session] git_object_max)");
	if (strstr(msg, strerror(EFBIG)))
		fail("too-large", "%s ([session] git_file_max)", shown);
	/* Fetching from a local source reads what its .git file, symlinks and alternates lead
	 * to: whether that is missing, not allowed (Landlock) or no repository, and where it is,
	 * would tell the sandbox about host paths, so it all reads the same. A full disk is the
	 * target's. */
	if (local_source && !p->fetched && !strstr(msg, strerror(ENOSPC)) &&
	    !strstr(msg, strerror(EDQUOT)))
		fail("not-found", "%s: not a git repository, or not one a checkout may read", url);
	/* A refused connection ends as libgit2's "failed to connect": say why. */
	if (gitnet_refused())
		fail("network", "%s refused by policy", gitnet_refused());
	/* HTTP statuses as libgit2 says them ("unexpected http status code: 401"): a bare "401"
	 * could be in what the server sent (a content type, a reply), which is anything */
	if (rc == GIT_EAUTH || strstr(msg, "code: 401") || strstr(msg, "authentication"))
		fail("auth", "%s", shown);
	if (strstr(msg, "unsupported URL protocol") || strstr(msg, "invalid url") ||
	    strstr(msg, "malformed URL") || rc == GIT_EINVALIDSPEC)
		fail("invalid-url", "%s", shown);
	if (rc == GIT_ENOTFOUND || strstr(msg, "code: 404") || strstr(msg, "not found") ||
	    strstr(msg, "failed to resolve path") || strstr(msg, "not exported") ||
	    strstr(msg, "does not appear to be a git repository") ||
	    strstr(msg, "could not find repository"))
		fail("not-found", "%s: %s", url, shown);
	if (e && (e->klass == GIT_ERROR_NET || e->klass == GIT_ERROR_SSL ||
		  e->klass == GIT_ERROR_HTTP || e->klass == GIT_ERROR_SSH ||
		  strstr(msg, "connect") || strstr(msg, "resolve")))
		fail("network", "%s", shown);
	fail("io", "%s", shown);
}

static int openat2_beneath(int dirfd, const char *name, int flags)
{
	struct open_how how = {.flags = (unsigned long long)flags,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

/* Empties dir (an fd) after a failed clone; Landlock keeps this inside the target too. */
static void remove_contents(int dir)
{
	int dfd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno != EISDIR)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			remove_contents(sub);
			close(sub);
		}
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
}

static int target_fd = -1;

static void cleanup_on_failure(int status, void *arg)
{
	(void)arg;
	if (status != 0 && target_fd >= 0)
		remove_contents(target_fd);
}

/* mkdir -p of rel below the workspace, refusing any symlink on the way. */
static int make_target(const char *workspace, const char *rel)
{
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *copy = strdup(rel), *save, *part;

	if (fd < 0)
		fail("io", "cannot open the workspace: %s", strerror(errno));

	for (part = strtok_r(copy, "/", &save); fd >= 0 && part; part = strtok_r(NULL, "/", &save)) {
		int next;

		if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST)
			fail("io", "cannot create %s: %s", rel, strerror(errno));
		next = openat2_beneath(fd, part, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0)
			fail("io", "%s: %s (symlinks are not followed)", rel, strerror(errno));
		close(fd);
		fd = next;
	}
	free(copy);
	return fd;
}

static void require_empty(int fd, const char *shown)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	if (n > 0)
		fail("exists", "%s is not empty", shown);
}

/* Checks out branch (or tag) name, as git clone -b does. */
static void checkout_ref(git_repository *repo, const char *name, struct progress *p)
{
	git_checkout_options co;
	char ref[512];
	git_object *target = NULL;
	git_reference *branch = NULL;
	int rc;

	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_SAFE;
	set_checkout_callbacks(&co, p);
	/* The remote's default branch: HEAD already, its files only need checking out. */
	if (git_branch_lookup(&branch, repo, name, GIT_BRANCH_LOCAL) == 0 &&
	    git_branch_is_head(branch) == 1) {
		git_reference_free(branch);
		co.checkout_strategy = GIT_CHECKOUT_FORCE;
		if ((rc = git_checkout_head(repo, &co)) < 0)
			fail_git(rc, name, p);
		return;
	}
	git_reference_free(branch);
	branch = NULL;
	snprintf(ref, sizeof(ref), "refs/remotes/origin/%s", name);
	if (git_revparse_single(&target, repo, ref) == 0) {
		git_commit *c = NULL;

		if ((rc = git_commit_lookup(&c, repo, git_object_id(target))) < 0 ||
		    (rc = git_branch_create(&branch, repo, name, c, 1)) < 0 ||
		    (rc = git_branch_set_upstream(branch, ref + strlen("refs/remotes/"))) < 0 ||
		    (rc = git_checkout_tree(repo, target, &co)) < 0 ||
		    (rc = git_repository_set_head(repo, git_reference_name(branch))) < 0)
			fail_git(rc, name, p);
		git_commit_free(c);
		git_reference_free(branch);
		git_object_free(target);
		return;
	}
	snprintf(ref, sizeof(ref), "refs/tags/%s", name);
	if (git_revparse_single(&target, repo, ref) < 0)
		fail("branch-not-found", "no branch or tag named %s", name);
	if ((rc = git_checkout_tree(repo, target, &co)) < 0 ||
	    (rc = git_repository_set_head_detached(repo, git_object_id(target))) < 0)
		fail_git(rc, name, p);
	git_object_free(target);
}

static void report_head(git_repository *repo, const char *shown, const struct progress *p)
{
	char sha[GIT_OID_HEXSZ + 1], *quoted;
	git_reference *head = NULL;
	const char *name = "HEAD";
	size_t n;
	int rc;

	if ((rc = git_repository_head(&head, repo)) < 0)
		fail_git(rc, shown, p);
	git_oid_tostr(sha, sizeof(sha), git_reference_target(head));
	if (git_reference_is_branch(head))
		name = git_reference_shorthand(head);
	quoted = esc_encode(shown, strlen(shown), &n); /* dir= may hold a \r */
	printf("ok %s %s %s\n", sha, quoted, name);
	free(quoted);
	fflush(stdout);
	git_reference_free(head);
}

#define USAGE                                                                                      \
	"usage: sbxfs-git [--allow-private] [--local-root=DIR]... [--inside=DIR] "                 \
	"[--object-max=N] [--] WORKSPACE TARGET SHOWN-DIR URL [BRANCH]\n"

static bool is_number(const char *s)
{
	return s[0] && strspn(s, "0123456789") == strlen(s);
}

/* The options before the positional arguments; returns the index of the first of those.
 * roots gets the workspace's place: [0] is left for it. */
static int parse_options(int argc, char **argv, char ***roots, const char **inside,
			 unsigned long long *max)
{
	size_t n = 1;
	int i;

	*roots = calloc((size_t)argc + 1, sizeof(char *));
	if (!*roots)
		fail("io", "out of memory");
	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--allow-private"))
			gitnet_init(true);
		else if (!strncmp(argv[i], "--local-root=", 13) && argv[i][13] == '/')
			(*roots)[n++] = argv[i] + 13;
		else if (!strncmp(argv[i], "--inside=", 9) && argv[i][9] == '/')
			*inside = argv[i] + 9;
		else if (!strncmp(argv[i], "--object-max=", 13) && is_number(argv[i] + 13))
			*max = strtoull(argv[i] + 13, NULL, 10);
		else
			break;
	}
	if (argc - i < 4 || argc - i > 5) {
		fprintf(stderr, USAGE);
		exit(2);
	}
	return i;
}

/* A local source outside the workspace and the roots is refused before anything is made;
 * url is what asked names, with the workspace by its host path. */
static void check_source(const char *asked, const char *url, char **roots)
{
	char *local = gitlocal_path(url), *shown = gitlocal_path(asked);

	if (local && gitlocal_check(local, roots) < 0)
		fail("policy", "%s is outside the workspace and git_local_roots", shown);
	free(local);
	free(shown);
}

/* Writes below the target only; reads below it, the local roots and what libgit2 and the
 * resolver need of the system. */
static void confine(int fd, char **roots)
{
	static const char *const system[] = {"/usr",	   "/etc",	"/lib",
					     "/lib64",	   "/bin",	"/sbin",
					     "/proc/self", "/dev/null", "/dev/urandom"};
	const size_t n_sys = sizeof(system) / sizeof(system[0]);
	char *resolv = realpath("/etc/resolv.conf", NULL); /* often a link into /run */
	const char **readable;
	bool unavailable;
	size_t n = 0;
	int rc;

	for (; roots[n]; n++)
		;
	readable = calloc(n + n_sys + 2, sizeof(char *));
	if (!readable)
		fail("io", "out of memory");
	memcpy(readable, roots, n * sizeof(char *));
	memcpy(readable + n, system, n_sys * sizeof(char *));
	readable[n + n_sys] = resolv;
	rc = gitconfine(fd, readable, &unavailable);
	if (rc < 0 && unavailable)
		fail("io", "landlock is not available (%s): refusing to clone unconfined",
		     strerror(-rc));
	if (rc < 0)
		fail("io", "landlock: %s", strerror(-rc));
	free(readable);
	free(resolv);
}

int main(int argc, char **argv)
{
	git_clone_options opts;
	struct progress p = {-1, -1, -1, 0, NULL, 0, NULL, 0, NULL, false};
	git_repository *repo = NULL;
	const char *branch, *shown, *inside = NULL;
	char path[64], **roots, *url, *local;
	int fd, rc, arg;

	setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows as it happens */
	arg = parse_options(argc, argv, &roots, &inside, &p.max);
	roots[0] = argv[arg];
	shown = p.shown = argv[arg + 2];
	url = inside ? gitlocal_rebase(argv[arg + 3], inside, argv[arg]) : strdup(argv[arg + 3]);
	if (!url)
		fail("io", "out of memory");
	branch = argc - arg == 5 ? argv[arg + 4] : NULL;
	check_source(argv[arg + 3], url, roots);
	local = gitlocal_path(url);
	local_source = local != NULL;
	free(local);
	fd = make_target(argv[arg], argv[arg + 1]);
	require_empty(fd, shown);
	gitpath_init(argv[arg], inside ? inside : argv[arg], fd, shown);
	confine(fd, roots);
	free(roots);
	target_fd = fd;
	on_exit(cleanup_on_failure, NULL);
	git_libgit2_init();
	/* The source belongs to whoever made it, not to the sandbox's user: reading it is all
	 * we do, so git's ownership check (safe.directory) does not apply. */
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)CACHE_MAX);
	git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)MWINDOW_SIZE);
	git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)MWINDOW_MAPPED);
	git_clone_options_init(&opts, GIT_CLONE_OPTIONS_VERSION);
	opts.fetch_opts.callbacks.transfer_progress = on_transfer;
	opts.fetch_opts.callbacks.credentials = on_credentials;
	opts.fetch_opts.callbacks.payload = &p;
	/* No proxy, not even one from http.proxy in /etc/gitconfig (the environment has none). */
	opts.fetch_opts.proxy_opts.type = GIT_PROXY_NONE;
	set_checkout_callbacks(&opts.checkout_opts, &p);
	opts.repository_cb = make_repo;
	opts.repository_cb_payload = &p;
	/* libgit2's file:// transport packs what it sends, reading every object whole and
	 * holding a window of them to find deltas (668 MB for a 400 MB repository of 20 MB
	 * files): copy the object files instead, as for a plain path, but without hard links. */
	if (!strncmp(url, "file://", 7))
		opts.local = GIT_CLONE_LOCAL_NO_LINKS;
	/* With a branch or tag, check out once we know which of the two it is. */
	if (branch)
		opts.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = git_clone(&repo, url, path, &opts);
	if (rc < 0)
		fail_git(rc, argv[arg + 3], &p);
	p.fetched = true;
	if (branch)
		checkout_ref(repo, branch, &p);
	report_head(repo, shown, &p);
	git_repository_free(repo);
	git_libgit2_shutdown();
	free(url);
	return 0;
}
