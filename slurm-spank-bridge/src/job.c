#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "job.h"
#include "protocol.h"
#include "validate.h"

#define LOAD_TRIES 3

static int copy_node(struct vgpu_job *job, const char *name, char *err, size_t errlen)
{
	size_t n;

	if (name == NULL)
		return vgpu_fail(err, errlen, "slurmctld gave no node name");
	n = strnlen(name, VGPU_NODE_NAME_BYTES + 1);
	if (vgpu_valid_node(name, n) != 0)
		return vgpu_fail(err, errlen, "node name is not [A-Za-z0-9" VGPU_NODE_CHARS "]{1,%d}", VGPU_NODE_NAME_BYTES);
	memcpy(job->node, name, n);
	job->node[n] = '\0';
	return 0;
}

/* Entry nodeid of a Slurm host list expression such as "n[1-3],m7". */
static int nth_node(const char *list, uint32_t nodeid, struct vgpu_job *job,
		    char *err, size_t errlen)
{
	/* struct hostlist *: hostlist_t is that pointer up to Slurm 22.05 and the struct itself from 23.02 on */
	struct hostlist *hl = slurm_hostlist_create(list);
	char *host = NULL;
	uint32_t i;
	int rc = -1;

	if (hl == NULL)
		return vgpu_fail(err, errlen, "cannot parse node list \"%.64s\"", list);
	for (i = 0; i <= nodeid; i++) {
		free(host);
		host = slurm_hostlist_shift(hl);
		if (host == NULL) {
			vgpu_fail(err, errlen, "node list \"%.64s\" has no entry %u", list, nodeid);
			goto fail;
		}
	}
	rc = copy_node(job, host, err, errlen);
fail:
	free(host);
	slurm_hostlist_destroy(hl);
	return rc;
}

static int step_node(spank_t sp, const slurm_job_info_t *info, uint32_t stepid,
		     struct vgpu_job *job, char *err, size_t errlen)
{
	char list[4096];
	uint32_t nodeid = 0;
	spank_err_t rc;

	if (stepid == SLURM_BATCH_SCRIPT)
		return copy_node(job, info->batch_host, err, errlen);
	rc = spank_get_item(sp, S_JOB_NODEID, &nodeid);
	if (rc != ESPANK_SUCCESS)
		return vgpu_fail(err, errlen, "S_JOB_NODEID: %s", spank_strerror(rc));
	/*
	 * SLURMD_NODENAME is not yet this node's name here (see README); the
	 * step's node list, which srun puts into the step's environment, is.
	 */
	rc = spank_getenv(sp, "SLURM_STEP_NODELIST", list, sizeof(list));
	if (rc == ESPANK_SUCCESS)
		return nth_node(list, nodeid, job, err, errlen);
	if (rc != ESPANK_ENV_NOEXIST)
		return vgpu_fail(err, errlen, "SLURM_STEP_NODELIST: %s", spank_strerror(rc));
	/* no srun in between (the interactive step): the step has the job's nodes */
	if (info->nodes == NULL)
		return vgpu_fail(err, errlen, "no SLURM_STEP_NODELIST and no job node list");
	return nth_node(info->nodes, nodeid, job, err, errlen);
}

int vgpu_job_load(uint32_t jobid, job_info_msg_t **msg, const slurm_job_info_t **info, char *err,
		  size_t errlen)
{
	uint32_t i;
	int tries;

	*msg = NULL;
	*info = NULL;
	for (tries = 1;; tries++) {
		if (slurm_load_job(msg, jobid, SHOW_DETAIL) == SLURM_SUCCESS)
			break;
		if (tries == LOAD_TRIES)
			return vgpu_fail(err, errlen,
					 "cannot load job %u from slurmctld after %d tries: %s",
					 jobid, LOAD_TRIES, slurm_strerror(errno));
		sleep(1);
	}
	/* a heterogeneous job answers with all its components */
	for (i = 0; *msg != NULL && (*msg)->job_array != NULL && i < (*msg)->record_count; i++)
		if ((*msg)->job_array[i].job_id == jobid)
			*info = &(*msg)->job_array[i];
	if (*info == NULL) {
		if (*msg != NULL)
			slurm_free_job_info_msg(*msg);
		*msg = NULL;
		return vgpu_fail(err, errlen, "slurmctld's answer does not contain job %u", jobid);
	}
	return 0;
}

int vgpu_job_lookup(spank_t sp, uint32_t jobid, uint32_t stepid, struct vgpu_job *job,
		    char *err, size_t errlen)
{
	job_info_msg_t *msg;
	const slurm_job_info_t *info;
	int rc = -1;

	memset(job, 0, sizeof(*job));
	if (vgpu_job_load(jobid, &msg, &info, err, errlen) != 0)
		return -1;
	if (vgpu_count_from_tres(info->tres_per_node, &job->vgpus, err, errlen) != 0)
		goto fail;
	if (job->vgpus > 0 && step_node(sp, info, stepid, job, err, errlen) != 0)
		goto fail;
	rc = 0;
fail:
	slurm_free_job_info_msg(msg);
	return rc;
}
