#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup2.h"
#include "common.h"
#include "validate.h"

/* ---- Slurm's layout ---- */

int vgpu_job_cgroup2(const char *mount, const char *node, uint32_t job, char *dir, size_t cap, char *err,
		     size_t errlen)
{
	char several[PATH_MAX], one[PATH_MAX];

	if (vgpu_valid_node(node, strnlen(node, VGPU_NODE_NAME_BYTES + 1)) != 0)
		return vgpu_fail(err, errlen, "bad node name");
	/* <node>_slurmstepd.scope where slurmd is built for several per host, else slurmstepd.scope */
	if (snprintf(several, sizeof(several), "%s/system.slice/%s_slurmstepd.scope/job_%u", mount, node, job)
	    >= (int)sizeof(several))
		return vgpu_fail(err, errlen, "cgroup path too long");
	snprintf(one, sizeof(one), "%s/system.slice/slurmstepd.scope/job_%u", mount, job);
	return vgpu_first_cgroup(several, one, dir, cap, err, errlen);
}

/* ---- the program ---- */

struct bpf_insn vgpu_bpf_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i;

	memset(&i, 0, sizeof(i));
	i.code = code;
	i.dst_reg = dst & 0xf;
	i.src_reg = src & 0xf;
	i.off = off;
	i.imm = imm;
	return i;
}

/*
 * The verdict of the wrapped program is reached at index VGPU_GRANT_CHECK_INSNS - 1 (it puts the
 * context back into r1); a jump at index i with offset o lands on i + 1 + o.
 */
#define TO_WRAPPED(i) ((int16_t)(VGPU_GRANT_CHECK_INSNS - 1 - (i) - 1))

size_t vgpu_grant_check_insns(struct bpf_insn *out, int map_fd)
{
	size_t n = 0;

	/* r6 keeps the request (struct bpf_cgroup_dev_ctx) across the map lookup */
	out[n++] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0);
	/* access_type: device type in the low 16 bits, access (mknod, read, write) in the high ones */
	out[n++] = vgpu_bpf_insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_6, 0, 0);
	out[n++] = vgpu_bpf_insn(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_2, 0, 0);
	out[n++] = vgpu_bpf_insn(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
	/* a grant is read and write, as "c MAJOR:MINOR rw" on cgroup v1: mknod is the job's own rules' */
	out[n++] = vgpu_bpf_insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_3, 0, 0, BPF_DEVCG_ACC_MKNOD);
	out[n] = vgpu_bpf_insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, TO_WRAPPED(n), 0);
	n++;
	out[n++] = vgpu_bpf_insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
	out[n] = vgpu_bpf_insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, TO_WRAPPED(n), BPF_DEVCG_DEV_CHAR);
	n++;
	/* key {major, minor} on the stack */
	out[n++] = vgpu_bpf_insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_6, 4, 0);
	out[n++] = vgpu_bpf_insn(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_2, -8, 0);
	out[n++] = vgpu_bpf_insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_6, 8, 0);
	out[n++] = vgpu_bpf_insn(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_2, -4, 0);
	/* r0 = bpf_map_lookup_elem(grants, &key) */
	out[n++] = vgpu_bpf_insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd);
	out[n++] = vgpu_bpf_insn(0, 0, 0, 0, 0);
	out[n++] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
	out[n++] = vgpu_bpf_insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -8);
	out[n++] = vgpu_bpf_insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	out[n] = vgpu_bpf_insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, TO_WRAPPED(n), 0);
	n++;
	out[n++] = vgpu_bpf_insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_0, BPF_REG_0, 0, 0);
	out[n] = vgpu_bpf_insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, TO_WRAPPED(n), 0);
	n++;
	/* granted: allow */
	out[n++] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
	out[n++] = vgpu_bpf_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	/* not granted: the wrapped program decides, from its first instruction, as it always did */
	out[n++] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0);
	return n;
}

int vgpu_wrappable_insns(const struct bpf_insn *insns, size_t n, char *err, size_t errlen)
{
	size_t i;

	if (n == 0)
		return vgpu_fail(err, errlen, "the program has no instructions to copy");
	if (n > VGPU_WRAPPED_INSNS_MAX)
		return vgpu_fail(err, errlen, "the program has %zu instructions, more than %d", n,
				 VGPU_WRAPPED_INSNS_MAX);
	for (i = 0; i < n; i++) {
		const uint8_t cls = BPF_CLASS(insns[i].code);

		if (insns[i].dst_reg > BPF_REG_10 || insns[i].src_reg > BPF_REG_10)
			return vgpu_fail(err, errlen, "instruction %zu uses a register only the kernel uses "
					 "(constant blinding: net.core.bpf_jit_harden)", i);
		if (cls == BPF_LD)
			return vgpu_fail(err, errlen, "instruction %zu loads a map or 64-bit constant: not a "
					 "self-contained device program like Slurm's", i);
		if ((cls == BPF_JMP || cls == BPF_JMP32) && BPF_OP(insns[i].code) == BPF_CALL)
			return vgpu_fail(err, errlen, "instruction %zu calls a helper or function: not a "
					 "self-contained device program like Slurm's", i);
	}
	return 0;
}

/* ---- the bpf() system call ---- */

static int bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static uint64_t ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

struct grant_key {
	uint32_t major;
	uint32_t minor;
};

static int create_grants_map(char *err, size_t errlen)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_HASH;
	attr.key_size = sizeof(struct grant_key);
	attr.value_size = sizeof(uint32_t);
	attr.max_entries = VGPU_GRANTS_MAX;
	snprintf(attr.map_name, sizeof(attr.map_name), "%s", VGPU_GRANTS_PROG_NAME);
	fd = bpf(BPF_MAP_CREATE, &attr);
	if (fd < 0)
		return vgpu_fail(err, errlen, "creating the grants map: %s", strerror(errno));
	return fd;
}

static int set_grant(int map_fd, const struct vgpu_device *dev, int allow, char *err, size_t errlen)
{
	const struct grant_key key = { dev->major, dev->minor };
	const uint32_t granted = 1;
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)map_fd;
	attr.key = ptr(&key);
	if (allow) {
		attr.value = ptr(&granted);
		attr.flags = BPF_ANY;
		if (bpf(BPF_MAP_UPDATE_ELEM, &attr) != 0)
			return vgpu_fail(err, errlen, "granting c %u:%u in the grants map: %s", dev->major,
					 dev->minor, strerror(errno));
		return 0;
	}
	if (bpf(BPF_MAP_DELETE_ELEM, &attr) != 0 && errno != ENOENT)
		return vgpu_fail(err, errlen, "taking c %u:%u out of the grants map: %s", dev->major, dev->minor,
				 strerror(errno));
	return 0;
}

/* A program's name and maps; with insns (allocated, n in *count) when count is not NULL. */
static int prog_info(int fd, struct bpf_prog_info *info, uint32_t *map_id, struct bpf_insn **insns,
		     size_t *count, char *err, size_t errlen)
{
	union bpf_attr attr;

	memset(info, 0, sizeof(*info));
	info->nr_map_ids = 1;
	info->map_ids = ptr(map_id);
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)fd;
	attr.info.info_len = sizeof(*info);
	attr.info.info = ptr(info);
	if (bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) != 0)
		return vgpu_fail(err, errlen, "reading a device program's information: %s", strerror(errno));
	if (count == NULL)
		return 0;
	*count = info->xlated_prog_len / sizeof(struct bpf_insn);
	if (*count == 0 || *count > VGPU_WRAPPED_INSNS_MAX)
		return vgpu_fail(err, errlen, "device program %u: %zu instructions readable (root may read "
				 "them; at most %d are copied)", info->id, *count, VGPU_WRAPPED_INSNS_MAX);
	*insns = calloc(*count, sizeof(struct bpf_insn));
	if (*insns == NULL)
		return vgpu_fail(err, errlen, "out of memory");
	memset(info, 0, sizeof(*info));
	info->xlated_prog_len = (uint32_t)(*count * sizeof(struct bpf_insn));
	info->xlated_prog_insns = ptr(*insns);
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)fd;
	attr.info.info_len = sizeof(*info);
	attr.info.info = ptr(info);
	if (bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) != 0
	    || info->xlated_prog_len != *count * sizeof(struct bpf_insn)) {
		const int e = errno;

		free(*insns);
		*insns = NULL;
		return vgpu_fail(err, errlen, "reading a device program's instructions: %s",
				 e != 0 ? strerror(e) : "it changed size");
	}
	return 0;
}

/* Loads ours around the instructions of the program fd; its fd, or -1 with err. */
static int load_wrapper(int old_fd, int map_fd, const char *where, char *err, size_t errlen)
{
	struct bpf_prog_info info;
	struct bpf_insn *old = NULL, *all;
	union bpf_attr attr;
	uint32_t map_id = 0;
	size_t n = 0;
	int fd;

	if (prog_info(old_fd, &info, &map_id, &old, &n, err, errlen) != 0)
		return -1;
	if (vgpu_wrappable_insns(old, n, err, errlen) != 0) {
		char why[VGPU_ERR_MAX];

		snprintf(why, sizeof(why), "%s", err);
		free(old);
		return vgpu_fail(err, errlen, "%s: device program %u (%.16s): %s", where, info.id, info.name, why);
	}
	all = calloc(VGPU_GRANT_CHECK_INSNS + n, sizeof(struct bpf_insn));
	if (all == NULL) {
		free(old);
		return vgpu_fail(err, errlen, "out of memory");
	}
	vgpu_grant_check_insns(all, map_fd);
	memcpy(all + VGPU_GRANT_CHECK_INSNS, old, n * sizeof(struct bpf_insn));
	free(old);
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = ptr(all);
	attr.insn_cnt = (uint32_t)(VGPU_GRANT_CHECK_INSNS + n);
	attr.license = ptr("GPL");
	snprintf(attr.prog_name, sizeof(attr.prog_name), "%s", VGPU_GRANTS_PROG_NAME);
	fd = bpf(BPF_PROG_LOAD, &attr);
	free(all);
	if (fd < 0)
		return vgpu_fail(err, errlen, "%s: loading the grant program around device program %u: %s", where,
				 info.id, strerror(errno));
	return fd;
}

/* ---- the walk ---- */

enum pass {
	COLLECT,	/* an admission's first pass: find the grants map the job's wrappers share */
	ADMIT,		/* ours get the grant; others are replaced by ours around them */
	DROP,		/* ours lose the grant; others never had it */
};

struct walk {
	const struct vgpu_device *dev;
	enum pass pass;
	int shared_map;		/* the grants map new wrappers use; -1 until found or made */
	unsigned programs;
};

/* Ours replaces old in the cgroup dirfd, keeping its attach flags (and its place among several). */
static int replace(int dirfd, const char *where, int old_fd, uint32_t flags, struct walk *w, char *err,
		   size_t errlen)
{
	union bpf_attr attr;
	const int fd = load_wrapper(old_fd, w->shared_map, where, err, errlen);
	int rc;

	if (fd < 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)dirfd;
	attr.attach_bpf_fd = (uint32_t)fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	/* without BPF_F_ALLOW_MULTI a cgroup holds one program: attaching with its flags replaces it */
	attr.attach_flags = flags;
	if (flags & BPF_F_ALLOW_MULTI) {
		attr.attach_flags |= BPF_F_REPLACE;
		attr.replace_bpf_fd = (uint32_t)old_fd;
	}
	rc = bpf(BPF_PROG_ATTACH, &attr);
	if (rc != 0)
		rc = vgpu_fail(err, errlen, "%s: replacing its device program: %s", where, strerror(errno));
	close(fd);
	return rc;
}

/* One device program of the cgroup dirfd, by id. */
static int visit_program(int dirfd, const char *where, uint32_t id, uint32_t flags, struct walk *w, char *err,
			 size_t errlen)
{
	struct bpf_prog_info info;
	union bpf_attr attr;
	uint32_t map_id = 0;
	int fd, map_fd, rc = 0;

	memset(&attr, 0, sizeof(attr));
	attr.prog_id = id;
	fd = bpf(BPF_PROG_GET_FD_BY_ID, &attr);
	if (fd < 0) {
		/* replaced or detached since the query: the next walk sees what is there now */
		if (errno == ENOENT)
			return 0;
		return vgpu_fail(err, errlen, "%s: device program %u: %s", where, id, strerror(errno));
	}
	if (prog_info(fd, &info, &map_id, NULL, NULL, err, errlen) != 0) {
		close(fd);
		return -1;
	}
	if (strncmp(info.name, VGPU_GRANTS_PROG_NAME, sizeof(info.name)) != 0 || info.nr_map_ids != 1) {
		if (w->pass == ADMIT) {
			rc = replace(dirfd, where, fd, flags, w, err, errlen);
			w->programs += rc == 0;
		}
		close(fd);
		return rc;
	}
	close(fd);
	memset(&attr, 0, sizeof(attr));
	attr.map_id = map_id;
	map_fd = bpf(BPF_MAP_GET_FD_BY_ID, &attr);
	if (map_fd < 0)
		return vgpu_fail(err, errlen, "%s: the grants map of program %u: %s", where, id, strerror(errno));
	if (w->pass == COLLECT) {
		/* kept open for the admission pass */
		if (w->shared_map < 0)
			w->shared_map = map_fd;
		else
			close(map_fd);
		return 0;
	}
	rc = set_grant(map_fd, w->dev, w->pass == ADMIT, err, errlen);
	w->programs += rc == 0;
	if (map_fd != w->shared_map)
		close(map_fd);
	return rc;
}

static int visit_cgroup(int dirfd, const char *where, void *ctx, char *err, size_t errlen)
{
	struct walk *w = ctx;
	uint32_t ids[64];
	union bpf_attr attr;
	uint32_t k;

	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)dirfd;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.prog_ids = ptr(ids);
	attr.query.prog_cnt = sizeof(ids) / sizeof(ids[0]);
	if (bpf(BPF_PROG_QUERY, &attr) != 0)
		return vgpu_fail(err, errlen, "%s: querying its device programs: %s", where, strerror(errno));
	for (k = 0; k < attr.query.prog_cnt; k++)
		if (visit_program(dirfd, where, ids[k], attr.query.attach_flags, w, err, errlen) != 0)
			return -1;
	return 0;
}

int vgpu_cgroup2_set_device(const char *dir, const struct vgpu_device *dev, int allow, unsigned *programs,
			    char *err, size_t errlen)
{
	struct walk w = { dev, allow ? COLLECT : DROP, -1, 0 };
	int rc = 0, lock;

	*programs = 0;
	/*
	 * One admission or drop at a time per job: two holders' prologs (or a prolog and a new step's
	 * tasks) that both replaced the same program would each attach a wrapper with its own map,
	 * and the later one would take the earlier one's grant away. flock on the job's cgroup
	 * directory itself: nothing else to create or clean up, and it goes with the job.
	 */
	lock = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0)
		return vgpu_fail(err, errlen, "%s: %s", dir, strerror(errno));
	if (flock(lock, LOCK_EX) != 0) {
		rc = vgpu_fail(err, errlen, "%s: locking it: %s", dir, strerror(errno));
		close(lock);
		return rc;
	}
	if (allow) {
		/*
		 * First the grants map the job's wrappers share, wherever one is (a step's own program
		 * replaced for an earlier grant); a new one when none is; the grant goes in before any
		 * new wrapper is attached, so each one admits it from its first request on.
		 */
		rc = vgpu_cgroup_walk(dir, visit_cgroup, &w, err, errlen);
		if (rc == 0 && w.shared_map < 0) {
			w.shared_map = create_grants_map(err, errlen);
			rc = w.shared_map < 0 ? -1 : 0;
		}
		if (rc == 0)
			rc = set_grant(w.shared_map, dev, 1, err, errlen);
		w.pass = ADMIT;
	}
	if (rc == 0)
		rc = vgpu_cgroup_walk(dir, visit_cgroup, &w, err, errlen);
	if (w.shared_map >= 0)
		close(w.shared_map);
	close(lock);	/* releases the lock */
	*programs = w.programs;
	return rc;
}
