/*
 * slurmd's job prolog and epilog (S_CTX_JOB_SCRIPT, root, on the job's node): a grant holder's
 * GPU into and out of its target job's devices cgroup (grant.h: v1 devices files; cgroup2.h: v2
 * device programs), and the end of a job's agent
 * socket directory (sockdir.h). Neither ever fails the prolog or epilog: Slurm 22.05 drains the
 * node when they do, and any user could name a job like a grant holder. A grant that cannot be
 * admitted is refused (nothing written) with the reason in slurmd's log; the job then cannot
 * open the GPU and the tracker's migration onto it fails cleanly.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"
#include "job.h"
#include "prolog.h"
#include "protocol.h"
#include "sockdir.h"
#include "validate.h"

#define LOG_PREFIX VGPU_PLUGIN_NAME ": "
#define MOUNTS "/proc/self/mounts"
#define DEFAULT_GRES_CONF "/etc/slurm/gres.conf"

struct grant {
	uint32_t holder;
	uint32_t target;
	unsigned vgpu;
	unsigned gpu;
	char node[VGPU_NODE_NAME_BYTES + 1];
	char file[PATH_MAX];
	struct vgpu_device dev;
	uid_t target_uid;
};

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : fallback;
}

/* gres.conf: plugstack's gres_conf=, else next to slurm.conf (SLURM_CONF of slurmd), else /etc/slurm. */
static void gres_conf_path(const struct vgpu_config *cfg, char *out, size_t cap)
{
	const char *conf = getenv("SLURM_CONF");
	char copy[PATH_MAX];

	if (cfg->gres_conf[0] != '\0') {
		snprintf(out, cap, "%s", cfg->gres_conf);
		return;
	}
	if (conf == NULL || conf[0] != '/' || strlen(conf) >= sizeof(copy)) {
		snprintf(out, cap, "%s", DEFAULT_GRES_CONF);
		return;
	}
	snprintf(copy, sizeof(copy), "%s", conf);
	snprintf(out, cap, "%s/gres.conf", dirname(copy));
}

static int on_node(const char *list, const char *node)
{
	struct hostlist *hl; /* as in job.c: the same type under every Slurm */
	int found;

	if (list == NULL)
		return 0;
	hl = slurm_hostlist_create(list);
	if (hl == NULL)
		return 0;
	found = slurm_hostlist_find(hl, node) >= 0;
	slurm_hostlist_destroy(hl);
	return found;
}

/*
 * Everything a grant holder's prolog or epilog checks before it touches a cgroup. 1 and g filled
 * for a valid grant; 0 for a job that is no grant holder; -1 with err for a refused one (g's
 * holder, target and vgpu are set as far as they are known).
 */
static int resolve_grant(spank_t sp, const struct vgpu_config *cfg, int starting, struct grant *g,
			 char *err, size_t errlen)
{
	job_info_msg_t *msg = NULL;
	const slurm_job_info_t *info;
	char why[VGPU_ERR_MAX], gres_conf[PATH_MAX];
	const char *partition, *node, *gpus;
	uid_t holder_uid;
	unsigned target_vgpus;
	int rc;

	memset(g, 0, sizeof(*g));
	if (spank_get_item(sp, S_JOB_ID, &g->holder) != ESPANK_SUCCESS)
		return 0;
	/*
	 * Slurm 22.05's prolog environment has no job name, but the partition: only jobs in the lend
	 * partition can be grant holders, so only they cost an RPC.
	 */
	partition = getenv("SLURM_JOB_PARTITION");
	if (cfg->lend_partition[0] != '\0' && partition != NULL && strcmp(partition, cfg->lend_partition) != 0)
		return 0;
	if (vgpu_job_load(g->holder, &msg, &info, why, sizeof(why)) != 0)
		return vgpu_fail(err, errlen, "%s", why);
	rc = vgpu_parse_grant_name(info->name, &g->target, &g->vgpu, why, sizeof(why));
	if (rc <= 0)
		goto done;
	rc = -1;
	/*
	 * who may grant: the tracker, in the lend partition, which admits root's submissions only
	 * (AllowGroups=root, or vgpu_job_submit.lua where holders run as their borrower): a holder of
	 * root's, or of the target job's own user (checked below, once the target is loaded). A user's
	 * job named like a grant holder could only put a GPU it holds itself into a job of its own.
	 */
	holder_uid = (uid_t)info->user_id;
	if (cfg->lend_partition[0] == '\0') {
		vgpu_fail(err, errlen, "plugstack.conf has no " VGPU_PLUGSTACK_LEND_PARTITION "=, so no job is taken for a grant holder");
		goto done;
	}
	if (info->partition == NULL || strcmp(info->partition, cfg->lend_partition) != 0) {
		vgpu_fail(err, errlen, "the holder runs in partition %s, not in the lend partition %s",
			  info->partition == NULL ? "(none)" : info->partition, cfg->lend_partition);
		goto done;
	}
	node = getenv("SLURMD_NODENAME");
	if (node == NULL || vgpu_valid_node(node, strnlen(node, VGPU_NODE_NAME_BYTES + 1)) != 0) {
		vgpu_fail(err, errlen, "SLURMD_NODENAME is missing or malformed in the prolog's environment");
		goto done;
	}
	snprintf(g->node, sizeof(g->node), "%s", node);
	if (info->nodes == NULL || strcmp(info->nodes, node) != 0) {
		vgpu_fail(err, errlen, "the holder runs on %s, not on this node %s alone",
			  info->nodes == NULL ? "(none)" : info->nodes, node);
		goto done;
	}
	gpus = env_or("SLURM_JOB_GPUS", getenv("CUDA_VISIBLE_DEVICES"));
	if (vgpu_parse_single_gpu(gpus, &g->gpu, err, errlen) != 0)
		goto done;
	slurm_free_job_info_msg(msg);
	msg = NULL;

	if (vgpu_job_load(g->target, &msg, &info, why, sizeof(why)) != 0) {
		vgpu_fail(err, errlen, "job %u: %s", g->target, why);
		goto done;
	}
	if (vgpu_count_from_tres(info->tres_per_node, &target_vgpus, why, sizeof(why)) != 0 || target_vgpus == 0) {
		vgpu_fail(err, errlen, "job %u is not a vgpu job", g->target);
		goto done;
	}
	if (starting && (info->job_state & JOB_STATE_BASE) != JOB_RUNNING) {
		vgpu_fail(err, errlen, "job %u is not running", g->target);
		goto done;
	}
	if (!on_node(info->nodes, node)) {
		vgpu_fail(err, errlen, "job %u does not run on %s", g->target, node);
		goto done;
	}
	g->target_uid = (uid_t)info->user_id;
	if (holder_uid != 0 && holder_uid != g->target_uid) {
		vgpu_fail(err, errlen, "the holder belongs to uid %u, neither root (the tracker's) nor job %u's user (uid %u)",
			  (unsigned)holder_uid, g->target, (unsigned)g->target_uid);
		goto done;
	}
	gres_conf_path(cfg, gres_conf, sizeof(gres_conf));
	if (vgpu_gres_gpu_file(gres_conf, node, g->gpu, g->file, sizeof(g->file), err, errlen) != 0
	    || vgpu_char_device(g->file, &g->dev, err, errlen) != 0)
		goto done;
	rc = 1;
done:
	if (msg != NULL)
		slurm_free_job_info_msg(msg);
	if (rc < 0 && err != NULL && err[0] == '\0')
		vgpu_fail(err, errlen, "%s", why);
	return rc;
}

/* How a log line names the job's cgroup that constrains its devices. */
static const char *cgroup_word(enum vgpu_cgroup_kind kind)
{
	return kind == VGPU_CGROUP_V2 ? "cgroup v2 (device programs)" : "devices";
}

static void grant_device(spank_t sp, const struct vgpu_config *cfg, int admit)
{
	const char *verb = admit ? "admitting" : "dropping";
	char err[VGPU_ERR_MAX] = "", dir[PATH_MAX];
	struct vgpu_cgroup_root root;
	struct grant g;
	unsigned written = 0;
	int rc;

	rc = resolve_grant(sp, cfg, admit, &g, err, sizeof(err));
	if (rc == 0)
		return;
	if (rc < 0) {
		slurm_error(LOG_PREFIX "grant holder %u (job %u vGPU %u): not %s its GPU: %s", g.holder,
			    g.target, g.vgpu, admit ? "admitting" : "dropping", err);
		return;
	}
	/* the job's later steps stop getting the GPU, whatever becomes of the cgroup below */
	if (!admit && vgpu_grant_record_remove(cfg->agent_socket_dir, g.target, g.holder, err, sizeof(err)) != 0)
		slurm_error(LOG_PREFIX "grant holder %u: job %u's grant record stays: %s", g.holder, g.target, err);
	root.kind = vgpu_find_devices_cgroup(MOUNTS, root.mount, sizeof(root.mount));
	if (root.kind == VGPU_CGROUP_NONE) {
		slurm_info(LOG_PREFIX "grant holder %u: no cgroup file system here, job %u's devices are not "
			   "constrained: nothing to %s for GPU %u", g.holder, g.target, admit ? "admit" : "drop",
			   g.gpu);
		return;
	}
	rc = vgpu_job_cgroup(&root, g.node, g.target_uid, g.target, dir, sizeof(dir), err, sizeof(err));
	if (rc == 1) {
		slurm_info(LOG_PREFIX "grant holder %u: job %u has no %s cgroup on %s (ConstrainDevices=no, "
			   "or it has ended): nothing to %s for GPU %u", g.holder, g.target, cgroup_word(root.kind),
			   g.node, admit ? "admit" : "drop", g.gpu);
		return;
	}
	if (rc == 0)
		rc = vgpu_job_set_device(&root, dir, &g.dev, admit, &written, err, sizeof(err));
	if (rc != 0) {
		slurm_error(LOG_PREFIX "grant holder %u: %s GPU %u (%s, c %u:%u) %s job %u's %s cgroup "
			    "failed: %s", g.holder, verb, g.gpu, g.file, g.dev.major, g.dev.minor,
			    admit ? "into" : "out of", g.target, cgroup_word(root.kind), err);
		return;
	}
	if (written == 0) {
		/* cgroup v2 without a device program anywhere in the job: nothing constrains its devices */
		slurm_info(LOG_PREFIX "grant holder %u: job %u's cgroup %s has no device program "
			   "(ConstrainDevices=no): nothing to %s for GPU %u", g.holder, g.target, dir,
			   admit ? "admit" : "drop", g.gpu);
		return;
	}
	slurm_info(LOG_PREFIX "grant holder %u: GPU %u (%s, c %u:%u) %s job %u vGPU %u's %s cgroup %s "
		   "(%u %s)", g.holder, g.gpu, g.file, g.dev.major, g.dev.minor,
		   admit ? "admitted into" : "dropped from", g.target, g.vgpu, cgroup_word(root.kind), dir, written,
		   root.kind == VGPU_CGROUP_V2 ? "device program(s)" : "cgroup(s)");
	/* for the steps the job starts while the grant lasts (vgpu_remote_readmit_grants) */
	if (admit && vgpu_grant_record_write(cfg->agent_socket_dir, g.target, g.holder, g.dev.major, g.dev.minor,
					     err, sizeof(err)) != 0)
		slurm_error(LOG_PREFIX "grant holder %u: job %u's later steps will not get the GPU: %s", g.holder,
			    g.target, err);
}

void vgpu_job_prolog(spank_t sp, const struct vgpu_config *cfg)
{
	uint32_t jobid;

	/* a job that starts has no grant yet: records under its id are an earlier job's */
	if (spank_get_item(sp, S_JOB_ID, &jobid) == ESPANK_SUCCESS)
		vgpu_grant_records_clear(cfg->agent_socket_dir, jobid);
	grant_device(sp, cfg, 1);
}

void vgpu_job_epilog(spank_t sp, const struct vgpu_config *cfg)
{
	char err[VGPU_ERR_MAX];
	uint32_t jobid;

	grant_device(sp, cfg, 0);
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return;
	vgpu_grant_records_clear(cfg->agent_socket_dir, jobid);
	if (vgpu_remove_socket_dir(cfg->agent_socket_dir, jobid, err, sizeof(err)) != 0)
		slurm_error(LOG_PREFIX "job %u: cannot remove its agent socket directory: %s", jobid, err);
}
