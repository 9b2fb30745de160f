/* The control plane's reserve of descriptors. The workspace costs the daemon one descriptor per
 * inode the kernel keeps, so the process can reach RLIMIT_NOFILE through no fault of a session.
 * A few descriptors (dups of /dev/null) are held from the start; an open that running a command
 * or starting a shell needs, and that fails with EMFILE or ENFILE, gives them back one at a time
 * and tries again. The reserve is taken up again, as far as descriptors are free, before each
 * such open. Thread-safe. */
#ifndef SBX_FDRES_H
#define SBX_FDRES_H

#include <sys/types.h>

/* Descriptors held back for the control plane: a shell start takes up to 13 (five pipes,
 * /dev/null, four cgroup files), a command 2 spools and a stdin pipe. */
#define FDRES_COUNT 64

void fdres_init(void);
void fdres_shutdown(void);
/* Reserve descriptors held now. */
unsigned fdres_held(void);
/* As open(2) and pipe2(2) (O_CLOEXEC added), drawing on the reserve; fd or -errno. */
int fdres_open(const char *path, int flags, mode_t mode);
int fdres_pipe(int p[2]);
int fdres_socketpair(int domain, int type, int sv[2]);

#endif
