/* The sandbox user's home: STATE_DIR/home on the host, SANDBOX_HOME inside. It is out of the
 * workspace so that what tools keep in HOME (npm's, pip's and yarn's caches, dotfiles) is not
 * in the workspace, its snapshots and its backups; it lives as long as the state dir. The
 * daemon makes it and its image and never reads what is in it: that is the sandbox's. */
#include "home.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wsimage.h"
#include "xmalloc.h"

/* Its top belongs to the sandbox's user, mode 0700: opened without following a link, though
 * only the daemon writes the state dir. */
static int give(const char *path, uid_t uid, gid_t gid)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if ((uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) || fchmod(fd, 0700) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int home_prepare(const struct config *cfg, uid_t uid, gid_t gid, char **path, char *err,
		 size_t errlen)
{
	uint64_t max = config_home_max(cfg);
	char *home = xasprintf("%s/home", cfg->state_dir);
	int rc = mkdir(home, 0700) < 0 && errno != EEXIST ? -errno : 0;

	if (rc == 0 && max &&
	    (rc = wsimage_attach_home(home, cfg->state_dir, max, err, errlen)) < 0)
		goto out; /* err says why */
	if (rc == 0)
		rc = give(home, uid, gid);
	if (rc < 0)
		snprintf(err, errlen, "the sandbox's home %s: %s", home, strerror(-rc));
out:
	if (rc < 0) {
		free(home);
		return rc;
	}
	*path = home;
	return 0;
}
