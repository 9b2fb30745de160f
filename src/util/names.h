/* The alphabet of the names a user gives the mount's objects (sessions, processes, snapshots,
 * a fleet's sandboxes): each one is a single safe path component, whatever else its own rule
 * adds (a length bound, reserved names). */
#ifndef SBX_NAMES_H
#define SBX_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether every one of the len bytes of s is one of A-Z a-z 0-9 . _ - (true for len 0). */
bool name_chars_valid(const char *s, size_t len);

#endif
