#include <stdio.h>
#include <string.h>

#include "config.h"
#include "validate.h"

#define ARG_MAX_LEN 512

static int parse_tracker(const char *v, size_t vlen, struct vgpu_config *cfg,
			 char *err, size_t errlen)
{
	const char *colon;
	const char *host;
	size_t hostlen;
	uint64_t port;
	const size_t prefix = sizeof(VGPU_TRACKER_UNIX_PREFIX) - 1;

	if (vlen > prefix && memcmp(v, VGPU_TRACKER_UNIX_PREFIX, prefix) == 0) {
		const char *path = v + prefix;

		if (vgpu_valid_socket_path(path, vlen - prefix) != 0)
			return vgpu_fail(err, errlen,
					 "socket path must be absolute, at most %d bytes, of [A-Za-z0-9" VGPU_SOCKET_PATH_CHARS "] and without . or .. components",
					 VGPU_SOCKET_PATH_BYTES);
		cfg->tracker_kind = VGPU_TRACKER_UNIX;
		memcpy(cfg->tracker_path, path, vlen - prefix);
		cfg->tracker_path[vlen - prefix] = '\0';
		return 0;
	}

	colon = memrchr(v, ':', vlen);
	if (colon == NULL)
		return vgpu_fail(err, errlen, "expected HOST:PORT or " VGPU_TRACKER_UNIX_PREFIX "/PATH");
	host = v;
	hostlen = (size_t)(colon - v);
	if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']') {
		host++;
		hostlen -= 2;
		if (vgpu_valid_ipv6(host, hostlen) != 0)
			return vgpu_fail(err, errlen, "bad IPv6 address in brackets");
	} else if (vgpu_valid_hostname(host, hostlen) != 0) {
		return vgpu_fail(err, errlen, "bad host name (letters, digits, '.', '-'; IPv6 in brackets)");
	}
	if (vgpu_parse_uint(colon + 1, (size_t)(v + vlen - colon - 1), 65535, &port) != 0
	    || port == 0)
		return vgpu_fail(err, errlen, "bad port (1..65535)");
	cfg->tracker_kind = VGPU_TRACKER_TCP;
	memcpy(cfg->tracker_host, host, hostlen);
	cfg->tracker_host[hostlen] = '\0';
	snprintf(cfg->tracker_port, sizeof(cfg->tracker_port), "%u", (unsigned)port);
	return 0;
}

static int parse_seconds(const char *v, size_t vlen, unsigned min, unsigned *out,
			 char *err, size_t errlen)
{
	uint64_t n;

	if (vgpu_parse_uint(v, vlen, VGPU_MAX_TIMEOUT_S, &n) != 0 || n < min)
		return vgpu_fail(err, errlen, "expected whole seconds, %u..%d", min, VGPU_MAX_TIMEOUT_S);
	*out = (unsigned)n;
	return 0;
}

/* The arguments' keys (contract/grammar.conf plugstack_*); a bit each in parse_one's seen. */
enum plugstack_key {
	KEY_TRACKER,
	KEY_TIMEOUT,
	KEY_READY_TIMEOUT,
	KEY_FALLBACK,
	KEY_AGENT_SOCKET_DIR,
	KEY_AUTH,
	KEY_MUNGE_SOCKET,
	KEY_LEND_PARTITION,
	KEY_GRES_CONF,
	KEY_COUNT
};

static const char *const keys[KEY_COUNT] = {
	[KEY_TRACKER] = VGPU_PLUGSTACK_TRACKER,
	[KEY_TIMEOUT] = VGPU_PLUGSTACK_TIMEOUT,
	[KEY_READY_TIMEOUT] = VGPU_PLUGSTACK_READY_TIMEOUT,
	[KEY_FALLBACK] = VGPU_PLUGSTACK_FALLBACK,
	[KEY_AGENT_SOCKET_DIR] = VGPU_PLUGSTACK_AGENT_SOCKET_DIR,
	[KEY_AUTH] = VGPU_PLUGSTACK_AUTH,
	[KEY_MUNGE_SOCKET] = VGPU_PLUGSTACK_MUNGE_SOCKET,
	[KEY_LEND_PARTITION] = VGPU_PLUGSTACK_LEND_PARTITION,
	[KEY_GRES_CONF] = VGPU_PLUGSTACK_GRES_CONF,
};

static int parse_one(const char *arg, struct vgpu_config *cfg, unsigned *seen,
		     char *err, size_t errlen)
{
	const size_t len = strnlen(arg, ARG_MAX_LEN + 1);
	const char *eq;
	const char *v;
	size_t klen, vlen;
	unsigned k;

	if (len > ARG_MAX_LEN)
		return vgpu_fail(err, errlen, "argument longer than %d bytes", ARG_MAX_LEN);
	eq = memchr(arg, '=', len);
	if (eq == NULL || eq == arg)
		return vgpu_fail(err, errlen, "expected key=value");
	klen = (size_t)(eq - arg);
	v = eq + 1;
	vlen = len - klen - 1;
	for (k = 0; k < KEY_COUNT; k++)
		if (strlen(keys[k]) == klen && memcmp(keys[k], arg, klen) == 0)
			break;
	if (k == KEY_COUNT)
		return vgpu_fail(err, errlen,
				 "unknown key (known: " VGPU_PLUGSTACK_TRACKER ", " VGPU_PLUGSTACK_TIMEOUT ", "
				 VGPU_PLUGSTACK_READY_TIMEOUT ", " VGPU_PLUGSTACK_FALLBACK ", "
				 VGPU_PLUGSTACK_AGENT_SOCKET_DIR ", " VGPU_PLUGSTACK_AUTH ", " VGPU_PLUGSTACK_MUNGE_SOCKET
				 ", " VGPU_PLUGSTACK_LEND_PARTITION ", " VGPU_PLUGSTACK_GRES_CONF ")");
	if (*seen & (1u << k))
		return vgpu_fail(err, errlen, "key given twice");
	*seen |= 1u << k;
	if (vlen == 0)
		return vgpu_fail(err, errlen, "empty value");

	switch ((enum plugstack_key)k) {
	case KEY_TRACKER:
		return parse_tracker(v, vlen, cfg, err, errlen);
	case KEY_TIMEOUT:
		return parse_seconds(v, vlen, 1, &cfg->timeout_s, err, errlen);
	case KEY_READY_TIMEOUT:
		return parse_seconds(v, vlen, 0, &cfg->ready_timeout_s, err, errlen);
	case KEY_FALLBACK:
		if (strcmp(v, VGPU_FALLBACK_NONE_WORD) == 0)
			cfg->fallback = VGPU_FALLBACK_NONE;
		else if (strcmp(v, VGPU_FALLBACK_LOCAL_ONLY_WORD) == 0)
			cfg->fallback = VGPU_FALLBACK_LOCAL_ONLY;
		else
			return vgpu_fail(err, errlen,
					 "expected " VGPU_FALLBACK_LOCAL_ONLY_WORD " or " VGPU_FALLBACK_NONE_WORD);
		return 0;
	case KEY_AUTH:
		if (strcmp(v, VGPU_AUTH_NONE_WORD) == 0)
			cfg->auth = VGPU_AUTH_NONE;
		else if (strcmp(v, VGPU_AUTH_MUNGE_WORD) == 0)
			cfg->auth = VGPU_AUTH_MUNGE;
		else
			return vgpu_fail(err, errlen, "expected " VGPU_AUTH_MUNGE_WORD " or " VGPU_AUTH_NONE_WORD);
		return 0;
	case KEY_MUNGE_SOCKET:
		if (vgpu_valid_socket_path(v, vlen) != 0)
			return vgpu_fail(err, errlen,
					 "socket path must be absolute, at most %d bytes, of [A-Za-z0-9" VGPU_SOCKET_PATH_CHARS "] and without . or .. components",
					 VGPU_SOCKET_PATH_BYTES);
		memcpy(cfg->munge_socket, v, vlen);
		cfg->munge_socket[vlen] = '\0';
		return 0;
	case KEY_LEND_PARTITION:
		if (vgpu_valid_node(v, vlen) != 0)
			return vgpu_fail(err, errlen, "partition name must be 1..%d of [A-Za-z0-9" VGPU_NODE_CHARS "]",
					 VGPU_NODE_NAME_BYTES);
		memcpy(cfg->lend_partition, v, vlen);
		cfg->lend_partition[vlen] = '\0';
		return 0;
	case KEY_GRES_CONF:
		if (vgpu_valid_socket_path(v, vlen) != 0)
			return vgpu_fail(err, errlen,
					 "path must be absolute, at most %d bytes, of [A-Za-z0-9" VGPU_SOCKET_PATH_CHARS "] and without . or .. components",
					 VGPU_SOCKET_PATH_BYTES);
		memcpy(cfg->gres_conf, v, vlen);
		cfg->gres_conf[vlen] = '\0';
		return 0;
	case KEY_AGENT_SOCKET_DIR:
	case KEY_COUNT:
	default:
		/* The socket file name is appended, so leave room for it. */
		if (vgpu_valid_socket_path(v, vlen) != 0 || vlen > VGPU_AGENT_SOCKET_DIR_BYTES)
			return vgpu_fail(err, errlen,
					 "directory must be absolute, at most %d bytes, of [A-Za-z0-9" VGPU_SOCKET_PATH_CHARS "] and without . or .. components",
					 VGPU_AGENT_SOCKET_DIR_BYTES);
		memcpy(cfg->agent_socket_dir, v, vlen);
		/* "/run/vgpu/" and "/run/vgpu" are the same directory */
		while (vlen > 1 && cfg->agent_socket_dir[vlen - 1] == '/')
			vlen--;
		cfg->agent_socket_dir[vlen] = '\0';
		return 0;
	}
}

int vgpu_config_parse(int ac, char **av, struct vgpu_config *cfg, char *err, size_t errlen)
{
	char why[VGPU_ERR_MAX];
	char quoted[96];
	unsigned seen = 0;
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->timeout_s = VGPU_DEFAULT_TIMEOUT_S;
	cfg->ready_timeout_s = VGPU_DEFAULT_READY_TIMEOUT_S;
	cfg->fallback = VGPU_FALLBACK_NONE;
	snprintf(cfg->agent_socket_dir, sizeof(cfg->agent_socket_dir), "%s",
		 VGPU_DEFAULT_AGENT_SOCKET_DIR);

	for (i = 0; i < ac; i++) {
		if (av[i] == NULL)
			return vgpu_fail(err, errlen, "plugstack.conf: argument %d missing", i + 1);
		if (parse_one(av[i], cfg, &seen, why, sizeof(why)) != 0) {
			vgpu_sanitize(quoted, sizeof(quoted), av[i], ARG_MAX_LEN);
			return vgpu_fail(err, errlen, "plugstack.conf: bad argument \"%s\": %s", quoted, why);
		}
	}
	if (!(seen & (1u << KEY_TRACKER)))
		return vgpu_fail(err, errlen,
				 "plugstack.conf: " VGPU_PLUGSTACK_TRACKER "=HOST:PORT or " VGPU_PLUGSTACK_TRACKER
				 "=" VGPU_TRACKER_UNIX_PREFIX "/PATH is required");
	if (cfg->munge_socket[0] != '\0' && cfg->auth != VGPU_AUTH_MUNGE)
		return vgpu_fail(err, errlen, "plugstack.conf: " VGPU_PLUGSTACK_MUNGE_SOCKET "= without "
				 VGPU_PLUGSTACK_AUTH "=" VGPU_AUTH_MUNGE_WORD);
	return 0;
}

void vgpu_config_describe_tracker(const struct vgpu_config *cfg, char *buf, size_t cap)
{
	if (cfg->tracker_kind == VGPU_TRACKER_UNIX)
		snprintf(buf, cap, "unix:%s", cfg->tracker_path);
	else if (strchr(cfg->tracker_host, ':') != NULL)
		snprintf(buf, cap, "[%s]:%s", cfg->tracker_host, cfg->tracker_port);
	else
		snprintf(buf, cap, "%s:%s", cfg->tracker_host, cfg->tracker_port);
}
