#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cgroup2.h"
#include "grant.h"
#include "sockdir.h"
#include "validate.h"

/* A gres.conf line Slurm would read; longer ones are refused rather than cut. */
#define GRES_LINE_MAX 4096

int vgpu_parse_grant_name(const char *name, uint32_t *job, unsigned *vgpu, char *err, size_t errlen)
{
	static const char prefix[] = VGPU_GRANT_HOLDER_PREFIX;
	const size_t plen = sizeof(prefix) - 1;
	const char *rest, *sep;
	uint64_t j, v;
	size_t len;

	if (name == NULL || strncmp(name, prefix, plen) != 0)
		return 0;
	len = strnlen(name, VGPU_NODE_NAME_BYTES + 1);
	rest = name + plen;
	sep = strstr(rest, "-v");
	if (len > VGPU_NODE_NAME_BYTES || sep == NULL
	    || vgpu_parse_uint(rest, (size_t)(sep - rest), VGPU_JOB_ID_MAX, &j) != 0 || j == 0
	    || vgpu_parse_uint(sep + 2, strlen(sep + 2), VGPU_VGPUS_MAX - 1, &v) != 0)
		return vgpu_fail(err, errlen,
				 "job name is not " VGPU_GRANT_HOLDER_PREFIX "<job 1..%llu>-v<vGPU 0..%d>",
				 (unsigned long long)VGPU_JOB_ID_MAX, VGPU_VGPUS_MAX - 1);
	*job = (uint32_t)j;
	*vgpu = (unsigned)v;
	return 1;
}

int vgpu_parse_single_gpu(const char *value, unsigned *index, char *err, size_t errlen)
{
	uint64_t v;

	if (value == NULL || value[0] == '\0')
		return vgpu_fail(err, errlen, "the holder was given no GPU (SLURM_JOB_GPUS unset)");
	if (vgpu_parse_uint(value, strnlen(value, 16), VGPU_GPU_INDEX_MAX, &v) != 0) {
		char shown[40];

		vgpu_sanitize(shown, sizeof(shown), value, strnlen(value, 64));
		return vgpu_fail(err, errlen,
				 "a grant holder holds exactly one GPU, index 0..%d; SLURM_JOB_GPUS is \"%s\"",
				 VGPU_GPU_INDEX_MAX, shown);
	}
	*index = (unsigned)v;
	return 0;
}

/* ---- Slurm host list expressions ---- */

struct expansion {
	int (*emit)(const char *item, void *ctx);
	void *ctx;
	unsigned count;
	char *err;
	size_t errlen;
};

static int expand_term(struct expansion *x, char *out, size_t used, const char *term, size_t len);

/* One bracket group's list "0-3,7,09-11" applied to out[0..used) + number + term's rest. */
static int expand_bracket(struct expansion *x, char *out, size_t used, const char *list, size_t listlen,
			  const char *rest, size_t restlen)
{
	size_t i = 0;

	if (listlen == 0 || list[listlen - 1] == ',')
		return vgpu_fail(x->err, x->errlen, "empty range in brackets");
	while (i < listlen) {
		size_t end = i, dash, width;
		uint64_t lo, hi, n;

		while (end < listlen && list[end] != ',')
			end++;
		for (dash = i; dash < end && list[dash] != '-'; dash++)
			;
		width = dash - i;
		/* zero padding is allowed here ("01-10"): parse digit by digit */
		lo = 0;
		hi = 0;
		if (width == 0 || width > 9)
			return vgpu_fail(x->err, x->errlen, "bad range in brackets");
		for (n = i; n < dash; n++) {
			if (!isdigit((unsigned char)list[n]))
				return vgpu_fail(x->err, x->errlen, "bad range in brackets");
			lo = lo * 10 + (uint64_t)(list[n] - '0');
		}
		if (dash == end) {
			hi = lo;
		} else {
			if (end - dash - 1 == 0 || end - dash - 1 > 9)
				return vgpu_fail(x->err, x->errlen, "bad range in brackets");
			for (n = dash + 1; n < end; n++) {
				if (!isdigit((unsigned char)list[n]))
					return vgpu_fail(x->err, x->errlen, "bad range in brackets");
				hi = hi * 10 + (uint64_t)(list[n] - '0');
			}
		}
		if (hi < lo)
			return vgpu_fail(x->err, x->errlen, "bad range in brackets");
		for (n = lo; n <= hi; n++) {
			const int w = snprintf(out + used, PATH_MAX - used, "%0*llu", (int)width, (unsigned long long)n);
			int rc;

			if (w < 0 || (size_t)w >= PATH_MAX - used)
				return vgpu_fail(x->err, x->errlen, "expanded name too long");
			rc = expand_term(x, out, used + (size_t)w, rest, restlen);
			if (rc != 0)
				return rc;
		}
		i = end + 1;
	}
	return 0;
}

static int expand_term(struct expansion *x, char *out, size_t used, const char *term, size_t len)
{
	const char *open = memchr(term, '[', len);
	const char *close;
	size_t head;

	if (open == NULL) {
		if (memchr(term, ']', len) != NULL)
			return vgpu_fail(x->err, x->errlen, "unbalanced brackets");
		if (used + len >= PATH_MAX)
			return vgpu_fail(x->err, x->errlen, "expanded name too long");
		memcpy(out + used, term, len);
		out[used + len] = '\0';
		if (++x->count > VGPU_EXPAND_MAX)
			return vgpu_fail(x->err, x->errlen, "more than %d names", VGPU_EXPAND_MAX);
		return x->emit(out, x->ctx);
	}
	head = (size_t)(open - term);
	close = memchr(open, ']', len - head);
	if (close == NULL || memchr(term, ']', head) != NULL || memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL)
		return vgpu_fail(x->err, x->errlen, "unbalanced brackets");
	if (used + head >= PATH_MAX)
		return vgpu_fail(x->err, x->errlen, "expanded name too long");
	memcpy(out + used, term, head);
	return expand_bracket(x, out, used + head, open + 1, (size_t)(close - open - 1), close + 1,
			      len - (size_t)(close + 1 - term));
}

int vgpu_expand_hostlist(const char *expr, int (*emit)(const char *item, void *ctx), void *ctx,
			 char *err, size_t errlen)
{
	struct expansion x = { emit, ctx, 0, err, errlen };
	char *out;
	size_t len = strlen(expr), i = 0;
	int rc = 0;

	if (len == 0)
		return vgpu_fail(err, errlen, "empty list");
	out = malloc(PATH_MAX);
	if (out == NULL)
		return vgpu_fail(err, errlen, "out of memory");
	while (i <= len && rc == 0) {
		size_t end = i;
		int depth = 0;

		/* a comma inside brackets separates numbers, not names */
		while (end < len && (expr[end] != ',' || depth > 0)) {
			depth += expr[end] == '[' ? 1 : expr[end] == ']' ? -1 : 0;
			end++;
		}
		if (end == i)
			rc = vgpu_fail(err, errlen, "empty name in list");
		else
			rc = expand_term(&x, out, 0, expr + i, end - i);
		i = end + 1;
	}
	free(out);
	return rc;
}

/* ---- gres.conf ---- */

struct node_match {
	const char *node;
	int found;
};

static int match_node(const char *item, void *ctx)
{
	struct node_match *m = ctx;

	if (strcmp(item, m->node) == 0) {
		m->found = 1;
		return 1;
	}
	return 0;
}

struct file_pick {
	unsigned want;
	unsigned seen;
	char *file;
	size_t cap;
};

static int pick_file(const char *item, void *ctx)
{
	struct file_pick *p = ctx;

	if (p->seen++ != p->want)
		return 0;
	snprintf(p->file, p->cap, "%s", item);
	return 1;
}

/* The value of KEY= among the line's words (keys are case-insensitive, as Slurm reads them). */
static const char *word_value(char *const *words, unsigned n, const char *key)
{
	const size_t klen = strlen(key);
	unsigned i;

	for (i = 0; i < n; i++)
		if (strncasecmp(words[i], key, klen) == 0 && words[i][klen] == '=')
			return words[i] + klen + 1;
	return NULL;
}

/* 1 when the line (split into words) is a Name=gpu line for node; -1 with err; 0 otherwise. */
static int gpu_line_for(char *const *words, unsigned n, const char *node, char *err, size_t errlen)
{
	const char *name = word_value(words, n, "Name");
	const char *nodes = word_value(words, n, "NodeName");
	struct node_match m = { node, 0 };
	int rc;

	if (word_value(words, n, "AutoDetect") != NULL && (name == NULL || strcmp(name, "gpu") == 0))
		return vgpu_fail(err, errlen, "AutoDetect= is set: the GPUs' device files are not written "
				 "in gres.conf, so a GPU index cannot be mapped to its device file");
	if (name == NULL || strcmp(name, "gpu") != 0)
		return 0;
	if (nodes == NULL)
		return 1;
	rc = vgpu_expand_hostlist(nodes, match_node, &m, err, errlen);
	if (rc < 0)
		return -1;
	return m.found;
}

int vgpu_gres_gpu_file(const char *path, const char *node, unsigned index, char *file, size_t cap,
		       char *err, size_t errlen)
{
	char why[VGPU_ERR_MAX];
	char *line;
	FILE *f;
	struct file_pick pick = { index, 0, file, cap };
	unsigned lineno = 0;
	int rc = -1;

	f = fopen(path, "re");
	if (f == NULL)
		return vgpu_fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
	line = malloc(GRES_LINE_MAX + 2);
	if (line == NULL) {
		fclose(f);
		return vgpu_fail(err, errlen, "out of memory");
	}
	while (fgets(line, GRES_LINE_MAX + 2, f) != NULL) {
		char *words[32];
		char *save = NULL, *w, *hash;
		const char *files;
		unsigned n = 0;
		int applies;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			vgpu_fail(err, errlen, "%s:%u: line longer than %d bytes", path, lineno, GRES_LINE_MAX);
			goto out;
		}
		hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		for (w = strtok_r(line, " \t\r\n", &save); w != NULL && n < 32; w = strtok_r(NULL, " \t\r\n", &save))
			words[n++] = w;
		if (n == 0)
			continue;
		applies = gpu_line_for(words, n, node, why, sizeof(why));
		if (applies < 0) {
			vgpu_fail(err, errlen, "%s:%u: %s", path, lineno, why);
			goto out;
		}
		if (applies == 0)
			continue;
		files = word_value(words, n, "File");
		if (files == NULL)
			files = word_value(words, n, "Files");
		if (files == NULL) {
			vgpu_fail(err, errlen, "%s:%u: a gpu line for %s without File=: a GPU index cannot be "
				  "mapped to its device file", path, lineno, node);
			goto out;
		}
		rc = vgpu_expand_hostlist(files, pick_file, &pick, why, sizeof(why));
		if (rc < 0) {
			vgpu_fail(err, errlen, "%s:%u: File=%.64s: %s", path, lineno, files, why);
			goto out;
		}
		if (rc == 1) {
			rc = 0;
			goto out;
		}
		rc = -1;
	}
	if (ferror(f))
		vgpu_fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
	else
		vgpu_fail(err, errlen, "%s names %u gpu device file(s) for node %s, none with index %u",
			  path, pick.seen, node, index);
out:
	free(line);
	fclose(f);
	return rc;
}

/* ---- cgroup v1, and the choice between v1 and v2 ---- */

int vgpu_job_devices_cgroup(const char *mount, const char *node, uid_t uid, uint32_t job, char *dir,
			    size_t cap, char *err, size_t errlen)
{
	char several[PATH_MAX], one[PATH_MAX];

	if (vgpu_valid_node(node, strnlen(node, VGPU_NODE_NAME_BYTES + 1)) != 0)
		return vgpu_fail(err, errlen, "bad node name");
	/* slurm_<node> where slurmd is built for several per host (slurmd -N), else slurm */
	if (snprintf(several, sizeof(several), "%s/slurm_%s/uid_%u/job_%u", mount, node, (unsigned)uid, job)
	    >= (int)sizeof(several))
		return vgpu_fail(err, errlen, "cgroup path too long");
	snprintf(one, sizeof(one), "%s/slurm/uid_%u/job_%u", mount, (unsigned)uid, job);
	return vgpu_first_cgroup(several, one, dir, cap, err, errlen);
}

struct v1_rule {
	const char *file;
	char rule[48];
	unsigned written;
};

static int write_rule(int dirfd, const char *where, void *ctx, char *err, size_t errlen)
{
	struct v1_rule *r = ctx;
	const int fd = openat(dirfd, r->file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	const size_t len = strlen(r->rule);
	ssize_t n;

	if (fd < 0)
		return vgpu_fail(err, errlen, "%s/%s: %s", where, r->file, strerror(errno));
	n = write(fd, r->rule, len);
	if (n != (ssize_t)len) {
		const int e = n < 0 ? errno : EIO;

		close(fd);
		return vgpu_fail(err, errlen, "writing \"%s\" to %s/%s: %s", r->rule, where, r->file, strerror(e));
	}
	if (close(fd) != 0)
		return vgpu_fail(err, errlen, "writing \"%s\" to %s/%s: %s", r->rule, where, r->file,
				 strerror(errno));
	r->written++;
	return 0;
}

int vgpu_cgroup_set_device(const char *dir, const struct vgpu_device *dev, int allow, unsigned *written,
			   char *err, size_t errlen)
{
	struct v1_rule r = { allow ? "devices.allow" : "devices.deny", "", 0 };
	int rc;

	snprintf(r.rule, sizeof(r.rule), "c %u:%u %s", dev->major, dev->minor, allow ? "rw" : "rwm");
	rc = vgpu_cgroup_walk(dir, write_rule, &r, err, errlen);
	*written = r.written;
	return rc;
}

int vgpu_job_cgroup(const struct vgpu_cgroup_root *root, const char *node, uid_t uid, uint32_t job, char *dir,
		    size_t cap, char *err, size_t errlen)
{
	switch (root->kind) {
	case VGPU_CGROUP_V1:
		return vgpu_job_devices_cgroup(root->mount, node, uid, job, dir, cap, err, errlen);
	case VGPU_CGROUP_V2:
		return vgpu_job_cgroup2(root->mount, node, job, dir, cap, err, errlen);
	case VGPU_CGROUP_NONE:
	default:
		return 1;
	}
}

int vgpu_job_set_device(const struct vgpu_cgroup_root *root, const char *dir, const struct vgpu_device *dev,
			int allow, unsigned *count, char *err, size_t errlen)
{
	*count = 0;
	if (root->kind == VGPU_CGROUP_V1)
		return vgpu_cgroup_set_device(dir, dev, allow, count, err, errlen);
	if (root->kind == VGPU_CGROUP_V2)
		return vgpu_cgroup2_set_device(dir, dev, allow, count, err, errlen);
	return 0;
}

struct readmission {
	const struct vgpu_cgroup_root *root;
	const char *dir;
	unsigned admitted;
	int failed;
	char *err;
	size_t errlen;
};

static int readmit_one(unsigned major, unsigned minor, void *ctx)
{
	struct readmission *r = ctx;
	const struct vgpu_device dev = { major, minor };
	char why[VGPU_ERR_MAX];
	unsigned count = 0;

	if (vgpu_job_set_device(r->root, r->dir, &dev, 1, &count, why, sizeof(why)) != 0) {
		if (!r->failed)
			vgpu_fail(r->err, r->errlen, "granted device c %u:%u: %s", major, minor, why);
		r->failed = 1;
	} else if (count > 0) {
		r->admitted++;
	}
	return 0;
}

int vgpu_readmit_grants(const struct vgpu_cgroup_root *root, const char *dir, const char *agent_socket_dir,
			uint32_t job, unsigned *admitted, char *err, size_t errlen)
{
	struct readmission r = { root, dir, 0, 0, err, errlen };

	vgpu_grant_records(agent_socket_dir, job, readmit_one, &r);
	*admitted = r.admitted;
	return r.failed ? -1 : 0;
}
