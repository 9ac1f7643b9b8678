/*
 * The tracker's line protocol, client side: request lines out, reply lines in.
 * Pure string work; the socket is in net.c. contract/grammar.conf holds the grammar.
 */
#ifndef VGPU_PROTOCOL_H
#define VGPU_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

struct vgpu_remote {
	unsigned vgpu;				/* index in the assembly */
	char host[VGPU_HOST_BYTES + 3];		/* IPv6 keeps its brackets */
	unsigned port;
	char token[VGPU_TOKEN_BYTES + 1];
};

struct vgpu_assembly {
	unsigned vgpus;
	unsigned nlocal;
	unsigned local[VGPU_VGPUS_MAX];		/* node GPU indices, in vGPU order */
	unsigned nremote;
	struct vgpu_remote remote[VGPU_VGPUS_MAX];	/* sorted by vgpu */
	int has_agent_socket;
	char agent_socket[VGPU_SOCKET_PATH_BYTES + 1];
	uint64_t window_base;
};

enum vgpu_reply {
	VGPU_REPLY_BAD = -1,	/* malformed: err says why */
	VGPU_REPLY_OK = 0,
	VGPU_REPLY_WAIT = 1,	/* reason holds the tracker's words */
	VGPU_REPLY_ERROR = 2,
};

/*
 * "assembly <jobid> <node>" (no newline: see vgpu_finish_request) into buf. -1 when the node name is not a valid
 * Slurm node name, the job id is 0, or buf is too small.
 */
int vgpu_format_assembly_request(char *buf, size_t cap, uint32_t jobid, const char *node,
				 char *err, size_t errlen);

/* "done <jobid> <node> <status>" */
int vgpu_format_done_request(char *buf, size_t cap, uint32_t jobid, const char *node,
			     int status, char *err, size_t errlen);

/*
 * Parses one reply line (no newline) to an assembly request. On OK fills *a
 * (validated: counts add up, indices distinct and in range, windows fit);
 * on WAIT/ERROR copies the sanitized reason into reason.
 */
enum vgpu_reply vgpu_parse_assembly_reply(const char *line, size_t len, struct vgpu_assembly *a,
					  char *reason, size_t reasonlen,
					  char *err, size_t errlen);

/* Reply to "done": exactly "ok", or "error <reason>". */
enum vgpu_reply vgpu_parse_done_reply(const char *line, size_t len, char *reason,
				      size_t reasonlen, char *err, size_t errlen);

/*
 * Number of vGPUs per node that a job's tres_per_node asks for ("gres:vgpu:2",
 * "gres/vgpu:2", typed "gres:vgpu:kind:2", several entries summed).
 * Returns 0 and *count (0 when none asked), or -1 when the vgpu entry is malformed.
 */
int vgpu_count_from_tres(const char *tres, unsigned *count, char *err, size_t errlen);

/*
 * Builds a local-only assembly of n vGPUs from a CUDA_VISIBLE_DEVICES value
 * (decimal indices, comma separated) using its first n GPUs.
 * -1 when the list is malformed or has fewer than n GPUs.
 */
int vgpu_local_only_assembly(unsigned n, const char *visible, struct vgpu_assembly *a,
			     char *err, size_t errlen);

#endif
