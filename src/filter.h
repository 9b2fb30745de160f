/* The seccomp filter every sandboxed process runs under, built with libseccomp and handed to
 * bwrap (--seccomp FD) as a BPF program in a memfd. */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

#include <seccomp.h>

/* A memfd holding the BPF program, or -errno. */
int filter_bpf_fd(void);
/* Adds the rules refusing set-id modes (filter_setid.c). 0 or -errno. */
int filter_add_setid_rules(scmp_filter_ctx ctx);

#endif
