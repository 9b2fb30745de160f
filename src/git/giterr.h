/* The text shown for a libgit2 error: messages that can quote what a server sent (a content
 * type, an ERR packet, a redirect's location, a reference name, ...) become fixed texts, so a
 * checkout cannot be used to read a service's replies; the others are kept. */
#ifndef SBX_GITERR_H
#define SBX_GITERR_H

const char *giterr_shown(const char *msg);

#endif
