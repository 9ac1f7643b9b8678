#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"

int vgpu_char_device(const char *file, struct vgpu_device *dev, char *err, size_t errlen)
{
	struct stat st;

	if (stat(file, &st) != 0)
		return vgpu_fail(err, errlen, "%s: %s", file, strerror(errno));
	if (!S_ISCHR(st.st_mode))
		return vgpu_fail(err, errlen, "%s is not a character device", file);
	dev->major = major(st.st_rdev);
	dev->minor = minor(st.st_rdev);
	return 0;
}

/* ---- mounts ---- */

static int has_option(const char *options, const char *want)
{
	const size_t wl = strlen(want);
	const char *p = options;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		const size_t l = comma == NULL ? strlen(p) : (size_t)(comma - p);

		if (l == wl && strncmp(p, want, wl) == 0)
			return 1;
		p = comma == NULL ? NULL : comma + 1;
	}
	return 0;
}

/* The devices controller's v1 mount (into v1) and the first cgroup2 mount (into v2), "" for none. */
static void scan_mounts(const char *mounts, char *v1, char *v2, size_t cap)
{
	char line[1024];
	FILE *f = fopen(mounts, "re");

	v1[0] = '\0';
	v2[0] = '\0';
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char dev[256], dir[512], type[64], options[512];

		/* \040 and friends: a mount point with blanks is not Slurm's */
		if (sscanf(line, "%255s %511s %63s %511s", dev, dir, type, options) != 4 || strchr(dir, '\\') != NULL
		    || strlen(dir) >= cap)
			continue;
		if (strcmp(type, "cgroup") == 0 && has_option(options, "devices") && v1[0] == '\0')
			snprintf(v1, cap, "%s", dir);
		else if (strcmp(type, "cgroup2") == 0 && v2[0] == '\0')
			snprintf(v2, cap, "%s", dir);
	}
	fclose(f);
}

enum vgpu_cgroup_kind vgpu_find_devices_cgroup(const char *mounts, char *mount, size_t cap)
{
	char v1[PATH_MAX], v2[PATH_MAX];

	scan_mounts(mounts, v1, v2, sizeof(v1) < cap ? sizeof(v1) : cap);
	snprintf(mount, cap, "%s", v1[0] != '\0' ? v1 : v2);
	return v1[0] != '\0' ? VGPU_CGROUP_V1 : v2[0] != '\0' ? VGPU_CGROUP_V2 : VGPU_CGROUP_NONE;
}

int vgpu_find_cgroup2(const char *mounts, char *mount, size_t cap)
{
	char v1[PATH_MAX], v2[PATH_MAX];

	scan_mounts(mounts, v1, v2, sizeof(v2) < cap ? sizeof(v2) : cap);
	if (v2[0] == '\0')
		return -1;
	snprintf(mount, cap, "%s", v2);
	return 0;
}

/* ---- a job's cgroup, and the walk below it ---- */

int vgpu_first_cgroup(const char *first, const char *second, char *dir, size_t cap, char *err, size_t errlen)
{
	const char *const candidates[] = { first, second };
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct stat st;

		if (strlen(candidates[k]) >= cap)
			return vgpu_fail(err, errlen, "cgroup path too long");
		snprintf(dir, cap, "%s", candidates[k]);
		if (lstat(dir, &st) == 0)
			return S_ISDIR(st.st_mode) ? 0 : vgpu_fail(err, errlen, "%s is not a directory", dir);
		if (errno != ENOENT)
			return vgpu_fail(err, errlen, "%s: %s", dir, strerror(errno));
	}
	return 1;
}

typedef int (*cgroup_visitor)(int fd, const char *where, void *ctx, char *err, size_t errlen);

/* dirfd is owned by the call (closed before return). */
static int walk_tree(int dirfd, const char *where, unsigned depth, cgroup_visitor visit, void *ctx, char *err,
		     size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int rc;

	rc = visit(dirfd, where, ctx, err, errlen);
	if (rc != 0) {
		close(dirfd);
		return rc;
	}
	d = fdopendir(dirfd);
	if (d == NULL) {
		close(dirfd);
		return vgpu_fail(err, errlen, "%s: %s", where, strerror(errno));
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char below[PATH_MAX];
		int child;

		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (depth + 1 > VGPU_CGROUP_DEPTH) {
			rc = vgpu_fail(err, errlen, "%s: cgroups nested deeper than %d levels", where,
				       VGPU_CGROUP_DEPTH);
			break;
		}
		snprintf(below, sizeof(below), "%s/%s", where, de->d_name);
		child = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0) {
			/* a step that ended while we walked: its cgroup is gone, nothing to do */
			if (errno == ENOENT)
				continue;
			rc = vgpu_fail(err, errlen, "%s: %s", below, strerror(errno));
			break;
		}
		rc = walk_tree(child, below, depth + 1, visit, ctx, err, errlen);
	}
	closedir(d);
	return rc;
}

int vgpu_cgroup_walk(const char *dir, cgroup_visitor visit, void *ctx, char *err, size_t errlen)
{
	const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return vgpu_fail(err, errlen, "%s: %s", dir, strerror(errno));
	return walk_tree(fd, dir, 0, visit, ctx, err, errlen);
}

