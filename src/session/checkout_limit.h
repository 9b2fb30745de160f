/* What bounds one checkout's sbxfs-git, which runs outside the sandbox and reads what a
 * repository holds: a cgroup of its own below the session's, so that the session's memory
 * limit and process count apply to it (and what it uses shows as the session's), with a memory
 * limit of its own; and rlimits on its address space and on the size of a file it writes, which
 * hold without cgroups too. The bounds follow [session] git_object_max and git_file_max. */
#ifndef SBX_CHECKOUT_LIMIT_H
#define SBX_CHECKOUT_LIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

struct cgroup;

struct checkout_limit {
	struct cgroup *cg;	/* NULL without cgroups */
	struct cgroup *session; /* the session's group it is below */
	uint64_t session_ooms;	/* the OOM kills in the session's tree before it */
	int fds[4];		/* its cgroup.procs files, from prepare until the fork */
	int nfds;
	uint64_t memory; /* its memory limit in bytes, 0: none */
	struct rlimit as, fsize;
};

/* Core lock held: the group below session (NULL: none), with its limits, and the files a
 * process joins it by. -errno if that group cannot be joined (nothing is left then). */
int checkout_limit_prepare(struct checkout_limit *l, struct cgroup *session, uint64_t object_max,
			   uint64_t file_max);
/* In the forked child, before exec: only async-signal-safe calls. Joins the group and sets the
 * rlimits; -errno. */
int checkout_limit_enter(const struct checkout_limit *l);
/* In the parent, once the child is forked (or could not be): closes the join files. */
void checkout_limit_forked(struct checkout_limit *l);
/* Whether the OOM killer ended the process, which ended with status (from wait). */
bool checkout_limit_oom(const struct checkout_limit *l, int status);
/* Kills what is left in the group and removes it. */
void checkout_limit_release(struct checkout_limit *l);

#endif
