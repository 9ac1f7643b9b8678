/*
 * The migration agent's socket directory. agent_socket_dir (plugstack.conf, from the site
 * configuration) is root's, mode 0755; each vgpu job gets <agent_socket_dir>/job-<jobid>, owned
 * by the job's user, mode 0700, made by the bridge as root in slurmstepd before the job's tasks
 * start and removed by its job epilog. Only root creates names in the shared directory, so no
 * user can take another job's socket name first, and only the job's user (and root) can reach
 * the job's agent. No Slurm here: the unit tests build it.
 */
#ifndef VGPU_SOCKDIR_H
#define VGPU_SOCKDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

/* The per-job directory's name inside agent_socket_dir: job-<jobid>. */
#define VGPU_JOB_SOCKET_DIR_PREFIX "job-"

/* <agent_socket_dir>/job-<jobid> into out. 0, or -1 when it does not fit. */
int vgpu_job_socket_dir(const char *agent_socket_dir, uint32_t jobid, char *out, size_t cap);

/*
 * Makes agent_socket_dir (and missing parents, root's, 0755) and the job's directory in it,
 * owned by uid:gid, mode 0700. Refuses (-1 with err, nothing changed) an agent_socket_dir that
 * is a link, not root's, or writable by group or others, and a job directory that exists but is
 * a link, not a directory, not owned by uid, or open to group or others. Another step of the
 * same job finding the directory in order is fine.
 */
int vgpu_prepare_socket_dir(const char *agent_socket_dir, uint32_t jobid, uid_t uid, gid_t gid,
			    char *err, size_t errlen);

/*
 * Removes the job's directory and what the job left in it, without following links. 0 (also
 * when there was none), or -1 with err.
 */
int vgpu_remove_socket_dir(const char *agent_socket_dir, uint32_t jobid, char *err, size_t errlen);

/*
 * Grant records: agent_socket_dir/grants/<job>-<holder>, root's (directory 0700, file 0600),
 * holding "MAJOR MINOR" of the device a grant holder's prolog admitted into job's cgroup. A step
 * the job starts later reads them to admit the granted GPUs into its own cgroup (Slurm fills a new
 * step's devices cgroup with the step's own GRES only); the holder's epilog removes its record.
 */
#define VGPU_GRANTS_DIR "grants"
int vgpu_grant_record_write(const char *agent_socket_dir, uint32_t job, uint32_t holder, unsigned major,
			    unsigned minor, char *err, size_t errlen);
int vgpu_grant_record_remove(const char *agent_socket_dir, uint32_t job, uint32_t holder, char *err,
			     size_t errlen);
/* Removes every record of job (its prolog and epilog: records of an earlier job of that id are stale). */
void vgpu_grant_records_clear(const char *agent_socket_dir, uint32_t job);
/*
 * Calls found(major, minor, ctx) for every record of job that root wrote (others are skipped);
 * stops at the first non-zero return and returns it. 0 also when there are no records.
 */
int vgpu_grant_records(const char *agent_socket_dir, uint32_t job, int (*found)(unsigned major, unsigned minor,
			void *ctx), void *ctx);

#endif
