/* The fleet's FUSE tree: its one ops table, over the supervisor in src/fleet. */
#ifndef SBX_FLEETFS_H
#define SBX_FLEETFS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdint.h>

extern const struct fuse_lowlevel_ops fleet_ops;
/* fleet_init's listener: a sandbox's state changed; parked requests about it are answered. */
void fleetfs_changed(uint64_t serial);

#endif
