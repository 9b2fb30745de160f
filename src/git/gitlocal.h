/* sbxfs-git's policy on local sources: a plain path or a file:// URL may only name a
 * repository in the workspace or below one of [session] git_local_roots. */
#ifndef SBX_GITLOCAL_H
#define SBX_GITLOCAL_H

/* The host path a URL names, as libgit2 reads it: a plain path (no scheme, no colon) as is, the
 * path of file:///P or file://localhost/P percent-decoded; NULL for any other URL. Caller
 * frees. */
char *gitlocal_path(const char *url);
/* The URL to clone: url itself, or, when it is a local source in the workspace as commands
 * see it (inside: /workspace in the sandbox), the same source by the workspace's host path
 * (host), in the same form (a path or a file:// URL). Caller frees. */
char *gitlocal_rebase(const char *url, const char *inside, const char *host);
/* 0 if path (relative: to the cwd) is, once every symlink is resolved, one of roots (a
 * NULL-terminated list) or below one, roots compared as directories (any path to the same
 * one, such as a bind mount, counts); -EACCES if not. A path that does not exist is judged by
 * its deepest existing ancestor. */
int gitlocal_check(const char *path, char *const *roots);

#endif
