/* What exec.c (the queue) and exec_kill.c (ending a command early) share; nothing else includes
 * it. Core lock held for all. */
#ifndef SBX_EXEC_PRIV_H
#define SBX_EXEC_PRIV_H

#include <stdint.h>

#include "session_priv.h"

/* Arms the session's one timer for phase (TP_NONE cancels it). */
void exec_set_timer(struct session *s, enum timer_phase phase, uint64_t ms);
/* The command ended: a kill's grace still running goes on for its leftovers, and the next command
 * waits for them. */
void exec_keep_grace_for_leftovers(struct session *s);
/* Aborts the running command with sig, bash's notices of the kill muted. */
void exec_kill_now(struct session *s, int sig);

#endif
