/* The mount's root: its names come from every part (README, limits, env, sessions/ and procs/
 * from the control tree, contexts/, snapshots/, workspace/), so it is served here, above them
 * all. */
#ifndef SBX_ROOT_H
#define SBX_ROOT_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

void root_lookup(fuse_req_t req, const char *name);
void root_getattr(fuse_req_t req, struct fuse_file_info *fi);
void root_opendir(fuse_req_t req, struct fuse_file_info *fi);
void root_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);

#endif
