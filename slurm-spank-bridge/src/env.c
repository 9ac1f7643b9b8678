#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "env.h"
#include "sockdir.h"
#include "validate.h"

static int append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= cap)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, cap - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *used)
		return -1;
	*used += (size_t)n;
	return 0;
}

int vgpu_env_render(const struct vgpu_assembly *a, const char *agent_socket_dir,
		    unsigned jobid, const char *node, struct vgpu_env *e,
		    char *err, size_t errlen)
{
	char jobdir[VGPU_SOCKET_PATH_BYTES + 32];
	size_t ul = 0, ur = 0, ua = 0;
	unsigned k, li = 0, ri = 0;
	int n;

	memset(e, 0, sizeof(*e));
	if (a->vgpus == 0 || a->vgpus > VGPU_VGPUS_MAX || a->nlocal + a->nremote != a->vgpus)
		return vgpu_fail(err, errlen, "inconsistent assembly");
	snprintf(e->count, sizeof(e->count), "%u", a->vgpus);
	snprintf(e->window_base, sizeof(e->window_base), "0x%llx",
		 (unsigned long long)a->window_base);

	for (k = 0; k < a->nlocal; k++)
		if (append(e->local, sizeof(e->local), &ul, "%s%u", k ? "," : "", a->local[k]) != 0)
			goto overflow;
	for (k = 0; k < a->nremote; k++)
		if (append(e->remote, sizeof(e->remote), &ur, "%s%u@%s:%u#%s", k ? "," : "",
			   a->remote[k].vgpu, a->remote[k].host, a->remote[k].port,
			   a->remote[k].token) != 0)
			goto overflow;
	/* vGPUs without a remote entry take the local GPUs in order */
	for (k = 0; k < a->vgpus; k++) {
		const char *sep = k ? "," : "";

		if (ri < a->nremote && a->remote[ri].vgpu == k) {
			if (append(e->assembly, sizeof(e->assembly), &ua, "%s%u=" VGPU_PLACEMENT_REMOTE "%s:%u", sep, k,
				   a->remote[ri].host, a->remote[ri].port) != 0)
				goto overflow;
			ri++;
		} else {
			if (li >= a->nlocal)
				return vgpu_fail(err, errlen, "inconsistent assembly");
			if (append(e->assembly, sizeof(e->assembly), &ua, "%s%u=" VGPU_PLACEMENT_LOCAL "%u", sep, k,
				   a->local[li]) != 0)
				goto overflow;
			li++;
		}
	}

	if (vgpu_job_socket_dir(agent_socket_dir, jobid, jobdir, sizeof(jobdir)) != 0)
		return vgpu_fail(err, errlen, "agent socket directory %s/" VGPU_JOB_SOCKET_DIR_PREFIX "%u is too long",
				 agent_socket_dir, jobid);
	if (a->has_agent_socket) {
		const size_t dl = strlen(jobdir);

		/*
		 * The tracker picks the name, the admin the directory; the agent (the job's user) can
		 * bind a socket only in the job's own directory.
		 */
		if (strncmp(a->agent_socket, jobdir, dl) != 0 || a->agent_socket[dl] != '/')
			return vgpu_fail(err, errlen, VGPU_KEY_AGENT_SOCKET " %s is not inside the job's directory %s of "
					 VGPU_PLUGSTACK_AGENT_SOCKET_DIR, a->agent_socket, jobdir);
		snprintf(e->agent_socket, sizeof(e->agent_socket), "%s", a->agent_socket);
	} else {
		n = snprintf(e->agent_socket, sizeof(e->agent_socket), "%s/vgpu-%s.sock", jobdir, node);
		if (n < 0 || (size_t)n >= sizeof(e->agent_socket)
		    || vgpu_valid_socket_path(e->agent_socket, (size_t)n) != 0)
			return vgpu_fail(err, errlen,
					 "agent socket path %s/vgpu-%s.sock is longer than %d bytes",
					 jobdir, node, VGPU_SOCKET_PATH_BYTES);
	}
	return 0;
overflow:
	return vgpu_fail(err, errlen, "assembly does not fit in the environment buffers");
}
