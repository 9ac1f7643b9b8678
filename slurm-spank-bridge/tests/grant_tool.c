/*
 * The grant code of the bridge's job prolog/epilog and of a later step's task (src/grant.c,
 * src/cgroup2.c), without Slurm, for tests/cgroup-v1-test.sh and tests/cgroup-v2-test.sh on a
 * real cgroup file system:
 *   grant_tool mount | cgroup2          the v1 devices controller's | the cgroup2 mount point
 *   grant_tool [--cgroup2 ROOT] admit|drop NODE UID JOB GRES_CONF INDEX [RECORDS_DIR HOLDER]
 *       what a grant holder's prolog|epilog does once it has validated the holder (with
 *       RECORDS_DIR: also its grant record, for the job's later steps)
 *   grant_tool [--cgroup2 ROOT] readmit NODE UID JOB RECORDS_DIR
 *       what a task of the job's later step does (the grants the records name, again)
 *   grant_tool slurm-like CGROUP override|none|multi OWN_MINOR [DENIED_MINOR...]
 *       attaches a device program of the shape Slurm's cgroup/v2 plugin attaches (rules, then a
 *       default verdict: c 195:OWN_MINOR allowed, each c 195:DENIED_MINOR (the node's other GPUs)
 *       denied, everything else allowed) with BPF_F_ALLOW_OVERRIDE (Slurm's job and step level),
 *       no flag (its tasks') or BPF_F_ALLOW_MULTI (not Slurm's; other tools attach so)
 *   grant_tool programs CGROUP          the names of the device programs attached there
 * --cgroup2 ROOT: Slurm's cgroup/v2 layout under ROOT (the cgroup2 mount point, or a cgroup below
 * it standing in for one) instead of the v1 devices controller; on a hybrid host the bridge itself
 * takes v1, as Slurm does there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup2.h"
#include "grant.h"
#include "sockdir.h"

#define MOUNTS "/proc/self/mounts"

static int usage(void)
{
	fprintf(stderr, "usage: grant_tool mount | cgroup2\n"
		"       grant_tool [--cgroup2 ROOT] admit|drop NODE UID JOB GRES_CONF INDEX [RECORDS_DIR HOLDER]\n"
		"       grant_tool [--cgroup2 ROOT] readmit NODE UID JOB RECORDS_DIR\n"
		"       grant_tool slurm-like CGROUP override|none|multi OWN_MINOR [DENIED_MINOR...]\n"
		"       grant_tool programs CGROUP\n");
	return 2;
}

static long bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* An instruction of the Slurm-like program: its loads read the request in r1. */
static struct bpf_insn op(uint8_t code, uint8_t dst, int16_t off, int32_t imm)
{
	return vgpu_bpf_insn(code, dst, BPF_CLASS(code) == BPF_LDX ? BPF_REG_1 : 0, off, imm);
}

/* Slurm's rule shape: c 195:minor gets verdict; anything else goes on to the next rule (3 on). */
static size_t rule(struct bpf_insn *p, size_t n, unsigned minor, int verdict)
{
	p[n++] = op(BPF_JMP | BPF_JNE | BPF_K, 2, 4, BPF_DEVCG_DEV_CHAR);
	p[n++] = op(BPF_JMP | BPF_JNE | BPF_K, 4, 3, 195);
	p[n++] = op(BPF_JMP | BPF_JNE | BPF_K, 5, 2, (int32_t)minor);
	p[n++] = op(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, verdict);
	p[n++] = op(BPF_JMP | BPF_EXIT, 0, 0, 0);
	return n;
}

static int slurm_like(const char *cgroup, const char *mode, char **minors, int count)
{
	struct bpf_insn prog[4 + 5 * 16 + 2];
	union bpf_attr attr;
	size_t n = 0;
	int fd, dir, k;

	if (count < 1 || count > 16)
		return usage();
	/* r2 = device type, r4 = major, r5 = minor */
	prog[n++] = op(BPF_LDX | BPF_MEM | BPF_W, 2, 0, 0);
	prog[n++] = op(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0xffff);
	prog[n++] = op(BPF_LDX | BPF_MEM | BPF_W, 4, 4, 0);
	prog[n++] = op(BPF_LDX | BPF_MEM | BPF_W, 5, 8, 0);
	/* the job's own GPU allowed, the node's other GPUs denied, everything else allowed */
	for (k = 0; k < count; k++)
		n = rule(prog, n, (unsigned)strtoul(minors[k], NULL, 10), k == 0);
	prog[n++] = op(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 1);
	prog[n++] = op(BPF_JMP | BPF_EXIT, 0, 0, 0);

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = (uint32_t)n;
	attr.license = (uint64_t)(uintptr_t)"GPL";
	snprintf(attr.prog_name, sizeof(attr.prog_name), "slurm_like");
	fd = (int)bpf(BPF_PROG_LOAD, &attr);
	if (fd < 0) {
		fprintf(stderr, "grant_tool: loading the Slurm-like program: %s\n", strerror(errno));
		return 1;
	}
	dir = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		fprintf(stderr, "grant_tool: %s: %s\n", cgroup, strerror(errno));
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)dir;
	attr.attach_bpf_fd = (uint32_t)fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = strcmp(mode, "override") == 0 ? BPF_F_ALLOW_OVERRIDE
			    : strcmp(mode, "multi") == 0 ? BPF_F_ALLOW_MULTI : 0;
	if (bpf(BPF_PROG_ATTACH, &attr) != 0) {
		fprintf(stderr, "grant_tool: attaching to %s: %s\n", cgroup, strerror(errno));
		return 1;
	}
	close(dir);
	close(fd);
	return 0;
}

static int programs(const char *cgroup)
{
	uint32_t ids[64], k;
	union bpf_attr attr;
	const int dir = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dir < 0) {
		fprintf(stderr, "grant_tool: %s: %s\n", cgroup, strerror(errno));
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)dir;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
	attr.query.prog_cnt = 64;
	if (bpf(BPF_PROG_QUERY, &attr) != 0) {
		fprintf(stderr, "grant_tool: querying %s: %s\n", cgroup, strerror(errno));
		return 1;
	}
	close(dir);
	for (k = 0; k < attr.query.prog_cnt; k++) {
		struct bpf_prog_info info;
		union bpf_attr get;
		int fd;

		memset(&get, 0, sizeof(get));
		get.prog_id = ids[k];
		fd = (int)bpf(BPF_PROG_GET_FD_BY_ID, &get);
		memset(&info, 0, sizeof(info));
		memset(&get, 0, sizeof(get));
		get.info.bpf_fd = (uint32_t)fd;
		get.info.info_len = sizeof(info);
		get.info.info = (uint64_t)(uintptr_t)&info;
		if (fd < 0 || bpf(BPF_OBJ_GET_INFO_BY_FD, &get) != 0) {
			fprintf(stderr, "grant_tool: program %u: %s\n", ids[k], strerror(errno));
			return 1;
		}
		close(fd);
		printf("%.16s\n", info.name);
	}
	return 0;
}

static int find_root(const char *cgroup2, struct vgpu_cgroup_root *root)
{
	if (cgroup2 != NULL) {
		root->kind = VGPU_CGROUP_V2;
		snprintf(root->mount, sizeof(root->mount), "%s", cgroup2);
		return 0;
	}
	root->kind = vgpu_find_devices_cgroup(MOUNTS, root->mount, sizeof(root->mount));
	if (root->kind == VGPU_CGROUP_V1)
		return 0;
	fprintf(stderr, "grant_tool: no cgroup v1 devices controller mounted\n");
	return -1;
}

static int job_cgroup(const struct vgpu_cgroup_root *root, char **argv, char *dir, size_t cap)
{
	char err[VGPU_ERR_MAX];
	const int rc = vgpu_job_cgroup(root, argv[0], (uid_t)strtoul(argv[1], NULL, 10),
				       (uint32_t)strtoul(argv[2], NULL, 10), dir, cap, err, sizeof(err));

	if (rc == 1)
		fprintf(stderr, "grant_tool: job %s has no devices cgroup: its devices are not constrained\n",
			argv[2]);
	else if (rc < 0)
		fprintf(stderr, "grant_tool: %s\n", err);
	return rc;
}

int main(int argc, char **argv)
{
	char mount[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], err[VGPU_ERR_MAX];
	struct vgpu_cgroup_root root;
	struct vgpu_device dev;
	unsigned count = 0;
	const char *cgroup2 = NULL;
	int admit, rc;

	if (argc == 2 && strcmp(argv[1], "mount") == 0) {
		if (vgpu_find_devices_cgroup(MOUNTS, mount, sizeof(mount)) != VGPU_CGROUP_V1) {
			fprintf(stderr, "grant_tool: no cgroup v1 devices controller mounted\n");
			return 1;
		}
		puts(mount);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "cgroup2") == 0) {
		if (vgpu_find_cgroup2(MOUNTS, mount, sizeof(mount)) != 0) {
			fprintf(stderr, "grant_tool: no cgroup2 file system mounted\n");
			return 1;
		}
		puts(mount);
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "slurm-like") == 0)
		return slurm_like(argv[2], argv[3], argv + 4, argc - 4);
	if (argc == 3 && strcmp(argv[1], "programs") == 0)
		return programs(argv[2]);
	if (argc > 2 && strcmp(argv[1], "--cgroup2") == 0) {
		cgroup2 = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc == 6 && strcmp(argv[1], "readmit") == 0) {
		if (find_root(cgroup2, &root) != 0)
			return 1;
		rc = job_cgroup(&root, argv + 2, dir, sizeof(dir));
		if (rc == 0)
			rc = vgpu_readmit_grants(&root, dir, argv[5], (uint32_t)strtoul(argv[4], NULL, 10), &count,
						 err, sizeof(err));
		if (rc < 0)
			fprintf(stderr, "grant_tool: %s\n", err);
		else if (rc == 0)
			printf("readmitted %u granted device(s) into %s\n", count, dir);
		return rc == 0 ? 0 : 1;
	}
	if ((argc != 7 && argc != 9) || (strcmp(argv[1], "admit") != 0 && strcmp(argv[1], "drop") != 0))
		return usage();
	admit = strcmp(argv[1], "admit") == 0;
	if (find_root(cgroup2, &root) != 0)
		return 1;
	rc = vgpu_gres_gpu_file(argv[5], argv[2], (unsigned)strtoul(argv[6], NULL, 10), file, sizeof(file), err,
				sizeof(err));
	if (rc == 0)
		rc = vgpu_char_device(file, &dev, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "grant_tool: %s\n", err);
		return 1;
	}
	/* as the epilog: the job's later steps stop getting the GPU first */
	if (!admit && argc == 9
	    && vgpu_grant_record_remove(argv[7], (uint32_t)strtoul(argv[4], NULL, 10),
					(uint32_t)strtoul(argv[8], NULL, 10), err, sizeof(err)) != 0) {
		fprintf(stderr, "grant_tool: %s\n", err);
		return 1;
	}
	if (job_cgroup(&root, argv + 2, dir, sizeof(dir)) != 0)
		return 1;
	if (vgpu_job_set_device(&root, dir, &dev, admit, &count, err, sizeof(err)) != 0) {
		fprintf(stderr, "grant_tool: %s\n", err);
		return 1;
	}
	if (root.kind == VGPU_CGROUP_V2 && count == 0) {
		printf("job %s has no device program: its devices are not constrained, nothing to %s\n", argv[4],
		       admit ? "admit" : "drop");
		return 0;
	}
	printf("%s GPU %s (%s, c %u:%u) %s %s (%u %s)\n", admit ? "admitted" : "dropped", argv[6], file, dev.major,
	       dev.minor, admit ? "into" : "from", dir, count,
	       root.kind == VGPU_CGROUP_V2 ? "device programs" : "cgroups");
	if (admit && argc == 9
	    && vgpu_grant_record_write(argv[7], (uint32_t)strtoul(argv[4], NULL, 10),
				       (uint32_t)strtoul(argv[8], NULL, 10), dev.major, dev.minor, err,
				       sizeof(err)) != 0) {
		fprintf(stderr, "grant_tool: %s\n", err);
		return 1;
	}
	return 0;
}
