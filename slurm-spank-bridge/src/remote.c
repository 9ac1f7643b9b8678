#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "auth.h"
#include "env.h"
#include "grant.h"
#include "job.h"
#include "net.h"
#include "protocol.h"
#include "remote.h"
#include "sockdir.h"

#define LOG_PREFIX VGPU_PLUGIN_NAME ": "

/* What exit() needs from user_init(); slurmstepd runs both in one process. */
static struct {
	int failed;		/* no assembly: every task of the step is stopped */
	int looked_up;		/* init_post_opt read the job from slurmctld into job */
	struct vgpu_job job;
	int vgpu_job;		/* set once the step is known to belong to a vgpu job */
	int batch;		/* the batch step: its end is the job's end */
	uint32_t jobid;
	char node[VGPU_NODE_NAME_BYTES + 1];
	int have_status;
	int status;		/* exit code, 128 + signal, or -1 */
} state;

static const char *step_name(uint32_t stepid, char *buf, size_t cap)
{
	if (stepid == SLURM_BATCH_SCRIPT)
		return "batch";
	if (stepid == SLURM_EXTERN_CONT)
		return "extern";
	if (stepid == SLURM_INTERACTIVE_STEP)
		return "interactive";
	snprintf(buf, cap, "%u", stepid);
	return buf;
}

/*
 * Asks the tracker until it answers ok or error, or until "wait" replies
 * have gone on for ready_timeout seconds. 0 with *a filled, or -1 with err.
 */
static int fetch_assembly(const struct vgpu_config *cfg, const char *base,
			  struct vgpu_assembly *a, char *err, size_t errlen)
{
	struct vgpu_deadline ready;
	char request[VGPU_REQUEST_MAX];
	char reply[VGPU_LINE_MAX];
	char reason[VGPU_REASON_LOGGED_BYTES + 1];
	char why[VGPU_ERR_MAX];

	vgpu_deadline_in(&ready, cfg->ready_timeout_s);
	for (;;) {
		int n;

		if (vgpu_finish_request(cfg, base, request, sizeof(request), err, errlen) < 0)
			return -1;
		n = vgpu_tracker_call(cfg, request, reply, sizeof(reply), err, errlen);
		if (n < 0)
			return -1;
		switch (vgpu_parse_assembly_reply(reply, (size_t)n, a, reason, sizeof(reason),
						  why, sizeof(why))) {
		case VGPU_REPLY_OK:
			return 0;
		case VGPU_REPLY_ERROR:
			return vgpu_fail(err, errlen, "tracker refused the assembly: %s", reason);
		case VGPU_REPLY_WAIT:
			if (vgpu_deadline_left_ms(&ready) < 1000)
				return vgpu_fail(err, errlen,
						 "tracker still not ready after %us (" VGPU_PLUGSTACK_READY_TIMEOUT "): %s",
						 cfg->ready_timeout_s, reason);
			slurm_debug(LOG_PREFIX "tracker not ready (%s), asking again in 1s", reason);
			sleep(1);
			break;
		default:
			return vgpu_fail(err, errlen, "malformed reply from the tracker: %s", why);
		}
	}
}

static int set(spank_t sp, const char *name, const char *value)
{
	const spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS) {
		slurm_error(LOG_PREFIX "cannot set %s in the job's environment: %s", name,
			    spank_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * A vgpu job's CUDA enumerates every GPU of the node: CUDA reads CUDA_VISIBLE_DEVICES once, so a
 * GPU granted to the job later could never appear otherwise. Which GPUs the app may drive is the
 * runtime's business (VGPU_LOCAL_GPUS, then the tracker's grants) and, with ConstrainDevices=yes,
 * the devices cgroup's (README: "CUDA_VISIBLE_DEVICES of a vgpu job").
 */
static int unset_visible_devices(spank_t sp)
{
	const spank_err_t rc = spank_unsetenv(sp, VGPU_ENV_CUDA_VISIBLE_DEVICES);

	if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_NOEXIST) {
		slurm_error(LOG_PREFIX "cannot unset %s in the job's environment: %s",
			    VGPU_ENV_CUDA_VISIBLE_DEVICES, spank_strerror(rc));
		return -1;
	}
	return 0;
}

static int export_env(spank_t sp, const struct vgpu_env *e, const char *node,
		      const char *source, const char *migrate, const char *tracker)
{
	if (set(sp, VGPU_ENV_COUNT, e->count) != 0 || set(sp, VGPU_ENV_ASSEMBLY, e->assembly) != 0
	    || set(sp, VGPU_ENV_LOCAL_GPUS, e->local) != 0 || set(sp, VGPU_ENV_REMOTE, e->remote) != 0
	    || set(sp, VGPU_ENV_AGENT_SOCKET, e->agent_socket) != 0
	    || set(sp, VGPU_ENV_WINDOW_BASE, e->window_base) != 0
	    || set(sp, VGPU_ENV_NODE, node) != 0 || set(sp, VGPU_ENV_SOURCE, source) != 0
	    || set(sp, VGPU_ENV_MIGRATE, migrate) != 0 || set(sp, VGPU_ENV_TRACKER, tracker) != 0
	    /* CUDA numbers the node's GPUs by PCI bus id, as the runtime maps Slurm's indices */
	    || set(sp, VGPU_ENV_CUDA_DEVICE_ORDER, VGPU_CUDA_DEVICE_ORDER) != 0)
		return -1;
	return unset_visible_devices(sp);
}

static void log_assembly(uint32_t jobid, const char *node, const struct vgpu_assembly *a,
			 const struct vgpu_env *e, const char *source)
{
	char tok[48];
	unsigned k;

	slurm_info(LOG_PREFIX "job %u on %s: %s assembly %s, agent socket %s", jobid, node,
		   source, e->assembly, e->agent_socket);
	for (k = 0; k < a->nremote; k++) {
		vgpu_redact_token(tok, sizeof(tok), a->remote[k].token);
		slurm_verbose(LOG_PREFIX "job %u vGPU %u: worker %s:%u token %s", jobid,
			      a->remote[k].vgpu, a->remote[k].host, a->remote[k].port, tok);
	}
}

/*
 * The tracker could not give an assembly: with fallback=local-only, the
 * job's own GPUs may stand in when there are enough of them.
 */
static int local_only(spank_t sp, const struct vgpu_config *cfg, unsigned vgpus,
		      struct vgpu_assembly *a, const char *failure)
{
	char visible[VGPU_LOCAL_LIST_MAX];
	char why[VGPU_ERR_MAX];
	spank_err_t rc;

	if (cfg->fallback != VGPU_FALLBACK_LOCAL_ONLY) {
		slurm_error(LOG_PREFIX "job %u on %s needs %u vGPU(s) and has no assembly, failing it "
			    "(" VGPU_PLUGSTACK_FALLBACK "=" VGPU_FALLBACK_NONE_WORD "): %s", state.jobid, state.node, vgpus, failure);
		return -1;
	}
	rc = spank_getenv(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof(visible));
	if (rc == ESPANK_ENV_NOEXIST)
		visible[0] = '\0';
	else if (rc != ESPANK_SUCCESS) {
		slurm_error(LOG_PREFIX "job %u on %s: no assembly (%s), and CUDA_VISIBLE_DEVICES "
			    "unreadable for " VGPU_PLUGSTACK_FALLBACK "=" VGPU_FALLBACK_LOCAL_ONLY_WORD ": %s", state.jobid, state.node,
			    failure, spank_strerror(rc));
		return -1;
	}
	if (vgpu_local_only_assembly(vgpus, visible, a, why, sizeof(why)) != 0) {
		slurm_error(LOG_PREFIX "job %u on %s: no assembly (%s), and " VGPU_PLUGSTACK_FALLBACK "=" VGPU_FALLBACK_LOCAL_ONLY_WORD " "
			    "impossible: %s", state.jobid, state.node, failure, why);
		return -1;
	}
	slurm_info(LOG_PREFIX "warning: job %u on %s runs local-only on its own %u GPU(s) "
		   "(" VGPU_PLUGSTACK_FALLBACK "=" VGPU_FALLBACK_LOCAL_ONLY_WORD ") because: %s", state.jobid, state.node, vgpus, failure);
	return 0;
}

/*
 * As root, before privileges are dropped: reads the job from slurmctld and, for a vgpu job, makes
 * its agent socket directory (sockdir.h), which the job's user could not.
 */
static int do_init_post_opt(spank_t sp, const struct vgpu_config *cfg)
{
	char err[VGPU_ERR_MAX];
	uint32_t jobid = 0, stepid = 0, uid = 0, gid = 0;
	spank_err_t src;

	src = spank_get_item(sp, S_JOB_ID, &jobid);
	if (src == ESPANK_SUCCESS)
		src = spank_get_item(sp, S_JOB_STEPID, &stepid);
	if (src != ESPANK_SUCCESS) {
		slurm_error(LOG_PREFIX "cannot get the job and step id: %s", spank_strerror(src));
		return -1;
	}
	state.jobid = jobid;
	if (stepid == SLURM_EXTERN_CONT)
		return 0;	/* runs no user task */
	if (vgpu_job_lookup(sp, jobid, stepid, &state.job, err, sizeof(err)) != 0) {
		char sbuf[16];

		/* Without the job record a vgpu job cannot be told from another. */
		slurm_error(LOG_PREFIX "job %u step %s: cannot tell whether the job asked for vgpu, "
			    "failing the step: %s", jobid, step_name(stepid, sbuf, sizeof(sbuf)), err);
		return -1;
	}
	state.looked_up = 1;
	if (state.job.vgpus == 0)
		return 0;
	state.vgpu_job = 1;
	state.batch = stepid == SLURM_BATCH_SCRIPT;
	snprintf(state.node, sizeof(state.node), "%s", state.job.node);
	src = spank_get_item(sp, S_JOB_UID, &uid);
	if (src == ESPANK_SUCCESS)
		src = spank_get_item(sp, S_JOB_GID, &gid);
	if (src != ESPANK_SUCCESS) {
		slurm_error(LOG_PREFIX "job %u: cannot get its user and group: %s", jobid, spank_strerror(src));
		return -1;
	}
	if (vgpu_prepare_socket_dir(cfg->agent_socket_dir, jobid, (uid_t)uid, (gid_t)gid, err, sizeof(err)) != 0) {
		slurm_error(LOG_PREFIX "job %u on %s: no directory for its migration agent, failing the step: %s",
			    jobid, state.node, err);
		return -1;
	}
	return 0;
}

static int do_user_init(spank_t sp, const struct vgpu_config *cfg, const char *migrate)
{
	struct vgpu_assembly *a = NULL;
	struct vgpu_env *e = NULL;
	const struct vgpu_job *job = &state.job;
	char base[VGPU_REQUEST_MAX];
	char err[VGPU_ERR_MAX];
	char tracker[VGPU_HOST_BYTES + 16];
	const char *source = VGPU_SOURCE_TRACKER;
	const uint32_t jobid = state.jobid;
	int rc = -1;

	if (!state.looked_up || job->vgpus == 0)
		return 0;	/* the extern step, or no vgpu */

	a = calloc(1, sizeof(*a));
	e = calloc(1, sizeof(*e));
	if (a == NULL || e == NULL) {
		slurm_error(LOG_PREFIX "job %u: out of memory", jobid);
		goto fail;
	}
	if (vgpu_format_assembly_request(base, sizeof(base), jobid, job->node, err,
					 sizeof(err)) < 0) {
		slurm_error(LOG_PREFIX "job %u: %s", jobid, err);
		goto fail;
	}
	if (fetch_assembly(cfg, base, a, err, sizeof(err)) != 0) {
		if (local_only(sp, cfg, job->vgpus, a, err) != 0)
			goto fail;
		source = VGPU_SOURCE_LOCAL_ONLY_FALLBACK;
	} else if (a->vgpus != job->vgpus) {
		slurm_error(LOG_PREFIX "job %u on %s asked for %u vGPU(s) per node, the tracker's "
			    "assembly has %u: failing the step", jobid, job->node, job->vgpus, a->vgpus);
		goto fail;
	}
	if (vgpu_env_render(a, cfg->agent_socket_dir, jobid, job->node, e, err, sizeof(err)) != 0) {
		slurm_error(LOG_PREFIX "job %u on %s: bad assembly from the tracker: %s", jobid,
			    job->node, err);
		goto fail;
	}
	vgpu_config_describe_tracker(cfg, tracker, sizeof(tracker));
	if (export_env(sp, e, job->node, source, migrate, tracker) != 0)
		goto fail;
	log_assembly(jobid, job->node, a, e, source);
	rc = 0;
fail:
	free(e);
	free(a);
	return rc;
}

/*
 * A failing user_init() makes Slurm 22.05 drain the node ("Slurmd could not
 * execve job") and record the batch job as COMPLETED with exit code 0. So
 * user_init() only remembers the failure, and task_init() stops each task
 * before exec: the job ends FAILED with exit code 1 and the node stays up.
 */
int vgpu_remote_init_post_opt(spank_t sp, const struct vgpu_config *cfg)
{
	if (do_init_post_opt(sp, cfg) != 0)
		state.failed = 1;
	return 0;
}

int vgpu_remote_user_init(spank_t sp, const struct vgpu_config *cfg, const char *migrate)
{
	if (!state.failed && do_user_init(sp, cfg, migrate) != 0)
		state.failed = 1;
	return 0;
}

/*
 * As root, once Slurm has set up the new step's devices constraint with the step's own GRES (v1
 * devices files, or v2 device programs): the GPUs granted to the job while it ran (grant records
 * of the holders' prologs) are admitted into the new step too. Nothing to do without records or
 * without a job cgroup.
 */
void vgpu_remote_readmit_grants(spank_t sp, const struct vgpu_config *cfg)
{
	char dir[PATH_MAX], err[VGPU_ERR_MAX];
	struct vgpu_cgroup_root root;
	uint32_t uid = 0;
	unsigned admitted = 0;

	if (state.failed || !state.vgpu_job || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return;
	root.kind = vgpu_find_devices_cgroup("/proc/self/mounts", root.mount, sizeof(root.mount));
	if (vgpu_job_cgroup(&root, state.node, (uid_t)uid, state.jobid, dir, sizeof(dir), err, sizeof(err)) != 0)
		return;
	if (vgpu_readmit_grants(&root, dir, cfg->agent_socket_dir, state.jobid, &admitted, err, sizeof(err)) != 0)
		slurm_error(LOG_PREFIX "job %u: not every granted device is admitted into this step: %s", state.jobid,
			    err);
	if (admitted > 0)
		slurm_verbose(LOG_PREFIX "job %u: %u granted device(s) admitted into the new step's cgroups",
			      state.jobid, admitted);
}

int vgpu_remote_task_init(spank_t sp)
{
	/* again here, in case Slurm sets the task's GPU variables after user_init */
	if (!state.failed && state.vgpu_job)
		return unset_visible_devices(sp);
	if (!state.failed)
		return 0;
	slurm_error(LOG_PREFIX "job %u: not starting the task without its vGPU assembly "
		    "(reason logged above and in slurmd's log)", state.jobid);
	return -1;
}

void vgpu_remote_task_exit(spank_t sp)
{
	int status;

	if (!state.vgpu_job || !state.batch)
		return;
	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
		return;
	state.have_status = 1;
	if (WIFEXITED(status))
		state.status = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		state.status = 128 + WTERMSIG(status);
	else
		state.status = -1;
}

void vgpu_remote_exit(spank_t sp, const struct vgpu_config *cfg)
{
	char base[VGPU_REQUEST_MAX];
	char request[VGPU_REQUEST_MAX];
	char reply[VGPU_LINE_MAX];
	char reason[VGPU_REASON_LOGGED_BYTES + 1];
	char err[VGPU_ERR_MAX];
	const int status = state.have_status ? state.status : -1;
	int n;

	(void)sp;
	/* Other steps end inside the job; the batch step's end is the job's. */
	if (!state.vgpu_job || !state.batch)
		return;
	if (vgpu_format_done_request(base, sizeof(base), state.jobid, state.node, status,
				     err, sizeof(err)) < 0
	    || vgpu_finish_request(cfg, base, request, sizeof(request), err, sizeof(err)) < 0) {
		slurm_error(LOG_PREFIX "job %u: %s", state.jobid, err);
		return;
	}
	n = vgpu_tracker_call(cfg, request, reply, sizeof(reply), err, sizeof(err));
	if (n < 0) {
		slurm_error(LOG_PREFIX "job %u on %s ended (status %d) but the tracker was not told, "
			    "it must notice from Slurm: %s", state.jobid, state.node, status, err);
		return;
	}
	switch (vgpu_parse_done_reply(reply, (size_t)n, reason, sizeof(reason), err, sizeof(err))) {
	case VGPU_REPLY_OK:
		slurm_info(LOG_PREFIX "job %u on %s ended with status %d, tracker told",
			   state.jobid, state.node, status);
		break;
	case VGPU_REPLY_ERROR:
		slurm_error(LOG_PREFIX "job %u on %s ended, tracker answered: %s", state.jobid,
			    state.node, reason);
		break;
	default:
		slurm_error(LOG_PREFIX "job %u on %s ended, malformed reply from the tracker: %s",
			    state.jobid, state.node, err);
		break;
	}
}
