/* What the handover's files share (not for the rest of isolation/): handover.c watches and
 * hands over, handover_dirs.c keeps the table of watched directories. All calls with the
 * handover's lock held. */
#ifndef SBX_HANDOVER_PRIV_H
#define SBX_HANDOVER_PRIV_H

#include <stdbool.h>

/* Chooses how directories are kept: by file handle, which holds no descriptor, when the
 * daemon may open handles (CAP_DAC_READ_SEARCH) on the workspace's filesystem (root_fd);
 * else by O_PATH descriptor, at most a quarter of the open file limit. */
void handover_dirs_init(int root_fd);
/* Records directory fd (not taken) under watch wd. 0, or -EMFILE past the descriptor share. */
int handover_dirs_add(int wd, int fd);
bool handover_dirs_has(int wd);
/* A descriptor of wd's directory, valid until the next call or drop; -1 if it is gone. */
int handover_dirs_fd(int wd);
void handover_dirs_drop(int wd);
/* Drops the watches (of inotify instance ifd) of directories that were deleted while a
 * descriptor of ours kept them (so their IN_IGNORED never comes); once the table doubled. */
void handover_dirs_sweep(int ifd);
void handover_dirs_clear(void);

#endif
