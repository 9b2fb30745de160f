/* Host paths in sbxfs-git's error messages: libgit2's texts name the paths it was given and
 * their real paths, the daemon's staging path of the workspace among them, and whatever a
 * repository's .git file, symlinks or alternates led it to. The sandbox sees the workspace and
 * the target as commands see them, and no other path: those become a fixed text. */
#ifndef SBX_GITPATH_H
#define SBX_GITPATH_H

/* host: the workspace where sbxfs-git reaches it, inside: as commands see it; target_fd: the
 * clone's target, target_shown: as commands see it. Before Landlock (it resolves them). */
void gitpath_init(const char *host, const char *inside, int target_fd, const char *target_shown);
/* msg with those paths as commands see them and any other absolute path replaced by a fixed
 * text. Caller frees. */
char *gitpath_shown(const char *msg);

#endif
