/*
 * A granted GPU in and out of a job's devices on cgroup v2, where Slurm (cgroup/v2 plugin,
 * ConstrainDevices=yes) constrains devices with BPF_PROG_TYPE_CGROUP_DEVICE programs instead of
 * devices.allow files. What Slurm 22.05 does (read from its source, src/plugins/cgroup/v2):
 *   - a job's cgroups are <cgroup2>/system.slice/slurmstepd.scope/job_<J>/step_<S>/user/task_<T>
 *     (<node>_slurmstepd.scope when slurmd is built for several slurmd per host);
 *   - it attaches one device program at the job and at each step's "user" cgroup with
 *     BPF_F_ALLOW_OVERRIDE, and at a task's cgroup (when it constrains tasks) with no flag: the
 *     program nearest to a process is the only one that decides (override semantics);
 *   - a program is a list of rules (device type, major, minor: allow or deny) and a default
 *     verdict, plain loads, compares and exits: no helper calls, no maps.
 * A device program cannot be widened by attaching another one next to it, so admission REPLACES
 * the program at each cgroup of the job that has one with a "vgpu_grants" program: it allows a
 * character device found in its grants map (a BPF hash map keyed by major and minor), and for
 * every other request runs the replaced program's own instructions, appended unchanged, so every
 * verdict of Slurm's stays exactly as it was. The replaced program's instructions are copied
 * (read back from the kernel) rather than reached through a tail call: a tail call's program
 * array is emptied by the kernel when the last file descriptor of it closes, which would leave
 * the job's devices denied once the prolog has exited.
 * Nothing here depends on Slurm.
 */
#ifndef VGPU_CGROUP2_H
#define VGPU_CGROUP2_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"

/* The program name that marks a device program as ours (BPF_OBJ_NAME_LEN bytes at most). */
#define VGPU_GRANTS_PROG_NAME "vgpu_grants"
/* At most this many devices granted into one job at once (the grants map's size). */
#define VGPU_GRANTS_MAX 64
/* A wrapped program longer than this is refused (Slurm's are a few dozen instructions). */
#define VGPU_WRAPPED_INSNS_MAX 4096

/*
 * The job's cgroup in Slurm's cgroup/v2 layout: <mount>/system.slice/<node>_slurmstepd.scope/
 * job_<job> (several slurmd per host), else <mount>/system.slice/slurmstepd.scope/job_<job>.
 * 0 and dir when one is a directory (not a link); 1 when neither exists; -1 with err.
 */
int vgpu_job_cgroup2(const char *mount, const char *node, uint32_t job, char *dir, size_t cap, char *err,
		     size_t errlen);

/* One BPF instruction (registers 0..10; 64-bit immediates take two, the second all zero but imm). */
struct bpf_insn vgpu_bpf_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm);

/*
 * The grant check that comes before the wrapped program: exit with "allow" for a character
 * device (not a mknod) whose {major, minor} is in the grants map map_fd, else fall through to
 * the instruction right after it with the context back in r1. Fills out with exactly
 * VGPU_GRANT_CHECK_INSNS instructions and returns that number.
 */
#define VGPU_GRANT_CHECK_INSNS 23
size_t vgpu_grant_check_insns(struct bpf_insn *out, int map_fd);

/*
 * 0 when a program's translated instructions can follow the grant check as they are: a
 * self-contained device program of Slurm's shape (no helper or program calls, no map or 64-bit
 * loads, no register the kernel alone uses). -1 with the reason in err.
 */
int vgpu_wrappable_insns(const struct bpf_insn *insns, size_t n, char *err, size_t errlen);

/*
 * Admits (allow) or drops dev for the processes of the cgroup dir and of every cgroup below it
 * (parents first, no links, at most VGPU_CGROUP_DEPTH levels): each device program attached
 * there that is ours gets dev put into (or taken out of) its grants map; on admission, each one
 * that is not ours is replaced by ours wrapping it (same attach flags; in BPF_F_ALLOW_MULTI mode
 * in its own place, with BPF_F_REPLACE). Dropping leaves the wrappers, which then decide as the
 * wrapped programs do. One call at a time per job (an exclusive flock on dir). 0 and in *programs the number of device programs that now carry the
 * admission or drop (0: no device program anywhere, the job's devices are not constrained), or
 * -1 with err (the first failure; the walk stops there).
 */
int vgpu_cgroup2_set_device(const char *dir, const struct vgpu_device *dev, int allow, unsigned *programs,
			    char *err, size_t errlen);

#endif
