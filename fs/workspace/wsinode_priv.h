/* What the inode table (wsinode.c) and the descriptor budget (wsbudget.c) share, not for the
 * other workspace files: how inodes and their fds meet the budget. All under the table lock. */
#ifndef SBX_WSINODE_PRIV_H
#define SBX_WSINODE_PRIV_H

#include "ws_priv.h"

/* ---- wsbudget.c ---- */

/* Sets the count to the root's fd, plus the mount fd of reopening by handle when the daemon
 * may (root's fd is rootfd). */
void wsb_start(int rootfd);
void wsb_stop(void);
/* Counts one more descriptor about to be opened, closing idle ones to stay in the budget. */
void wsb_reserve(void);
/* One descriptor fewer: closed, or never opened after wsb_reserve. */
void wsb_closed(void);
/* An fd that no operation uses any more goes to the end of the line. */
void wsb_idle(struct ws_inode *in);
/* in was given a parent to be reopened from: its idle fd may now be closed. */
void wsb_named(struct ws_inode *in);
/* in is being freed: its fd leaves the line and is closed. */
void wsb_close_inode(struct ws_inode *in);

/* ---- wsinode.c ---- */

/* Frees in if nothing holds it any more. */
void wsn_maybe_free(struct ws_inode *in);

#endif
