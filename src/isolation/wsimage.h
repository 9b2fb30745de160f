/* The bounded workspace ([sandbox] workspace_max): an ext4 image file in the state directory,
 * made at the first start and kept across restarts, loop-mounted (nosuid, nodev) over the
 * workspace directory while the daemon runs, so that everything that reaches the workspace by
 * its path (the kernel mount of workspace/, the FUSE workspace, bwrap's bind, git checkouts)
 * works in the image, and a command that fills it gets ENOSPC. */
#ifndef SBX_WSIMAGE_H
#define SBX_WSIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Mounts STATE_DIR/workspace.img, of max bytes, over the workspace directory: made (sparse,
 * mkfs of fstype, "ext4" or "xfs") when there is none, which needs an empty workspace
 * directory; grown when max grew. Root only. On error returns -errno with a reason in err. */
int wsimage_attach(const char *workspace, const char *state_dir, uint64_t max, const char *fstype,
		   char *err, size_t errlen);
/* The same for the sandbox user's home (STATE_DIR/home.img, always ext4): [sandbox] home_max. */
int wsimage_attach_home(const char *home, const char *state_dir, uint64_t max, char *err,
			size_t errlen);
/* An XFS image's directory for snapshots, on the workspace's filesystem (so they are reflinks
 * of its files); NULL for none. */
const char *wsimage_snapshot_dir(void);
/* Unmounts both (lazily: the host's workspace/ mount may hold it a moment longer); the loop
 * device goes with the last reference. Nothing when none is attached. */
void wsimage_detach(void);

#endif
