/* The sandbox's identity (see identity.h). Root must be dropped before bwrap is exec'd: a
 * bwrap started by root keeps kernel uid 0 inside, whatever --uid says. */
#include "identity.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdres.h"
#include "xmalloc.h"

extern char **environ;

static int create_user(const char *user)
{
	char *argv[] = {"useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
			(char *)user, NULL};
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, "useradd", NULL, NULL, argv, environ) != 0)
		return -ENOENT;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	return 0;
}

int identity_resolve(const char *user, struct identity *id, char *err, size_t errlen)
{
	struct passwd *pw;
	int rc;

	if (getuid() != 0) {
		id->uid = getuid();
		id->gid = getgid();
		return 0;
	}
	pw = getpwnam(user);
	if (!pw) {
		rc = create_user(user);
		if (rc < 0) {
			snprintf(err, errlen, "sandbox user %s does not exist and useradd failed",
				 user);
			return rc;
		}
		pw = getpwnam(user);
	}
	if (!pw || pw->pw_uid == 0) {
		snprintf(err, errlen, "sandbox user %s: %s", user,
			 pw ? "must not be root" : "not found");
		return -EINVAL;
	}
	id->uid = pw->pw_uid;
	id->gid = pw->pw_gid;
	return 0;
}

int identity_etc_fd(const struct identity *id, const char *home, bool group)
{
	char *text =
	    group ? xasprintf("root:x:0:\nsbxfs:x:%u:\nnogroup:x:65534:\n", (unsigned)id->gid)
		  : xasprintf("root:x:0:0:root:/root:/bin/bash\n"
			      "sbxfs:x:%u:%u:sbxfs sandbox:%s:/bin/bash\n"
			      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			      (unsigned)id->uid, (unsigned)id->gid, home);
	size_t len = strlen(text);
	int fd = memfd_create(group ? "sbxfs-group" : "sbxfs-passwd", MFD_CLOEXEC), rc = 0;

	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	free(text);
	if (rc < 0 && fd >= 0)
		close(fd);
	return rc < 0 ? rc : fd;
}

int identity_drop(const struct identity *id)
{
	if (getuid() == 0 && setgroups(0, NULL) < 0)
		return -errno;
	if (setresgid(id->gid, id->gid, id->gid) < 0 || setresuid(id->uid, id->uid, id->uid) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

int identity_pipe(int p[2], const struct identity *owner)
{
	int rc;

	/* A pipe belongs to whoever made it (fsuid, which is per thread). */
	if (!owner)
		return fdres_pipe(p);
	setfsgid(owner->gid);
	setfsuid(owner->uid);
	rc = fdres_pipe(p);
	setfsuid(0);
	setfsgid(0);
	return rc;
}
