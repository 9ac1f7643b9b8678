#include <stdio.h>
#include <string.h>

#include "protocol.h"
#include "validate.h"

/* One field of a space-separated line, as a pointer and a length. */
struct span {
	const char *p;
	size_t n;
};

static int span_is(struct span s, const char *word)
{
	return strlen(word) == s.n && memcmp(s.p, word, s.n) == 0;
}

/*
 * Every byte printable ASCII, fields separated by exactly one space, none
 * leading or trailing. Anything else (NUL, CR, tabs, UTF-8) is garbage.
 */
static int check_line(const char *line, size_t len, char *err, size_t errlen)
{
	size_t i;

	if (len == 0)
		return vgpu_fail(err, errlen, "empty reply line");
	if (len > VGPU_REPLY_LINE_BYTES)
		return vgpu_fail(err, errlen, "reply line longer than %d bytes", VGPU_REPLY_LINE_BYTES);
	for (i = 0; i < len; i++) {
		const unsigned char c = (unsigned char)line[i];

		if (c < 0x20 || c > 0x7e)
			return vgpu_fail(err, errlen, "reply has a non-printable byte 0x%02x at offset %zu", c, i);
		if (c == ' ' && (i == 0 || i + 1 == len || line[i + 1] == ' '))
			return vgpu_fail(err, errlen, "reply has a stray space at offset %zu", i);
	}
	return 0;
}

/* Next field from *pos; 0 when there is none left. */
static int next_field(const char *line, size_t len, size_t *pos, struct span *out)
{
	size_t start = *pos;
	size_t i = start;

	if (start >= len)
		return 0;
	while (i < len && line[i] != ' ')
		i++;
	out->p = line + start;
	out->n = i - start;
	*pos = i < len ? i + 1 : len;
	return 1;
}

static enum vgpu_reply reason_reply(enum vgpu_reply kind, const char *line, size_t len,
				    size_t pos, char *reason, size_t reasonlen,
				    char *err, size_t errlen)
{
	if (pos >= len) {
		vgpu_fail(err, errlen, "\"%s\" reply without a reason",
			  kind == VGPU_REPLY_WAIT ? VGPU_REPLY_WAIT_WORD : VGPU_REPLY_ERROR_WORD);
		return VGPU_REPLY_BAD;
	}
	vgpu_sanitize(reason, reasonlen, line + pos, len - pos);
	return kind;
}

static int parse_index_list(struct span v, unsigned *out, unsigned *n, char *err, size_t errlen)
{
	size_t i = 0;

	*n = 0;
	while (i < v.n) {
		size_t j = i;
		uint64_t x;
		unsigned k;

		while (j < v.n && v.p[j] != ',')
			j++;
		if (*n == VGPU_VGPUS_MAX)
			return vgpu_fail(err, errlen, "local: more than %d GPUs", VGPU_VGPUS_MAX);
		if (vgpu_parse_uint(v.p + i, j - i, VGPU_GPU_INDEX_MAX, &x) != 0)
			return vgpu_fail(err, errlen, "local: bad GPU index (0..%d) at offset %zu",
					 VGPU_GPU_INDEX_MAX, i);
		for (k = 0; k < *n; k++)
			if (out[k] == x)
				return vgpu_fail(err, errlen, "local: GPU %u listed twice", (unsigned)x);
		out[(*n)++] = (unsigned)x;
		if (j + 1 == v.n)
			return vgpu_fail(err, errlen, "local: trailing comma");
		i = j + 1;
	}
	return 0;
}

/* One "k@host:port#token" entry. */
static int parse_remote(struct span e, struct vgpu_remote *r, char *err, size_t errlen)
{
	const char *at = memchr(e.p, '@', e.n);
	const char *hash;
	const char *colon;
	const char *host;
	size_t hostlen, toklen;
	uint64_t x;

	if (at == NULL)
		return vgpu_fail(err, errlen, "remote: entry without '@'");
	if (vgpu_parse_uint(e.p, (size_t)(at - e.p), VGPU_VGPUS_MAX - 1, &x) != 0)
		return vgpu_fail(err, errlen, "remote: bad vGPU index (0..%d)", VGPU_VGPUS_MAX - 1);
	r->vgpu = (unsigned)x;
	hash = memchr(at, '#', (size_t)(e.p + e.n - at));
	if (hash == NULL)
		return vgpu_fail(err, errlen, "remote: vGPU %u has no '#token'", r->vgpu);
	toklen = (size_t)(e.p + e.n - hash - 1);
	if (vgpu_valid_token(hash + 1, toklen) != 0)
		return vgpu_fail(err, errlen,
				 "remote: vGPU %u: token must be 1..%d bytes of [A-Za-z0-9" VGPU_TOKEN_CHARS "]",
				 r->vgpu, VGPU_TOKEN_BYTES);
	host = at + 1;
	colon = memrchr(host, ':', (size_t)(hash - host));
	if (colon == NULL)
		return vgpu_fail(err, errlen, "remote: vGPU %u: endpoint is not HOST:PORT", r->vgpu);
	hostlen = (size_t)(colon - host);
	if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']') {
		if (vgpu_valid_ipv6(host + 1, hostlen - 2) != 0)
			return vgpu_fail(err, errlen, "remote: vGPU %u: bad IPv6 address", r->vgpu);
	} else if (vgpu_valid_hostname(host, hostlen) != 0) {
		return vgpu_fail(err, errlen, "remote: vGPU %u: bad host name", r->vgpu);
	}
	if (vgpu_parse_uint(colon + 1, (size_t)(hash - colon - 1), 65535, &x) != 0 || x == 0)
		return vgpu_fail(err, errlen, "remote: vGPU %u: bad port (1..65535)", r->vgpu);
	r->port = (unsigned)x;
	memcpy(r->host, host, hostlen);
	r->host[hostlen] = '\0';
	memcpy(r->token, hash + 1, toklen);
	r->token[toklen] = '\0';
	return 0;
}

static int parse_remote_list(struct span v, struct vgpu_assembly *a, char *err, size_t errlen)
{
	size_t i = 0;

	a->nremote = 0;
	while (i < v.n) {
		struct span e;
		size_t j = i;
		unsigned k;

		while (j < v.n && v.p[j] != ',')
			j++;
		if (a->nremote == VGPU_VGPUS_MAX)
			return vgpu_fail(err, errlen, "remote: more than %d entries", VGPU_VGPUS_MAX);
		e.p = v.p + i;
		e.n = j - i;
		if (parse_remote(e, &a->remote[a->nremote], err, errlen) != 0)
			return -1;
		for (k = 0; k < a->nremote; k++)
			if (a->remote[k].vgpu == a->remote[a->nremote].vgpu)
				return vgpu_fail(err, errlen, "remote: vGPU %u listed twice",
						 a->remote[k].vgpu);
		a->nremote++;
		if (j + 1 == v.n)
			return vgpu_fail(err, errlen, "remote: trailing comma");
		i = j + 1;
	}
	return 0;
}

static void sort_remote(struct vgpu_assembly *a)
{
	unsigned i, j;

	/* at most VGPU_VGPUS_MAX entries: insertion sort; struct copies are fine here */
	for (i = 1; i < a->nremote; i++) {
		for (j = i; j > 0 && a->remote[j - 1].vgpu > a->remote[j].vgpu; j--) {
			struct vgpu_remote t = a->remote[j];

			a->remote[j] = a->remote[j - 1];
			a->remote[j - 1] = t;
		}
	}
}

static int check_assembly(struct vgpu_assembly *a, char *err, size_t errlen)
{
	unsigned i;

	if (a->nlocal + a->nremote != a->vgpus)
		return vgpu_fail(err, errlen,
				 "vgpus=%u but %u local and %u remote GPUs listed",
				 a->vgpus, a->nlocal, a->nremote);
	for (i = 0; i < a->nremote; i++)
		if (a->remote[i].vgpu >= a->vgpus)
			return vgpu_fail(err, errlen, "remote: vGPU %u out of range (vgpus=%u)",
					 a->remote[i].vgpu, a->vgpus);
	if (a->window_base == 0 || (a->window_base & (VGPU_WINDOW_ALIGNMENT - 1)) != 0)
		return vgpu_fail(err, errlen, "window_base must be a non-zero multiple of %llu MiB",
				 (unsigned long long)(VGPU_WINDOW_ALIGNMENT >> 20));
	if (a->window_base >= VGPU_ADDRESS_LIMIT
	    || (VGPU_ADDRESS_LIMIT - a->window_base) / VGPU_WINDOW_BYTES < a->vgpus)
		return vgpu_fail(err, errlen,
				 "window_base: %u windows of %llu GiB do not fit below 0x%llx",
				 a->vgpus, (unsigned long long)(VGPU_WINDOW_BYTES >> 30),
				 (unsigned long long)VGPU_ADDRESS_LIMIT);
	sort_remote(a);
	return 0;
}

static int parse_pair(struct span f, struct vgpu_assembly *a, unsigned *seen,
		      char *err, size_t errlen)
{
	static const char *const keys[] = { VGPU_KEY_VGPUS, VGPU_KEY_LOCAL, VGPU_KEY_REMOTE, VGPU_KEY_AGENT_SOCKET,
					     VGPU_KEY_WINDOW_BASE };
	const char *eq = memchr(f.p, '=', f.n);
	struct span key, v;
	unsigned k;
	uint64_t x;
	char shown[40];

	if (eq == NULL || eq == f.p) {
		vgpu_sanitize(shown, sizeof(shown), f.p, f.n);
		return vgpu_fail(err, errlen, "field \"%s\" is not key=value", shown);
	}
	key.p = f.p;
	key.n = (size_t)(eq - f.p);
	v.p = eq + 1;
	v.n = f.n - key.n - 1;
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (span_is(key, keys[k]))
			break;
	if (k == sizeof(keys) / sizeof(keys[0])) {
		vgpu_sanitize(shown, sizeof(shown), key.p, key.n);
		return vgpu_fail(err, errlen, "unknown key \"%s\"", shown);
	}
	if (*seen & (1u << k))
		return vgpu_fail(err, errlen, "key %s given twice", keys[k]);
	*seen |= 1u << k;

	switch (k) {
	case 0:
		if (vgpu_parse_uint(v.p, v.n, VGPU_VGPUS_MAX, &x) != 0 || x == 0)
			return vgpu_fail(err, errlen, "vgpus: expected 1..%d", VGPU_VGPUS_MAX);
		a->vgpus = (unsigned)x;
		return 0;
	case 1:
		return parse_index_list(v, a->local, &a->nlocal, err, errlen);
	case 2:
		return parse_remote_list(v, a, err, errlen);
	case 3:
		if (vgpu_valid_socket_path(v.p, v.n) != 0)
			return vgpu_fail(err, errlen,
					 "agent_socket: must be absolute, at most %d bytes, of [A-Za-z0-9" VGPU_SOCKET_PATH_CHARS "], no . or .. components",
					 VGPU_SOCKET_PATH_BYTES);
		memcpy(a->agent_socket, v.p, v.n);
		a->agent_socket[v.n] = '\0';
		a->has_agent_socket = 1;
		return 0;
	default:
		if (vgpu_parse_hex64(v.p, v.n, &a->window_base) != 0)
			return vgpu_fail(err, errlen, "window_base: expected 0x and 1..16 hex digits");
		return 0;
	}
}

enum vgpu_reply vgpu_parse_assembly_reply(const char *line, size_t len, struct vgpu_assembly *a,
					  char *reason, size_t reasonlen,
					  char *err, size_t errlen)
{
	struct span f = { NULL, 0 };
	size_t pos = 0;
	unsigned seen = 0;

	memset(a, 0, sizeof(*a));
	a->window_base = VGPU_WINDOW_BASE_DEFAULT;
	if (reasonlen > 0)
		reason[0] = '\0';
	if (check_line(line, len, err, errlen) != 0)
		return VGPU_REPLY_BAD;
	next_field(line, len, &pos, &f);
	if (span_is(f, VGPU_REPLY_WAIT_WORD))
		return reason_reply(VGPU_REPLY_WAIT, line, len, pos, reason, reasonlen, err, errlen);
	if (span_is(f, VGPU_REPLY_ERROR_WORD))
		return reason_reply(VGPU_REPLY_ERROR, line, len, pos, reason, reasonlen, err, errlen);
	if (!span_is(f, VGPU_REPLY_OK_WORD)) {
		char shown[40];

		vgpu_sanitize(shown, sizeof(shown), f.p, f.n);
		vgpu_fail(err, errlen, "reply starts with \"%s\", not ok, wait or error", shown);
		return VGPU_REPLY_BAD;
	}
	while (next_field(line, len, &pos, &f))
		if (parse_pair(f, a, &seen, err, errlen) != 0)
			return VGPU_REPLY_BAD;
	if (!(seen & 1u)) {
		vgpu_fail(err, errlen, "ok reply without vgpus=");
		return VGPU_REPLY_BAD;
	}
	if (check_assembly(a, err, errlen) != 0)
		return VGPU_REPLY_BAD;
	return VGPU_REPLY_OK;
}

enum vgpu_reply vgpu_parse_done_reply(const char *line, size_t len, char *reason,
				      size_t reasonlen, char *err, size_t errlen)
{
	struct span f = { NULL, 0 };
	size_t pos = 0;

	if (reasonlen > 0)
		reason[0] = '\0';
	if (check_line(line, len, err, errlen) != 0)
		return VGPU_REPLY_BAD;
	next_field(line, len, &pos, &f);
	if (span_is(f, VGPU_REPLY_OK_WORD) && pos >= len)
		return VGPU_REPLY_OK;
	if (span_is(f, VGPU_REPLY_ERROR_WORD))
		return reason_reply(VGPU_REPLY_ERROR, line, len, pos, reason, reasonlen, err, errlen);
	vgpu_fail(err, errlen, "reply to done is neither \"ok\" nor \"error <reason>\"");
	return VGPU_REPLY_BAD;
}

int vgpu_format_assembly_request(char *buf, size_t cap, uint32_t jobid, const char *node,
				 char *err, size_t errlen)
{
	int n;

	if (jobid == 0)
		return vgpu_fail(err, errlen, "job id 0");
	if (node == NULL || vgpu_valid_node(node, strnlen(node, VGPU_NODE_NAME_BYTES + 1)) != 0)
		return vgpu_fail(err, errlen, "node name is not [A-Za-z0-9" VGPU_NODE_CHARS "]{1,%d}", VGPU_NODE_NAME_BYTES);
	n = snprintf(buf, cap, VGPU_REQUEST_ASSEMBLY " %u %s", (unsigned)jobid, node);
	if (n < 0 || (size_t)n >= cap)
		return vgpu_fail(err, errlen, "request does not fit in %zu bytes", cap);
	return n;
}

int vgpu_format_done_request(char *buf, size_t cap, uint32_t jobid, const char *node,
			     int status, char *err, size_t errlen)
{
	int n;

	if (jobid == 0)
		return vgpu_fail(err, errlen, "job id 0");
	if (node == NULL || vgpu_valid_node(node, strnlen(node, VGPU_NODE_NAME_BYTES + 1)) != 0)
		return vgpu_fail(err, errlen, "node name is not [A-Za-z0-9" VGPU_NODE_CHARS "]{1,%d}", VGPU_NODE_NAME_BYTES);
	n = snprintf(buf, cap, VGPU_REQUEST_DONE " %u %s %d", (unsigned)jobid, node, status);
	if (n < 0 || (size_t)n >= cap)
		return vgpu_fail(err, errlen, "request does not fit in %zu bytes", cap);
	return n;
}

/* One tres_per_node entry; adds its vgpu count to *count. */
static int tres_entry(const char *p, size_t n, unsigned *count, char *err, size_t errlen)
{
	uint64_t x;

	if (n > 5 && (memcmp(p, "gres:", 5) == 0 || memcmp(p, "gres/", 5) == 0)) {
		p += 5;
		n -= 5;
	}
	if (n < 4 || memcmp(p, "vgpu", 4) != 0 || (n > 4 && p[4] != ':'))
		return 0;	/* another GRES: not ours */
	if (n == 4) {
		x = 1;
	} else {
		const char *colon = memrchr(p, ':', n);
		const char *last = colon + 1;
		const size_t lastlen = (size_t)(p + n - last);

		if (colon == p + 4 && lastlen > 0 && (last[0] < '0' || last[0] > '9')) {
			x = 1;	/* "vgpu:type" */
		} else if (vgpu_parse_uint(last, lastlen, VGPU_VGPUS_MAX, &x) != 0) {
			return vgpu_fail(err, errlen, "tres_per_node: bad vgpu count");
		}
	}
	if (*count + x > VGPU_VGPUS_MAX)
		return vgpu_fail(err, errlen, "tres_per_node: more than %d vGPUs per node", VGPU_VGPUS_MAX);
	*count += (unsigned)x;
	return 0;
}

int vgpu_count_from_tres(const char *tres, unsigned *count, char *err, size_t errlen)
{
	size_t len, i = 0;

	*count = 0;
	if (tres == NULL)
		return 0;
	len = strnlen(tres, VGPU_LINE_MAX);
	if (len == VGPU_LINE_MAX)
		return vgpu_fail(err, errlen, "tres_per_node longer than %d bytes", VGPU_LINE_MAX - 1);
	while (i < len) {
		size_t j = i;

		while (j < len && tres[j] != ',')
			j++;
		if (tres_entry(tres + i, j - i, count, err, errlen) != 0)
			return -1;
		i = j + 1;
	}
	return 0;
}

int vgpu_local_only_assembly(unsigned n, const char *visible, struct vgpu_assembly *a,
			     char *err, size_t errlen)
{
	unsigned gpus[VGPU_VGPUS_MAX];
	unsigned have = 0;
	struct span v;
	char why[VGPU_ERR_MAX];

	memset(a, 0, sizeof(*a));
	if (n == 0 || n > VGPU_VGPUS_MAX)
		return vgpu_fail(err, errlen, "vGPU count %u out of range", n);
	if (visible == NULL)
		visible = "";
	v.p = visible;
	v.n = strnlen(visible, VGPU_LINE_MAX);
	if (v.n == VGPU_LINE_MAX || parse_index_list(v, gpus, &have, why, sizeof(why)) != 0)
		return vgpu_fail(err, errlen,
				 "CUDA_VISIBLE_DEVICES is not a list of GPU indices");
	if (have < n)
		return vgpu_fail(err, errlen, "the job's allocation has %u local GPU(s), it needs %u",
				 have, n);
	a->vgpus = n;
	a->nlocal = n;
	memcpy(a->local, gpus, n * sizeof(gpus[0]));
	a->window_base = VGPU_WINDOW_BASE_DEFAULT;
	return 0;
}
