/* The bubblewrap command line that starts the launcher inside the sandbox. It is built only
 * from the configuration and paths the daemon chose: nothing a session or a command says ever
 * reaches it. */
#ifndef SBX_BWRAP_H
#define SBX_BWRAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SANDBOX_WORKSPACE "/workspace"
#define SANDBOX_HOME	  "/home/sbxfs" /* the sandbox user's home (home.h) */
#define SANDBOX_LAUNCHER "/run/sbxfs/launcher"

/* The fd bwrap reads the seccomp program from, as numbered in its argv. */
#define BWRAP_FD_SECCOMP 4
/* The arguments that make its /etc (bwrap_etc_fd), and the /etc/passwd and /etc/group it
 * shows when the spec asks for them. */
#define BWRAP_FD_ETC 5
#define BWRAP_FD_PASSWD 6
#define BWRAP_FD_GROUP 7

struct bwrap_spec {
	const char *bwrap;     /* the bwrap binary */
	const char *workspace; /* host path (reachable by the sandbox's user), at /workspace */
	const char *home;      /* host path of the sandbox user's home, likewise */
	const char *launcher;  /* host path of sbxfs-launcher, likewise */
	bool keep_net;	       /* no new network namespace: the host's, or the daemon's (netns.h) */
	uint64_t tmp_size, shm_size;
	uid_t uid;
	gid_t gid;
	bool etc_ids;          /* /etc/passwd and /etc/group from BWRAP_FD_PASSWD and _GROUP */
	const char *etc_stage; /* the /etc made as one tree (etcview.h), or NULL: entry by entry */
	int filter_fd;	       /* the launcher's seccomp program (filter.h) at this fd, or 0: none */
};

/* A memfd of the NUL-separated arguments that build the sandbox's /etc, for BWRAP_FD_ETC, or
 * -errno. The host's entries are listed when it is made. */
int bwrap_etc_fd(const struct bwrap_spec *sp);
/* NULL-terminated argv; free with bwrap_argv_free. */
char **bwrap_argv(const struct bwrap_spec *sp);
void bwrap_argv_free(char **argv);

#endif
