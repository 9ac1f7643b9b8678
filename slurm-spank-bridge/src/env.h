/* The VGPU_* values a job gets, rendered from an assembly. contract/grammar.conf lists them. */
#ifndef VGPU_ENV_H
#define VGPU_ENV_H

#include <stddef.h>

#include "protocol.h"

/* index, '@' or '=', host, ':', port, '#', token, ',' */
#define VGPU_REMOTE_ENTRY_MAX (3 + 1 + VGPU_HOST_BYTES + 2 + 1 + 5 + 1 + VGPU_TOKEN_BYTES + 1)
#define VGPU_LOCAL_LIST_MAX (VGPU_VGPUS_MAX * 5)

struct vgpu_env {
	char count[8];					/* VGPU_COUNT */
	char local[VGPU_LOCAL_LIST_MAX];		/* VGPU_LOCAL_GPUS */
	char remote[VGPU_VGPUS_MAX * VGPU_REMOTE_ENTRY_MAX];	/* VGPU_REMOTE: with tokens */
	char assembly[VGPU_VGPUS_MAX * VGPU_REMOTE_ENTRY_MAX]; /* VGPU_ASSEMBLY: without tokens */
	char agent_socket[VGPU_SOCKET_PATH_BYTES + 1];	/* VGPU_AGENT_SOCKET */
	char window_base[24];				/* VGPU_WINDOW_BASE */
};

/*
 * Renders a; when the tracker named no agent socket, uses
 * <agent_socket_dir>/job-<jobid>/vgpu-<node>.sock (sockdir.h: the job's own directory). A
 * tracker-named socket must lie in that directory too.
 */
int vgpu_env_render(const struct vgpu_assembly *a, const char *agent_socket_dir,
		    unsigned jobid, const char *node, struct vgpu_env *e,
		    char *err, size_t errlen);

#endif
