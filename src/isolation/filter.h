/* The seccomp filter every sandboxed process runs under, built with libseccomp and handed to
 * bwrap (--seccomp FD) as a BPF program in a memfd. */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

#include <seccomp.h>

/* The sandbox's own processes, by their pids in its pid namespace (bwrap starts the launcher
 * first, and the launcher its stdin holder): commands may not signal, ptrace or pidfd_open them. */
#define FILTER_INIT_PID	    1
#define FILTER_LAUNCHER_PID 2
#define FILTER_HOLDER_PID   3

/* A memfd holding the BPF program, or -errno. */
int filter_bpf_fd(void);
/* Adds the rules refusing set-id modes (filter_setid.c). 0 or -errno. */
int filter_add_setid_rules(scmp_filter_ctx ctx);

#endif
