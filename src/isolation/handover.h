/* Handing the mount owner's files to the sandbox (idmap = handover): through workspace/ ids are
 * plain, so that what the sandbox writes shows as its own uid's and host tools that check
 * ownership (git's safe.directory) do not trust it. Files the owner (root) puts into the
 * workspace would then be closed to the sandbox's commands, so before each command starts, every
 * file of the owner's in the workspace becomes the sandbox user's. Host writes that came before
 * a command's start are always handed over before it runs. */
#ifndef SBX_HANDOVER_H
#define SBX_HANDOVER_H

#include <sys/types.h>

/* Starts watching the workspace (its root must be the sandbox user's already): a thread walks
 * it once and from then on notes what is created in it, and hands over the owner's files it
 * finds there at the next handover_run. Returns 0 or -errno. */
int handover_start(const char *workspace, uid_t owner_uid, gid_t owner_gid, uid_t to_uid,
		   gid_t to_gid);
/* Before a command (or process, cell, checkout) starts: hands over every file of the owner's
 * noted so far. Cheap when the host created nothing. No-op if not started. */
void handover_run(void);
/* Stops the thread, closes what it held. */
void handover_stop(void);

#endif
