#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockdir.h"

/* Deepest directory tree a job may leave in its socket directory for the epilog to remove. */
#define REMOVE_DEPTH 8

int vgpu_job_socket_dir(const char *agent_socket_dir, uint32_t jobid, char *out, size_t cap)
{
	const int n = snprintf(out, cap, "%s/" VGPU_JOB_SOCKET_DIR_PREFIX "%u", agent_socket_dir, jobid);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* mkdir -p, each new directory root's 0755 (the umask of slurmstepd must not narrow it). */
static int make_parents(const char *dir, char *err, size_t errlen)
{
	char path[VGPU_SOCKET_PATH_BYTES + 1];
	size_t i;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path) || path[0] != '/')
		return vgpu_fail(err, errlen, VGPU_PLUGSTACK_AGENT_SOCKET_DIR " %s is not an absolute path of at most %d bytes",
				 dir, VGPU_SOCKET_PATH_BYTES);
	for (i = 1;; i++) {
		const char c = path[i];

		if (c != '/' && c != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) == 0) {
			if (chmod(path, 0755) != 0)
				return vgpu_fail(err, errlen, "chmod 0755 %s: %s", path, strerror(errno));
		} else if (errno != EEXIST) {
			return vgpu_fail(err, errlen, "mkdir %s: %s", path, strerror(errno));
		}
		path[i] = c;
		if (c == '\0')
			return 0;
	}
}

/* agent_socket_dir, made if missing and open: a descriptor, or -1 with err when it is not root's alone. */
static int open_root_dir(const char *agent_socket_dir, char *err, size_t errlen)
{
	struct stat st;
	int base;

	if (make_parents(agent_socket_dir, err, errlen) != 0)
		return -1;
	base = open(agent_socket_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (base < 0)
		return vgpu_fail(err, errlen, VGPU_PLUGSTACK_AGENT_SOCKET_DIR " %s: %s", agent_socket_dir, strerror(errno));
	if (fstat(base, &st) != 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		close(base);
		return vgpu_fail(err, errlen,
				 VGPU_PLUGSTACK_AGENT_SOCKET_DIR " %s must be root's and writable by root alone (it is uid %u, "
				 "mode %04o): job users could take each other's socket names",
				 agent_socket_dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	}
	return base;
}

int vgpu_prepare_socket_dir(const char *agent_socket_dir, uint32_t jobid, uid_t uid, gid_t gid,
			    char *err, size_t errlen)
{
	char name[32];
	struct stat st;
	const int base = open_root_dir(agent_socket_dir, err, errlen);

	if (base < 0)
		return -1;
	snprintf(name, sizeof(name), VGPU_JOB_SOCKET_DIR_PREFIX "%u", jobid);
	if (mkdirat(base, name, 0700) == 0) {
		/* root made it inside a directory only root writes: nothing can swap it in between */
		if (fchownat(base, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0
		    || fchmodat(base, name, 0700, 0) != 0) {
			const int e = errno;

			unlinkat(base, name, AT_REMOVEDIR);
			close(base);
			return vgpu_fail(err, errlen, "%s/%s: cannot give it to uid %u: %s", agent_socket_dir, name,
					 (unsigned)uid, strerror(e));
		}
		close(base);
		return 0;
	}
	if (errno != EEXIST) {
		const int e = errno;

		close(base);
		return vgpu_fail(err, errlen, "mkdir %s/%s: %s", agent_socket_dir, name, strerror(e));
	}
	/* another step of the job (or another node of it on this host) made it */
	if (fstatat(base, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid
	    || (st.st_mode & 077) != 0) {
		close(base);
		return vgpu_fail(err, errlen, "%s/%s exists but is not a directory of uid %u with mode 0700",
				 agent_socket_dir, name, (unsigned)uid);
	}
	close(base);
	return 0;
}

/* Empties and removes dir name inside parent; parent stays open. */
static int remove_tree(int parent, const char *name, unsigned depth, char *err, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : vgpu_fail(err, errlen, "%s: %s", name, strerror(errno));
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return vgpu_fail(err, errlen, "%s: %s", name, strerror(errno));
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(fd, de->d_name, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR || depth + 1 > REMOVE_DEPTH)
			rc = vgpu_fail(err, errlen, "%s/%s: %s", name, de->d_name, strerror(errno));
		else
			rc = remove_tree(fd, de->d_name, depth + 1, err, errlen);
	}
	closedir(d);
	if (rc == 0 && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = vgpu_fail(err, errlen, "rmdir %s: %s", name, strerror(errno));
	return rc;
}

int vgpu_remove_socket_dir(const char *agent_socket_dir, uint32_t jobid, char *err, size_t errlen)
{
	char name[32];
	int base, rc;

	base = open(agent_socket_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (base < 0)
		return errno == ENOENT ? 0 : vgpu_fail(err, errlen, "%s: %s", agent_socket_dir, strerror(errno));
	snprintf(name, sizeof(name), VGPU_JOB_SOCKET_DIR_PREFIX "%u", jobid);
	rc = remove_tree(base, name, 0, err, errlen);
	close(base);
	return rc;
}

/* agent_socket_dir/grants, root's 0700, open; -1 with err. */
static int open_grants_dir(const char *agent_socket_dir, int create, char *err, size_t errlen)
{
	struct stat st;
	const int base = open_root_dir(agent_socket_dir, err, errlen);
	int fd;

	if (base < 0)
		return -1;
	if (create && mkdirat(base, VGPU_GRANTS_DIR, 0700) != 0 && errno != EEXIST) {
		const int e = errno;

		close(base);
		return vgpu_fail(err, errlen, "mkdir %s/" VGPU_GRANTS_DIR ": %s", agent_socket_dir, strerror(e));
	}
	fd = openat(base, VGPU_GRANTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(base);
	if (fd < 0)
		return vgpu_fail(err, errlen, "%s/" VGPU_GRANTS_DIR ": %s", agent_socket_dir, strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_uid != 0 || (st.st_mode & 077) != 0) {
		close(fd);
		return vgpu_fail(err, errlen, "%s/" VGPU_GRANTS_DIR " must be root's, mode 0700", agent_socket_dir);
	}
	return fd;
}

int vgpu_grant_record_write(const char *agent_socket_dir, uint32_t job, uint32_t holder, unsigned major,
			    unsigned minor, char *err, size_t errlen)
{
	char name[32], text[32];
	const int dir = open_grants_dir(agent_socket_dir, 1, err, errlen);
	int fd, n;

	if (dir < 0)
		return -1;
	snprintf(name, sizeof(name), "%u-%u", job, holder);
	fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dir);
	if (fd < 0)
		return vgpu_fail(err, errlen, "grant record %s: %s", name, strerror(errno));
	n = snprintf(text, sizeof(text), "%u %u\n", major, minor);
	if (write(fd, text, (size_t)n) != n) {
		close(fd);
		return vgpu_fail(err, errlen, "grant record %s: %s", name, strerror(errno));
	}
	return close(fd) == 0 ? 0 : vgpu_fail(err, errlen, "grant record %s: %s", name, strerror(errno));
}

int vgpu_grant_record_remove(const char *agent_socket_dir, uint32_t job, uint32_t holder, char *err,
			     size_t errlen)
{
	char name[32], path[PATH_MAX];
	struct stat st;
	int dir, rc = 0;

	snprintf(path, sizeof(path), "%s/" VGPU_GRANTS_DIR, agent_socket_dir);
	if (lstat(path, &st) != 0 && errno == ENOENT)
		return 0;	/* no grants directory, no record */
	dir = open_grants_dir(agent_socket_dir, 0, err, errlen);
	if (dir < 0)
		return -1;
	snprintf(name, sizeof(name), "%u-%u", job, holder);
	if (unlinkat(dir, name, 0) != 0 && errno != ENOENT)
		rc = vgpu_fail(err, errlen, "grant record %s: %s", name, strerror(errno));
	close(dir);
	return rc;
}

int vgpu_grant_records(const char *agent_socket_dir, uint32_t job,
		       int (*found)(unsigned major, unsigned minor, void *ctx), void *ctx)
{
	char prefix[16], path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/" VGPU_GRANTS_DIR, agent_socket_dir);
	d = opendir(path);
	if (d == NULL)
		return 0;
	snprintf(prefix, sizeof(prefix), "%u-", job);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char text[32];
		struct stat st;
		unsigned major, minor;
		char extra;
		ssize_t n;
		int fd;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* only root writes records: anything else is not one */
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
			close(fd);
			continue;
		}
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n <= 0)
			continue;
		text[n] = '\0';
		if (sscanf(text, "%u %u%c", &major, &minor, &extra) == 3 && extra == '\n')
			rc = found(major, minor, ctx);
	}
	closedir(d);
	return rc;
}

void vgpu_grant_records_clear(const char *agent_socket_dir, uint32_t job)
{
	char prefix[16], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/" VGPU_GRANTS_DIR, agent_socket_dir);
	d = opendir(path);
	if (d == NULL)
		return;
	snprintf(prefix, sizeof(prefix), "%u-", job);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}
