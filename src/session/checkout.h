/* Git checkouts into the workspace: the request line of a session's checkout file, where the
 * clone lands, and running sbxfs-git (outside the sandbox, as the sandbox's user) for it. */
#ifndef SBX_CHECKOUT_H
#define SBX_CHECKOUT_H

#include <stddef.h>

struct checkout_req {
	char *url;
	char *branch; /* NULL: the remote's default */
	char *dir;    /* NULL: <cwd>/<repo name> */
	long depth;   /* 0: full history */
};

/* "URL [branch=NAME] [dir=PATH] [depth=N]": -EINVAL on anything else. */
int checkout_parse(const char *line, size_t len, struct checkout_req *req);
void checkout_req_free(struct checkout_req *req);
/* The repository's name from its URL ("https://h/a/b.git" -> "b"), or NULL. */
char *checkout_repo_name(const char *url);
/* Lexically resolves dir (absolute, or relative to cwd) and checks it lies inside the
 * workspace root ws (all paths as commands see them). Returns the path relative to ws ("" is
 * ws itself), or NULL. */
char *checkout_resolve(const char *ws, const char *cwd, const char *dir);
/* A plain relative path as the source (no scheme, no colon: a local repository, as git takes
 * it) is relative to the session's cwd, as dir= is; that path joined to cwd, or NULL when url
 * is anything else. Caller frees. */
char *checkout_source_in(const char *cwd, const char *url);

#endif
