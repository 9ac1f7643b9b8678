/* slurmstepd (remote context): get the assembly, export it, report the end. */
#ifndef VGPU_REMOTE_H
#define VGPU_REMOTE_H

#include <slurm/spank.h>

#include "config.h"

int vgpu_remote_init_post_opt(spank_t sp, const struct vgpu_config *cfg);
int vgpu_remote_user_init(spank_t sp, const struct vgpu_config *cfg, const char *migrate);
/* The job's granted devices into the step being started (grant records; v1 or v2 cgroups). */
void vgpu_remote_readmit_grants(spank_t sp, const struct vgpu_config *cfg);
int vgpu_remote_task_init(spank_t sp);
void vgpu_remote_task_exit(spank_t sp);
void vgpu_remote_exit(spank_t sp, const struct vgpu_config *cfg);

#endif
