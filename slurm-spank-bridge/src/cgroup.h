/*
 * What the cgroup v1 code (grant.h) and the cgroup v2 code (cgroup2.h) both stand on: a device's
 * numbers, where a node mounts its cgroups, which of Slurm's two layouts a job's cgroup is in, and a
 * walk over a cgroup and everything below it. Its own file so that grant.c depends on cgroup2.c and
 * both on this, never the other way round. Nothing here depends on Slurm.
 */
#ifndef VGPU_CGROUP_H
#define VGPU_CGROUP_H

#include <stddef.h>

/* A character device: "c MAJOR:MINOR", as devices.allow/deny want it. */
struct vgpu_device {
	unsigned major;
	unsigned minor;
};

/* stat()s file: 0 and its device numbers when it is a character device, -1 with err otherwise. */
int vgpu_char_device(const char *file, struct vgpu_device *dev, char *err, size_t errlen);

enum vgpu_cgroup_kind {
	VGPU_CGROUP_NONE,	/* no cgroup file system: nothing constrains devices */
	VGPU_CGROUP_V1,		/* a cgroup v1 hierarchy with the devices controller */
	VGPU_CGROUP_V2,		/* cgroup v2 only: Slurm constrains devices with eBPF programs (cgroup2.h) */
};

/*
 * Where a node constrains devices: reads a mount table (/proc/self/mounts format). V1 and the
 * devices controller's mount point when there is one (Slurm prefers it on hybrid hosts too); else
 * V2 and the cgroup2 mount point; else NONE (mount empty).
 */
enum vgpu_cgroup_kind vgpu_find_devices_cgroup(const char *mounts, char *mount, size_t cap);

/* The cgroup2 mount point, whatever else is mounted (a hybrid host's unified hierarchy): 0, or -1. */
int vgpu_find_cgroup2(const char *mounts, char *mount, size_t cap);

/*
 * Where Slurm puts a job's cgroup depends on how slurmd was built (one or several per host): dir
 * gets the first of the two candidates that is a directory (not a link), 0; 1 when neither exists;
 * -1 with err (a candidate too long for cap, or one that is there but no directory).
 */
int vgpu_first_cgroup(const char *first, const char *second, char *dir, size_t cap, char *err, size_t errlen);

/*
 * Calls visit(fd, path, ctx, err, errlen) for the cgroup dir and every cgroup below it, parents
 * first, without following links, at most VGPU_CGROUP_DEPTH levels down; a cgroup that goes
 * while the walk runs (a step ending) is skipped. 0, or -1 with err (the first failure, the
 * visitor's or the walk's; the walk stops there).
 */
#define VGPU_CGROUP_DEPTH 6
int vgpu_cgroup_walk(const char *dir, int (*visit)(int fd, const char *where, void *ctx, char *err, size_t errlen),
		     void *ctx, char *err, size_t errlen);

#endif
