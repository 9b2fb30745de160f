/* Workspace changes in the journal: "fs.create", "fs.write" (a file closed after a write),
 * "fs.remove" and "fs.rename" events with the path below the workspace, whoever made them (the
 * sandbox's commands and the host's writes through workspace/ are one directory: inotify does
 * not say who), at most 20,000 a second, the rest counted ("fs.more"). */
#ifndef SBX_WSWATCH_H
#define SBX_WSWATCH_H

/* Watches the workspace at that host path, on a thread of its own: 0 or -errno. */
int wswatch_start(const char *workspace);
void wswatch_stop(void);

#endif
