/* slurmd's job prolog and epilog (S_CTX_JOB_SCRIPT, root): grants and the agent socket directory. */
#ifndef VGPU_PROLOG_H
#define VGPU_PROLOG_H

#include <slurm/spank.h>

#include "config.h"

/* A grant holder's GPU into its target job's devices cgroup; nothing for other jobs. */
void vgpu_job_prolog(spank_t sp, const struct vgpu_config *cfg);
/* A grant holder's GPU out of its target job's devices cgroup; every job's agent socket directory away. */
void vgpu_job_epilog(spank_t sp, const struct vgpu_config *cfg);

#endif
