/* The FUSE operation table: routes each request to the control tree or the workspace. */
#ifndef SBX_OPS_H
#define SBX_OPS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops sbx_ops;

#endif
