/* Requests that create files run as their caller: the umask the kernel sends, and when the
 * daemon is root the caller's fsuid, fsgid and supplementary groups on the handling thread (or,
 * for the mount owner under the idmap, root's powers and a hand-over to the sandbox user). Owns
 * the daemon's own credentials, which each such request puts back. */
#include "ws_priv.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "idmap.h"
#include "log.h"
#include "xmalloc.h"

/* The daemon's own credentials, put back after a request ran as its caller. */
static struct {
	bool root; /* euid 0: files made through workspace/ get the caller's owner */
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t *groups;
} self;

static __thread bool thread_fs_private;

/* The caller's supplementary groups, or none if they cannot be read (process gone). */
static int caller_groups(fuse_req_t req, gid_t *small, int nsmall, gid_t **out)
{
	int n = fuse_req_getgroups(req, nsmall, small);
	gid_t *big;

	*out = small;
	if (n <= nsmall)
		return n < 0 ? 0 : n;
	big = xmalloc((size_t)n * sizeof(*big));
	n = fuse_req_getgroups(req, n, big);
	if (n < 0) {
		free(big);
		return 0;
	}
	*out = big;
	return n;
}

/* Runs the rest of a creating request as its caller. The umask: the kernel sends it instead of
 * applying it (FUSE_CAP_DONT_MASK), so the backing filesystem applies it, or a default ACL
 * instead, as a local filesystem would. The owner: when the daemon is root and the caller is
 * someone else, fsuid, fsgid and the supplementary groups of this thread become the caller's
 * (raw syscalls: glibc would change every thread), so new files belong to the caller, setgid
 * directories and the S_ISGID bit behave as for the caller, and the backing filesystem checks
 * the same permissions the kernel already checked on the mount (default_permissions). A fsuid
 * other than 0 drops the file-system capabilities; going back to 0 restores them. */
void ws_cred_as_caller(fuse_req_t req, struct ws_cred *c)
{
	static atomic_bool warned;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t small[32], *groups, gid;
	uid_t uid;
	int n;

	memset(c, 0, sizeof(*c));
	if (!thread_fs_private) {
		if (unshare(CLONE_FS) == 0)
			thread_fs_private = true;
		else if (!atomic_exchange(&warned, true))
			log_warn("workspace: unshare(CLONE_FS); new files get the daemon's umask");
	}
	if (thread_fs_private) {
		c->umask = umask(ctx->umask & 07777);
		c->umask_set = true;
	}
	uid = idmap_uid(ctx->uid);
	gid = idmap_gid(ctx->gid);
	if (self.root && uid != ctx->uid && ctx->uid == self.uid) {
		/* The mount owner (root), whose files are stored as the sandbox user's: create
		 * with root's powers, as a local fs would, then give the new file away. */
		c->adopt = true;
		c->adopt_uid = uid;
		c->adopt_gid = gid;
		return;
	}
	if (!self.root || (ctx->uid == self.uid && ctx->gid == self.gid))
		return;
	n = caller_groups(req, small, (int)(sizeof(small) / sizeof(small[0])), &groups);
	if (syscall(SYS_setgroups, (size_t)n, groups) == -1)
		log_warn("workspace: setgroups");
	if (groups != small)
		free(groups);
	setfsgid(ctx->gid);
	setfsuid(ctx->uid);
	c->switched = true;
}

/* Hands a file the mount owner just made (dirfd/name, or fd) to the sandbox user, keeping its
 * mode (a chown clears the set-id bits) and a group other than the owner's (setgid dirs). */
void ws_cred_adopt_new(const struct ws_cred *c, int dirfd, const char *name, int fd)
{
	struct stat st;
	gid_t gid;
	int rc;

	if (!c->adopt)
		return;
	rc = fd >= 0 ? fstat(fd, &st) : fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0 || st.st_uid != self.uid)
		return;
	gid = st.st_gid == self.gid ? c->adopt_gid : st.st_gid;
	rc = fd >= 0 ? fchown(fd, c->adopt_uid, gid)
		     : fchownat(dirfd, name, c->adopt_uid, gid, AT_SYMLINK_NOFOLLOW);
	if (rc < 0) {
		log_warn("workspace: giving %s to the sandbox user", name ? name : "a new file");
		return;
	}
	if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
		if (fd >= 0)
			fchmod(fd, st.st_mode & 07777);
		else
			fchmodat(dirfd, name, st.st_mode & 07777, 0);
	}
}

void ws_cred_restore(const struct ws_cred *c)
{
	int saved = errno;

	if (c->switched) {
		setfsuid(self.uid);
		setfsgid(self.gid);
		if (syscall(SYS_setgroups, (size_t)self.ngroups, self.groups) == -1)
			log_warn("workspace: setgroups restore");
	}
	if (c->umask_set)
		umask(c->umask);
	errno = saved;
}

void ws_cred_remember_self(void)
{
	int n;

	self.uid = geteuid();
	self.gid = getegid();
	self.root = self.uid == 0;
	n = getgroups(0, NULL);
	if (n > 0) {
		self.groups = xmalloc((size_t)n * sizeof(gid_t));
		n = getgroups(n, self.groups);
	}
	self.ngroups = n > 0 ? n : 0;
}

void ws_cred_forget_self(void)
{
	free(self.groups);
	self.groups = NULL;
}

bool ws_cred_root(void)
{
	return self.root;
}
