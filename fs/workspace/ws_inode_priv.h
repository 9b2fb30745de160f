/* What the inode table (ws_inode.c) and the descriptor budget (ws_budget.c) share, not for the
 * other workspace files: how inodes and their fds meet the budget. All under the table lock. */
#ifndef SBX_WS_INODE_PRIV_H
#define SBX_WS_INODE_PRIV_H

#include "ws_priv.h"

/* ---- ws_budget.c ---- */

/* Sets the count to the root's fd, plus the mount fd of reopening by handle when the daemon
 * may (root's fd is rootfd). */
void ws_budget_start(int rootfd);
void ws_budget_stop(void);
/* Counts one more descriptor about to be opened, closing idle ones to stay in the budget. */
void ws_budget_reserve(void);
/* One descriptor fewer: closed, or never opened after ws_budget_reserve. */
void ws_budget_closed(void);
/* An fd that no operation uses any more goes to the end of the line. */
void ws_budget_idle(struct ws_inode *in);
/* in was given a parent to be reopened from: its idle fd may now be closed. */
void ws_budget_named(struct ws_inode *in);
/* in is being freed: its fd leaves the line and is closed. */
void ws_budget_close_inode(struct ws_inode *in);

/* ---- ws_inode.c ---- */

/* Frees in if nothing holds it any more. */
void ws_inode_maybe_free(struct ws_inode *in);

#endif
