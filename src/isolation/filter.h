/* The seccomp filter every sandboxed process runs under, built with libseccomp and handed to
 * bwrap (--seccomp FD) as a BPF program in a memfd. */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

#include <seccomp.h>
#include <stdbool.h>

/* The sandbox's own processes, by their pids in its pid namespace (bwrap starts the launcher
 * first, and the launcher its stdin holder): commands may not signal, ptrace or pidfd_open them. */
#define FILTER_INIT_PID	    1
#define FILTER_LAUNCHER_PID 2
#define FILTER_HOLDER_PID   3

/* A memfd holding bwrap's BPF program, or -errno. The refusals worth a line in the journal
 * (namespaces, mounts, bpf, keyrings... the calls a program makes only to get out) are left to
 * the launcher's filter, which has the kernel ask the daemon (filter_notify_bpf_fd), unless
 * reported_too: then this one refuses them too, unreported. */
int filter_bpf_fd(bool reported_too);
/* A memfd holding the launcher's program: those calls, refused with EPERM by the daemon once
 * it has noted them (seccomp user notification; the kernel answers ENOSYS if the daemon is
 * gone). The launcher installs it before it starts anything. */
int filter_notify_bpf_fd(void);
/* Adds the rules refusing set-id modes (filter_setid.c). 0 or -errno. */
int filter_add_setid_rules(scmp_filter_ctx ctx);

#endif
