/* The daemon's settings: defaults, the ini file, and validation. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "log.h"
#include "netpolicy.h"

/* The kernel's limit on one execve string with its NUL (MAX_ARG_STRLEN, 32 pages of 4 KiB):
 * past it, every exec of the env fails with E2BIG. */
#define ENV_STRING_LIMIT (128u << 10)

/* The most [network] expose_max_ports and expose_max_connections take: a relayed connection
 * costs the daemon six descriptors (two sockets, two pipes). */
#define EXPOSE_PORTS_LIMIT	 1024
#define EXPOSE_CONNECTIONS_LIMIT 4096

/* tmp_size or shm_size not set: derived from memory_max (config_tmp_size, config_shm_size). */
#define CONFIG_SIZE_AUTO UINT64_MAX

/* [sandbox] idmap: ownership between the mount owner (the daemon's user) and the sandbox's. */
enum idmap {
	IDMAP_NONE,	/* plain ids: a file belongs to whoever made it */
	IDMAP_HANDOVER, /* plain ids, and the owner's files are handed to the sandbox's user
			 * before each command starts (handover.h) */
	IDMAP_USER,	/* the two users' ids swapped through workspace/ (unsafe for host tools) */
};

struct config {
	char *workspace;      /* backing directory of workspace/ */
	char *state_dir;      /* spool files and the lock */
	char *launcher;       /* path of sbxfs-launcher; "" = next to the sbxfs binary */
	enum log_level log_level;

	char *cgroup;         /* auto, v1, v2 or none */
	uint64_t log_max;     /* bytes of the log file before it rotates; 0 = no bound */
	uint64_t journal_max; /* bytes of the journal's files together (journal.h) */

	char *shell;          /* bash: the session driver is a bash script */
	uint64_t timeout_ms;  /* a session's default command timeout; 0 = none */
	uint64_t kill_grace_ms; /* from a kill's signal to SIGKILL */
	unsigned history;     /* runs kept per session */
	uint64_t output_cap;  /* bytes kept per output stream of a command */
	uint64_t git_timeout_ms; /* a checkout's time limit */
	bool git_allow_private;  /* checkouts may connect to loopback, private, ... addresses */
	char **git_local_roots;  /* NULL-terminated: host directories checkouts may read */
	uint64_t git_object_max; /* bytes of the largest object a checkout takes; 0 = no bound */
	uint64_t git_file_max;	 /* bytes of the largest file a checkout writes; 0 = no bound */
	uint64_t spool_max;   /* bytes of all runs' spool files together; 0 = no bound */
	char **base_env;      /* NAME=VALUE, NULL-terminated: a new session's environment */
	size_t n_base_env;
	uint64_t env_value_max; /* bytes of one NAME=VALUE with its NUL, as execve counts */
	uint64_t env_max;     /* bytes of a whole env, counted the same way */
	uint64_t term_ring;   /* bytes of a terminal's output kept for replay */
	uint64_t term_wait_ms; /* how long a read of a terminal's wait may wait for a match */
	uint64_t terms_max;    /* terminals in the mount at once */
	uint64_t term_cells_max; /* rows x cols of all the mount's terminals together */

	/* [sandbox] */
	bool isolate;         /* isolation = bwrap (true) or none */
	char *user;           /* a named user sandboxed commands run as; "": from uid_range */
	enum net_mode net_mode; /* network: none, filtered (the proxy) or host */
	enum idmap idmap;     /* how the mount owner's and the sandbox user's ids meet */
	uint64_t memory_max;  /* bytes, 0 = no limit */
	uint64_t pids_max;    /* 0 = no limit */
	double cpu_max;       /* CPUs, 0 = no limit */
	uint64_t tmp_size;    /* bytes of the sandbox's /tmp, or CONFIG_SIZE_AUTO */
	uint64_t shm_size;    /* bytes of its /dev/shm, or CONFIG_SIZE_AUTO */
	uint32_t uid_first, uid_last; /* uid_range: each instance's own uid when user is "" */
	uint64_t workspace_max; /* bytes of the workspace (a loop-mounted image); 0 = no bound */
	bool workspace_xfs;	/* workspace_fs = xfs: the image is XFS (reflinks), not ext4 */
	uint64_t home_max;	 /* bytes of the sandbox user's home, 0 = no bound, or AUTO */
	uint64_t memory_reserve; /* memory_max less a session's own limit; 0: sessions have none */
	uint64_t session_pids_max; /* each session's processes; 0 = only pids_max */
	unsigned session_pids_pct; /* if not 0: session_pids_max is this % of pids_max */
	uint64_t sleep_after;	   /* seconds idle before the daemon stops itself; 0 = never */

	bool ws_cache;        /* workspace changed only through sbxfs and the sandbox */
	double ws_timeout;    /* entry/attr timeout in seconds when ws_cache is on */
	bool ws_passthrough;  /* kernel passthrough of file data (daemon as root) */
	bool ws_kernel;       /* mount = kernel: the backing directory mounted on workspace/ */
	bool ws_symfollow;    /* host_symlinks = follow: the host's view follows symlinks */
	uint64_t ws_max_fds;  /* descriptors the FUSE workspace may keep open; 0: half the limit */

	/* [network]: exposed ports (ports/) */
	char *expose_address;		 /* the host address exposed ports listen on */
	bool expose_public;		 /* an expose_address other than loopback is allowed */
	unsigned expose_max_ports;	 /* ports exposed at once */
	unsigned expose_max_connections; /* connections relayed at once, all ports together */
	/* [network]: the policy's rules at start (policy lines' arguments, comma-separated) */
	char *net_allow;
	char *net_deny;
	bool net_allow_private; /* the proxy may connect to non-public addresses */
	uint64_t net_conns_max; /* connections at once through a session's proxy */
	/* [snapshots] */
	char *snap_dir;		    /* where snapshots are kept; "": STATE_DIR/snapshots (or an XFS
				     * workspace image's own) */
	unsigned snap_max;	    /* snapshots kept at once */
	uint64_t snap_space_max;    /* bytes the snapshots' copies may take; 0 = no bound */
	bool snap_zstd;		    /* compress = zstd: archives are read zstd-compressed */
	uint64_t snap_import_files; /* entries an imported archive may hold */
	uint64_t snap_files_max;    /* entries the snapshots may hold together; 0 = no bound */
};

void config_defaults(struct config *cfg);
/* Reads an ini file over the current values; on error returns -errno and writes a reason. */
int config_load(struct config *cfg, const char *path, char *err, size_t errlen);
/* Checks what keys cannot check alone (tmpfs sizes below the memory limit). */
int config_check(const struct config *cfg, char *err, size_t errlen);
/* The memory limit of each session's own group: memory_max less memory_reserve (at most a
 * quarter of memory_max); 0 for none. */
uint64_t config_session_memory(const struct config *cfg);
/* The sizes of the sandbox's /tmp and /dev/shm: as set, or derived from memory_max so that
 * whatever memory_max is, both fit below it and below a session's limit: a quarter of it for
 * /tmp and a sixteenth for /dev/shm, at most 1G and 256M (which 4G, the default, gives);
 * 1G and 256M without a memory limit. */
uint64_t config_tmp_size(const struct config *cfg);
/* HOME of a new session, unless [session] home set one. */
void config_default_home(struct config *cfg, const char *home);
/* The home's bound: home_max, or with "auto" a quarter of workspace_max (64M at least), none
 * when the workspace has none. */
uint64_t config_home_max(const struct config *cfg);
uint64_t config_shm_size(const struct config *cfg);
/* Parses "123", "64K", "512M", "4G" (powers of 1024) or "max" (0). */
int config_parse_size(const char *value, uint64_t *out);
/* Sets one key as the ini file would ("section", "key", "value"). */
int config_set(struct config *cfg, const char *section, const char *key, const char *value,
	       char *err, size_t errlen);
/* An expose_address: its socket address with port 0 (ss may be NULL: only checked), and
 * whether it is a loopback address (127/8, ::1); 0 or -EINVAL (not a numeric IPv4 or IPv6
 * address). */
int config_expose_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len,
		       bool *loopback);
/* The policy the config starts with: "mode M", then an allow line per [network] allow entry
 * and a deny line per deny entry; caller frees. */
char *config_net_policy(const struct config *cfg);
/* Each session's process limit in effect (0: none of its own). */
uint64_t config_session_pids(const struct config *cfg);
void config_free(struct config *cfg);

#endif
