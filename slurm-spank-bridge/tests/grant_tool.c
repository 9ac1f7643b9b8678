/*
 * The grant code of the bridge's job prolog/epilog (src/grant.c), without Slurm, for
 * tests/cgroup-v1-test.sh on a real cgroup v1 devices controller:
 *   grant_tool mount                                   the devices controller's mount point
 *   grant_tool admit|drop NODE UID JOB GRES_CONF INDEX  what a grant holder's prolog|epilog does
 *                                                       once it has validated the holder
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"

static int usage(void)
{
	fprintf(stderr, "usage: grant_tool mount | grant_tool admit|drop NODE UID JOB GRES_CONF INDEX\n");
	return 2;
}

int main(int argc, char **argv)
{
	char mount[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], err[VGPU_ERR_MAX];
	struct vgpu_device dev;
	unsigned written = 0;
	int admit, rc;

	if (argc == 2 && strcmp(argv[1], "mount") == 0) {
		if (vgpu_find_devices_cgroup("/proc/self/mounts", mount, sizeof(mount)) != VGPU_CGROUP_V1) {
			fprintf(stderr, "grant_tool: no cgroup v1 devices controller mounted\n");
			return 1;
		}
		puts(mount);
		return 0;
	}
	if (argc != 7 || (strcmp(argv[1], "admit") != 0 && strcmp(argv[1], "drop") != 0))
		return usage();
	admit = strcmp(argv[1], "admit") == 0;
	if (vgpu_find_devices_cgroup("/proc/self/mounts", mount, sizeof(mount)) != VGPU_CGROUP_V1) {
		fprintf(stderr, "grant_tool: no cgroup v1 devices controller mounted\n");
		return 1;
	}
	rc = vgpu_gres_gpu_file(argv[5], argv[2], (unsigned)strtoul(argv[6], NULL, 10), file, sizeof(file), err,
				sizeof(err));
	if (rc == 0)
		rc = vgpu_char_device(file, &dev, err, sizeof(err));
	if (rc == 0)
		rc = vgpu_job_devices_cgroup(mount, argv[2], (uid_t)strtoul(argv[3], NULL, 10),
					     (uint32_t)strtoul(argv[4], NULL, 10), dir, sizeof(dir), err, sizeof(err));
	if (rc == 1) {
		fprintf(stderr, "grant_tool: job %s has no devices cgroup\n", argv[4]);
		return 1;
	}
	if (rc == 0)
		rc = vgpu_cgroup_set_device(dir, &dev, admit, &written, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "grant_tool: %s\n", err);
		return 1;
	}
	printf("%s GPU %s (%s, c %u:%u) %s %s (%u cgroups)\n", admit ? "admitted" : "dropped", argv[6], file,
	       dev.major, dev.minor, admit ? "into" : "from", dir, written);
	return 0;
}
