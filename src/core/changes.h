/* What the layers above hear of a change to what outlives the daemon (the root env, the network
 * policy, exposed ports, sessions with their env, cwd and timeout): the layer that changed it
 * calls changes_note, and the sandbox (saved.c) saves it shortly after. */
#ifndef SBX_CHANGES_H
#define SBX_CHANGES_H

/* Any thread, any lock: something that is saved changed. Nothing before changes_set. */
void changes_note(void);
/* Who hears it (NULL: no one); called once at start, before anything changes. */
void changes_set(void (*fn)(void));

#endif
