/*
 * A node GPU granted to a running vgpu job: the tracker claims it with a grant holder job
 * (contract/grammar.conf grant_holder_prefix: vgpu-grant-<job>-v<vgpu>) on the job's node, and
 * the bridge's job prolog of that holder admits the GPU's device into the job's device cgroup; its
 * epilog drops it. The grant lives exactly as long as the holder job. Nothing here depends on
 * Slurm, so the unit tests (and tests/cgroup-v1-test.sh on a real devices controller) build it.
 */
#ifndef VGPU_GRANT_H
#define VGPU_GRANT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "common.h"

/*
 * "vgpu-grant-<job>-v<vgpu>" as the tracker names a grant holder: job 1..job_id_max and vgpu
 * 0..vgpus_max-1, both decimal without leading zeros, nothing before or after.
 * 1 and the two numbers when name is a grant holder's; 0 when it does not start with the prefix
 * (an ordinary job); -1 with the reason in err when it starts with the prefix but is malformed.
 */
int vgpu_parse_grant_name(const char *name, uint32_t *job, unsigned *vgpu, char *err, size_t errlen);

/*
 * The one GPU a grant holder holds, from its SLURM_JOB_GPUS (or CUDA_VISIBLE_DEVICES) in the
 * prolog's environment: exactly one Slurm GPU index 0..gpu_index_max. 0, or -1 with err.
 */
int vgpu_parse_single_gpu(const char *value, unsigned *index, char *err, size_t errlen);

/*
 * Calls emit(item, ctx) for each name of a Slurm host list expression ("n[1-3],gpu[01-02]x",
 * "/dev/nvidia[0-3]"), in order; brackets hold comma-separated numbers and ranges, zero padding
 * as written. Stops early when emit returns non-zero and returns that value; 0 when every name
 * was emitted; -1 with err for a malformed expression or more than VGPU_EXPAND_MAX names.
 */
#define VGPU_EXPAND_MAX 65536
int vgpu_expand_hostlist(const char *expr, int (*emit)(const char *item, void *ctx), void *ctx,
			 char *err, size_t errlen);

/*
 * The device file of Slurm's GPU index on node, as gres.conf at path names it: the File= entries
 * of the Name=gpu lines that apply to node (no NodeName=, or a NodeName= list naming it), in the
 * order they are written, expanded; index i is the i-th of them. 0 and file, or -1 with err (no
 * such file, no such index, a gpu line without File= such as AutoDetect: no mapping).
 */
int vgpu_gres_gpu_file(const char *path, const char *node, unsigned index, char *file, size_t cap,
		       char *err, size_t errlen);

/*
 * The job's devices cgroup in Slurm's v1 layout: <mount>/slurm_<node>/uid_<uid>/job_<job>
 * (slurmd built for several slurmd per host) or <mount>/slurm/uid_<uid>/job_<job>. 0 and dir
 * when one of them is a directory (not a link); 1 when neither exists (the job's devices are
 * not constrained: ConstrainDevices=no, or the job has ended); -1 with err.
 */
int vgpu_job_devices_cgroup(const char *mount, const char *node, uid_t uid, uint32_t job, char *dir,
			    size_t cap, char *err, size_t errlen);

/*
 * Writes "c MAJOR:MINOR rw" into devices.allow (allow) or "c MAJOR:MINOR rwm" into devices.deny
 * of the cgroup dir and of every cgroup below it (step_*, task_*: a v1 child does not inherit an
 * allowance given to its parent later). 0 and the number of cgroups written in *written, or -1
 * with err (the first failure; the walk stops there).
 */
int vgpu_cgroup_set_device(const char *dir, const struct vgpu_device *dev, int allow, unsigned *written,
			   char *err, size_t errlen);

/* A node's devices constraint: its kind and mount point (vgpu_find_devices_cgroup). */
struct vgpu_cgroup_root {
	enum vgpu_cgroup_kind kind;
	char mount[PATH_MAX];
};

/*
 * The job's cgroup under root, in Slurm's layout for root's kind (uid matters to v1 only). 0 and
 * dir; 1 when there is none (the job's devices are not constrained: ConstrainDevices=no, no
 * cgroups at all, or the job has ended); -1 with err.
 */
int vgpu_job_cgroup(const struct vgpu_cgroup_root *root, const char *node, uid_t uid, uint32_t job, char *dir,
		    size_t cap, char *err, size_t errlen);

/*
 * dev admitted into (allow) or dropped from the job cgroup dir and everything below it, as
 * root's kind does it: devices.allow/deny files on v1, device programs on v2 (cgroup2.h). 0 and
 * in *count the cgroups written (v1) or device programs that carry it (v2; 0: no device program,
 * the job's devices are not constrained), or -1 with err.
 */
int vgpu_job_set_device(const struct vgpu_cgroup_root *root, const char *dir, const struct vgpu_device *dev,
			int allow, unsigned *count, char *err, size_t errlen);

/*
 * A step the job started after a grant: every device the grant records of job in
 * agent_socket_dir name (sockdir.h) admitted into the job cgroup dir again (Slurm gives a new
 * step its own GRES only). 0 with the devices admitted in *admitted, or -1 with the first
 * failure in err (the other records are still tried).
 */
int vgpu_readmit_grants(const struct vgpu_cgroup_root *root, const char *dir, const char *agent_socket_dir,
			uint32_t job, unsigned *admitted, char *err, size_t errlen);

#endif
