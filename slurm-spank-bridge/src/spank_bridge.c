/*
 * vgpu SPANK bridge: the slurm_spank_* entry points. Each one parses nothing
 * itself; it checks the context and hands over to the file for that context.
 */
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "config.h"
#include "prolog.h"
#include "remote.h"

SPANK_PLUGIN(vgpu_spank, 1)

#define LOG_PREFIX VGPU_PLUGIN_NAME ": "

static struct vgpu_config config;
static int config_ok;
static char migrate[8] = VGPU_MIGRATE_AUTO;

enum { OPT_MIGRATE = 1 };

static int option_cb(int val, const char *optarg, int remote);

/*
 * Registered from slurm_spank_init: Slurm 22.05 ignores a static
 * spank_options table in sbatch/salloc, so it would reject the option there.
 */
static char migrate_name[] = "vgpu-migrate";
static char migrate_arginfo[] = "auto|never";
static char migrate_usage[] =
	"auto (default): the tracker may move borrowed vGPUs onto local GPUs while the job runs; "
	"never: they stay where they start";

static struct spank_option options[] = {
	{ migrate_name, migrate_arginfo, migrate_usage, 1, OPT_MIGRATE, option_cb },
	SPANK_OPTIONS_TABLE_END
};

static int option_cb(int val, const char *optarg, int remote)
{
	(void)remote;
	if (val != OPT_MIGRATE)
		return -1;
	if (optarg != NULL && (strcmp(optarg, VGPU_MIGRATE_AUTO) == 0 || strcmp(optarg, VGPU_MIGRATE_NEVER) == 0)) {
		memcpy(migrate, optarg, strlen(optarg) + 1);
		return 0;
	}
	slurm_error(LOG_PREFIX "--vgpu-migrate=%.32s: expected auto or never",
		    optarg == NULL ? "" : optarg);
	return -1;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[VGPU_ERR_MAX];
	struct spank_option *o;
	spank_err_t rc;

	if (vgpu_config_parse(ac, av, &config, err, sizeof(err)) != 0) {
		slurm_error(LOG_PREFIX "%s", err);
		return -1;
	}
	config_ok = 1;
	if (spank_context() == S_CTX_REMOTE) {
		char where[VGPU_HOST_BYTES + 16];

		vgpu_config_describe_tracker(&config, where, sizeof(where));
		slurm_debug(LOG_PREFIX VGPU_PLUGSTACK_TRACKER "=%s " VGPU_PLUGSTACK_TIMEOUT "=%u "
			    VGPU_PLUGSTACK_READY_TIMEOUT "=%u " VGPU_PLUGSTACK_FALLBACK "=%s "
			    VGPU_PLUGSTACK_AGENT_SOCKET_DIR "=%s", where, config.timeout_s, config.ready_timeout_s,
			    config.fallback == VGPU_FALLBACK_LOCAL_ONLY ? VGPU_FALLBACK_LOCAL_ONLY_WORD
									: VGPU_FALLBACK_NONE_WORD,
			    config.agent_socket_dir);
	}
	for (o = options; o->name != NULL; o++) {
		rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS) {
			slurm_error(LOG_PREFIX "cannot register --%s: %s", o->name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (!config_ok)
		return -1;
	return vgpu_remote_init_post_opt(sp, &config);
}

/*
 * Slurm 22.05 calls no slurm_spank_init before job_prolog/job_epilog (a process of their own):
 * the arguments are parsed here. A bad plugstack.conf is logged, never fails them (that drains).
 */
static int job_script_config(int ac, char **av)
{
	char err[VGPU_ERR_MAX];

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return -1;
	if (config_ok)
		return 0;
	if (vgpu_config_parse(ac, av, &config, err, sizeof(err)) != 0) {
		slurm_error(LOG_PREFIX "%s", err);
		return -1;
	}
	config_ok = 1;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
	/*
	 * From 24.05 on the process that runs job_prolog/job_epilog has not set up Slurm's client API, and the
	 * first RPC (slurm_load_job of a grant holder) ends it with "fatal: No hash plugins loaded". The
	 * process's own configuration is kept; this adds the client plugins.
	 */
	slurm_init(NULL);
#endif
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (job_script_config(ac, av) == 0)
		vgpu_job_prolog(sp, &config);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (job_script_config(ac, av) == 0)
		vgpu_job_epilog(sp, &config);
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (!config_ok)
		return -1;
	return vgpu_remote_user_init(sp, &config, migrate);
}

/*
 * The job's granted GPUs into a step's cgroups: from the task as root (task_init_privileged) and
 * again from slurmstepd itself after the fork (task_post_fork), because Slurm may set up the task's
 * devices constraint there, after task_init_privileged has run (seen on 22.05 with cgroup v1: a
 * step's task then lost a grant). Admitting twice is harmless on v1 and v2 alike.
 */
static int readmit_grants(spank_t sp)
{
	if (spank_context() == S_CTX_REMOTE && config_ok)
		vgpu_remote_readmit_grants(sp, &config);
	return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return readmit_grants(sp);
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return readmit_grants(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (!config_ok)
		return -1;
	return vgpu_remote_task_init(sp);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE && config_ok)
		vgpu_remote_task_exit(sp);
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE && config_ok)
		vgpu_remote_exit(sp, &config);
	return 0;
}
