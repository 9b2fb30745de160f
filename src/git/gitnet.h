/* sbxfs-git's network policy: every connect() of the process (libgit2's, through a redirect or
 * after any DNS answer) is checked on the address actually connected to. */
#ifndef SBX_GITNET_H
#define SBX_GITNET_H

#include <stdbool.h>

/* allow_private: loopback, private, link-local, ... addresses are allowed too. */
void gitnet_init(bool allow_private);
/* "HOST (ADDR)" of the first connection the policy refused, or NULL. */
const char *gitnet_refused(void);

#endif
