/* plugstack.conf arguments of the plugin. */
#ifndef VGPU_CONFIG_H
#define VGPU_CONFIG_H

#include <stddef.h>

#include "common.h"

enum vgpu_tracker_kind {
	VGPU_TRACKER_TCP,
	VGPU_TRACKER_UNIX,
};

enum vgpu_fallback {
	VGPU_FALLBACK_NONE,
	VGPU_FALLBACK_LOCAL_ONLY,
};

enum vgpu_auth {
	VGPU_AUTH_NONE,
	VGPU_AUTH_MUNGE,
};

struct vgpu_config {
	enum vgpu_tracker_kind tracker_kind;
	char tracker_host[VGPU_HOST_BYTES + 1];	/* TCP: name or address, no brackets */
	char tracker_port[6];			/* TCP: 1..65535 in decimal */
	char tracker_path[VGPU_SOCKET_PATH_BYTES + 1]; /* UNIX */
	unsigned timeout_s;			/* per tracker request */
	unsigned ready_timeout_s;		/* how long "wait" replies are retried */
	enum vgpu_fallback fallback;
	char agent_socket_dir[VGPU_SOCKET_PATH_BYTES + 1];
	enum vgpu_auth auth;
	char munge_socket[VGPU_SOCKET_PATH_BYTES + 1];	/* empty: libmunge's default */
	/* grant holders must run in this partition; empty: grants are refused */
	char lend_partition[VGPU_NODE_NAME_BYTES + 1];
	/* gres.conf, for a GPU index's device file; empty: slurm.conf's directory, see grant's prolog */
	char gres_conf[VGPU_SOCKET_PATH_BYTES + 1];
};

#define VGPU_DEFAULT_TIMEOUT_S 5
#define VGPU_MAX_TIMEOUT_S 300
#define VGPU_DEFAULT_READY_TIMEOUT_S 10
#define VGPU_DEFAULT_AGENT_SOCKET_DIR "/run/vgpu"

/*
 * Parses the plugstack.conf arguments (argv[0..ac)) into cfg. Every argument
 * is key=value, each key at most once, tracker= required.
 * Returns 0, or -1 with a message naming the offending argument in err.
 */
int vgpu_config_parse(int ac, char **av, struct vgpu_config *cfg, char *err, size_t errlen);

/* "tcp 127.0.0.1:7100" or "unix /run/vgpu/tracker.sock", for log lines. */
void vgpu_config_describe_tracker(const struct vgpu_config *cfg, char *buf, size_t cap);

#endif
