/* sbxfs-git's Landlock confinement (see gitconfine.h). Reads are confined too, so that no
 * symlink, .git file or alternates file in a source repository, and no race with the sandbox's
 * commands, can make a clone read what the policy on local sources refused. */
#include "gitconfine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WRITES                                                                                     \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                           \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                           \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |                             \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)
#define READS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static int add_rule(int rs, int fd, __u64 access)
{
	struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};

	return syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0 ? -errno
											    : 0;
}

/* Read access below path (only READ_FILE for a file: a rule on a file takes no directory
 * right). */
static int add_readable(int rs, const char *path)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	struct stat st;
	int rc;

	if (fd < 0)
		return errno == ENOENT || errno == EACCES ? 0 : -errno;
	rc = fstat(fd, &st) < 0
		 ? -errno
		 : add_rule(rs, fd, S_ISDIR(st.st_mode) ? READS : LANDLOCK_ACCESS_FS_READ_FILE);
	close(fd);
	return rc;
}

int gitconfine(int target_fd, const char *const *readable, bool *unavailable)
{
	struct landlock_ruleset_attr attr = {.handled_access_fs = WRITES | READS};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	int rc;

	*unavailable = rs < 0;
	if (rs < 0)
		return -errno;
	rc = add_rule(rs, target_fd, WRITES | READS);
	for (size_t i = 0; rc == 0 && readable[i]; i++)
		rc = add_readable(rs, readable[i]);
	if (rc == 0 && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			syscall(SYS_landlock_restrict_self, rs, 0) < 0))
		rc = -errno;
	close(rs);
	return rc;
}
