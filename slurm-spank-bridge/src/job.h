/* What slurmstepd needs to know about its job from slurmctld. */
#ifndef VGPU_JOB_H
#define VGPU_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "common.h"

struct vgpu_job {
	unsigned vgpus;			/* per node; 0: not a vgpu job */
	char node[VGPU_NODE_NAME_BYTES + 1];	/* the node this step runs on */
};

/*
 * Loads the job from slurmctld and fills *job. The node is the batch host for
 * the batch step, otherwise entry S_JOB_NODEID of the step's node list.
 * When the job asks for no vgpu, job->vgpus is 0 and job->node may be empty.
 */
int vgpu_job_lookup(spank_t sp, uint32_t jobid, uint32_t stepid, struct vgpu_job *job,
		    char *err, size_t errlen);

/*
 * slurmctld's record of jobid (asked up to 3 times, a second apart). 0 with *msg (free it with
 * slurm_free_job_info_msg) and *info pointing into it, or -1 with err.
 */
int vgpu_job_load(uint32_t jobid, job_info_msg_t **msg, const slurm_job_info_t **info, char *err,
		  size_t errlen);

#endif
