/* Bounds of a checkout's process (see checkout_limit.h). */
#include "checkout_limit.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_mem.h"

/* libgit2 holds a blob whole to check it out and a filter's output (CRLF) may double it, and
 * resolving a delta holds its base and its result: 3 objects at most, plus what libgit2 needs
 * of its own (sbxfs-git bounds its object cache and its mapped pack windows). */
#define OBJECTS_HELD 3
#define OWN_MEMORY   (256ull << 20)
/* Address space that is reserved but never touched (libraries, malloc's arenas, stacks). */
#define UNTOUCHED (512ull << 20)

/* AddressSanitizer (the CI's debug build) reserves terabytes of address space for its shadow
 * memory: sbxfs-git, built alike, could not start under RLIMIT_AS. The cgroup bounds it
 * there. */
#if defined(__SANITIZE_ADDRESS__)
#define AS_LIMIT false
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AS_LIMIT false
#endif
#endif
#ifndef AS_LIMIT
#define AS_LIMIT true
#endif

static unsigned next_id;

static struct rlimit bound(uint64_t max)
{
	rlim_t v = max ? (rlim_t)max : RLIM_INFINITY;

	return (struct rlimit){v, v};
}

int checkout_limit_prepare(struct checkout_limit *l, struct cgroup *session, uint64_t object_max,
			   uint64_t file_max)
{
	char name[32];

	memset(l, 0, sizeof(*l));
	l->memory = object_max ? OBJECTS_HELD * object_max + OWN_MEMORY : 0;
	l->as = bound(l->memory && AS_LIMIT ? l->memory + UNTOUCHED : 0);
	l->fsize = bound(file_max);
	if (!session)
		return 0;
	l->session = session;
	l->session_ooms = cgroup_mem_oom_kills(session, true);
	snprintf(name, sizeof(name), "git%u", ++next_id);
	l->cg = cgroup_create(session, name);
	if (!l->cg)
		return 0;
	/* Its own limit, so a checkout that needs more is killed among its own processes
	 * whatever the session's limit leaves, and a hostile one cannot take the session's. (v2
	 * enables no controller below a session, whose group holds processes: there the
	 * session's limit is the one.) */
	cgroup_mem_limit(l->cg, l->memory);
	l->nfds = cgroup_join_fds(l->cg, l->fds, 4);
	if (l->nfds < 0) {
		int rc = l->nfds;

		l->nfds = 0;
		checkout_limit_release(l);
		return rc;
	}
	return 0;
}

int checkout_limit_enter(const struct checkout_limit *l)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	for (int i = 0; i < l->nfds; i++)
		if (write(l->fds[i], "0", 1) < 0)
			return -errno;
	/* A write past RLIMIT_FSIZE fails with EFBIG, for sbxfs-git to report, instead of
	 * killing it with SIGXFSZ (an ignored signal stays ignored across exec). */
	if (sigaction(SIGXFSZ, &ign, NULL) < 0 || setrlimit(RLIMIT_AS, &l->as) < 0 ||
	    setrlimit(RLIMIT_FSIZE, &l->fsize) < 0)
		return -errno;
	return 0;
}

void checkout_limit_forked(struct checkout_limit *l)
{
	while (l->nfds > 0)
		close(l->fds[--l->nfds]);
}

bool checkout_limit_oom(const struct checkout_limit *l, int status)
{
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		return false;
	/* v2 counts a kill in the group whose limit was hit, the session's when the checkout's
	 * own has no memory controller. */
	return (l->cg && cgroup_mem_oom_kills(l->cg, true) > 0) ||
	       (l->session && cgroup_mem_oom_kills(l->session, true) > l->session_ooms);
}

void checkout_limit_release(struct checkout_limit *l)
{
	checkout_limit_forked(l);
	cgroup_destroy(l->cg);
	l->cg = NULL;
}
