/* The sandbox user's home, out of the workspace. */
#ifndef SBX_HOME_H
#define SBX_HOME_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "bwrap.h" /* SANDBOX_HOME: where it is inside the sandbox */

/* Makes STATE_DIR/home (kept across restarts), bounded by its image when config_home_max says
 * so, and given to uid and gid when they are not -1. Its host path in *path (the caller's), or
 * -errno with a reason in err. */
int home_prepare(const struct config *cfg, uid_t uid, gid_t gid, char **path, char *err,
		 size_t errlen);

#endif
