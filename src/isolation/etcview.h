/* The sandbox's /etc, made in the launcher's own mount namespace as root: a small tmpfs with
 * each entry the host's /etc had at the start bound onto it (links recreated), and empty files
 * where the sandbox's own passwd and group go (bwrap puts them there). bwrap then binds it as
 * one tree: binding each entry itself costs it a read of the whole mount table per entry,
 * which was most of a sandbox's start. */
#ifndef SBX_ETCVIEW_H
#define SBX_ETCVIEW_H

#include <stdbool.h>

struct etcview;

/* Lists the host's /etc now, for a tmpfs at stage (an empty directory); own_ids leaves out
 * the host's passwd and group. NULL if /etc cannot be read. */
struct etcview *etcview_prepare(const char *stage, bool own_ids);
/* In the launcher's child, as root, in a mount namespace of its own: makes the tree.
 * Async-signal-safe. 0 or -errno. */
int etcview_make(const struct etcview *ev);
void etcview_free(struct etcview *ev);

#endif
