/*
 * Unit tests of the Slurm-free modules: numbers, plugstack arguments, the
 * tracker's reply grammar, env rendering, and the socket line reader against
 * socketpairs and forked fake trackers. No Slurm, no network beyond loopback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "cgroup2.h"
#include "common.h"
#include "config.h"
#include "env.h"
#include "grant.h"
#include "net.h"
#include "protocol.h"
#include "sockdir.h"
#include "validate.h"

static int failures;
static int checks;

/* A limit of contract/limits.conf as text, for the messages that quote it. */
#define STR(x) #x
#define LIMIT(x) STR(x)

#define CHECK(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_STR(got, want) do { \
	checks++; \
	if (strcmp((got), (want)) != 0) { \
		failures++; \
		fprintf(stderr, "FAIL %s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__, (got), (want)); \
	} \
} while (0)

#define CHECK_HAS(got, part) do { \
	checks++; \
	if (strstr((got), (part)) == NULL) { \
		failures++; \
		fprintf(stderr, "FAIL %s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (got), (part)); \
	} \
} while (0)

/* ---- numbers and strings ---- */

static void test_numbers(void)
{
	uint64_t v = 0;

	CHECK(vgpu_parse_uint("0", 1, 10, &v) == 0 && v == 0);
	CHECK(vgpu_parse_uint("65535", 5, 65535, &v) == 0 && v == 65535);
	CHECK(vgpu_parse_uint("65536", 5, 65535, &v) != 0);
	CHECK(vgpu_parse_uint("18446744073709551615", 20, UINT64_MAX, &v) == 0 && v == UINT64_MAX);
	CHECK(vgpu_parse_uint("18446744073709551616", 20, UINT64_MAX, &v) != 0);
	CHECK(vgpu_parse_uint("99999999999999999999", 20, UINT64_MAX, &v) != 0);
	CHECK(vgpu_parse_uint("012", 3, 100, &v) != 0);
	CHECK(vgpu_parse_uint("-1", 2, 100, &v) != 0);
	CHECK(vgpu_parse_uint("+1", 2, 100, &v) != 0);
	CHECK(vgpu_parse_uint("1 ", 2, 100, &v) != 0);
	CHECK(vgpu_parse_uint("", 0, 100, &v) != 0);
	CHECK(vgpu_parse_uint("12", 1, 100, &v) == 0 && v == 1);	/* honours the length */

	CHECK(vgpu_parse_hex64("0x100000000000", 14, &v) == 0 && v == UINT64_C(0x100000000000));
	CHECK(vgpu_parse_hex64("0xFFFFffffFFFFffff", 18, &v) == 0 && v == UINT64_MAX);
	CHECK(vgpu_parse_hex64("0x1FFFFffffFFFFffff", 19, &v) != 0);
	CHECK(vgpu_parse_hex64("0x", 2, &v) != 0);
	CHECK(vgpu_parse_hex64("100", 3, &v) != 0);
	CHECK(vgpu_parse_hex64("0xg1", 4, &v) != 0);
}

static void test_sanitize(void)
{
	char out[16];
	char red[48];

	vgpu_sanitize(out, sizeof(out), "a\tb\x01\xff", 5);
	CHECK_STR(out, "a?b??");
	vgpu_sanitize(out, sizeof(out), "0123456789abcdefghij", 20);
	CHECK_STR(out, "0123456789ab...");
	CHECK(strlen(out) == sizeof(out) - 1);
	vgpu_sanitize(out, sizeof(out), "0123456789abcde", 15);
	CHECK_STR(out, "0123456789abcde");
	vgpu_sanitize(out, 3, "abcdef", 6);
	CHECK_STR(out, "ab");
	vgpu_sanitize(out, sizeof(out), NULL, 5);
	CHECK_STR(out, "");

	vgpu_redact_token(red, sizeof(red), "v1.c2VjcmV0cGF5bG9hZA.bWFjbWFjbWFj");
	CHECK_STR(red, "v1.c...(34 chars)");
	vgpu_redact_token(red, sizeof(red), "shortsecret");
	CHECK_STR(red, "(11 chars)");
}

/* ---- plugstack.conf arguments ---- */

static int parse_args(struct vgpu_config *cfg, char *err, size_t errlen, int ac, ...)
{
	static char store[16][800];
	char *av[16];
	va_list ap;
	int i;

	/* plugstack.conf hands over writable strings; so do the tests */
	va_start(ap, ac);
	for (i = 0; i < ac && i < 16; i++) {
		snprintf(store[i], sizeof(store[i]), "%s", va_arg(ap, const char *));
		av[i] = store[i];
	}
	va_end(ap);
	return vgpu_config_parse(ac, av, cfg, err, errlen);
}

static void test_config(void)
{
	struct vgpu_config c;
	char err[VGPU_ERR_MAX];
	char where[300];
	char longarg[700];

	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=127.0.0.1:7100") == 0);
	CHECK(c.tracker_kind == VGPU_TRACKER_TCP);
	CHECK_STR(c.tracker_host, "127.0.0.1");
	CHECK_STR(c.tracker_port, "7100");
	CHECK(c.timeout_s == VGPU_DEFAULT_TIMEOUT_S && c.fallback == VGPU_FALLBACK_NONE);
	CHECK(c.ready_timeout_s == VGPU_DEFAULT_READY_TIMEOUT_S);
	CHECK_STR(c.agent_socket_dir, "/run/vgpu");

	CHECK(parse_args(&c, err, sizeof(err), 5, "tracker=unix:/run/vgpu/tracker.sock",
			 "timeout=2", "fallback=local-only",
			 "agent_socket_dir=/var/run/vgpu-agents/", "ready_timeout=0") == 0);
	CHECK(c.tracker_kind == VGPU_TRACKER_UNIX);
	CHECK_STR(c.tracker_path, "/run/vgpu/tracker.sock");
	CHECK(c.timeout_s == 2 && c.fallback == VGPU_FALLBACK_LOCAL_ONLY && c.ready_timeout_s == 0);
	CHECK_STR(c.agent_socket_dir, "/var/run/vgpu-agents");
	vgpu_config_describe_tracker(&c, where, sizeof(where));
	CHECK_STR(where, "unix:/run/vgpu/tracker.sock");

	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=[::1]:7100") == 0);
	CHECK_STR(c.tracker_host, "::1");
	vgpu_config_describe_tracker(&c, where, sizeof(where));
	CHECK_STR(where, "[::1]:7100");
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=tracker.cluster.example:7100") == 0);

	CHECK(parse_args(&c, err, sizeof(err), 0) != 0);
	CHECK_HAS(err, "tracker=HOST:PORT or tracker=unix:/PATH is required");
	CHECK(parse_args(&c, err, sizeof(err), 1, "timeout=3") != 0);
	CHECK_HAS(err, "is required");

	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "bogus=1") != 0);
	CHECK_HAS(err, "bad argument \"bogus=1\": unknown key");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout") != 0);
	CHECK_HAS(err, "\"timeout\": expected key=value");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "=5") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "tracker=h:2") != 0);
	CHECK_HAS(err, "key given twice");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=0") != 0);
	CHECK_HAS(err, "\"timeout=0\": expected whole seconds, 1..300");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=301") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=5s") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=") != 0);
	CHECK_HAS(err, "empty value");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=99999999999999999999999") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "fallback=local") != 0);
	CHECK_HAS(err, "expected local-only or none");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "agent_socket_dir=run/vgpu") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "agent_socket_dir=/run/../etc") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "agent_socket_dir=/run/v gpu") != 0);
	CHECK(c.lend_partition[0] == '\0' && c.gres_conf[0] == '\0');
	CHECK(parse_args(&c, err, sizeof(err), 3, "tracker=h:1", "lend_partition=vgpu-lend",
			 "gres_conf=/etc/slurm-llnl/gres.conf") == 0);
	CHECK_STR(c.lend_partition, "vgpu-lend");
	CHECK_STR(c.gres_conf, "/etc/slurm-llnl/gres.conf");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "lend_partition=vgpu lend") != 0);
	CHECK_HAS(err, "partition name must be");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "gres_conf=gres.conf") != 0);
	CHECK_HAS(err, "path must be absolute");

	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=127.0.0.1") != 0);
	CHECK_HAS(err, "expected HOST:PORT or unix:/PATH");
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=127.0.0.1:0") != 0);
	CHECK_HAS(err, "bad port");
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=127.0.0.1:65536") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=127.0.0.1:") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=:7100") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=ho_st:7100") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=[zz]:7100") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=unix:relative.sock") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=unix:/") != 0);
	CHECK(parse_args(&c, err, sizeof(err), 1,
			 "tracker=unix:/a/very/long/path/that/does/not/fit/into/sun_path/of/a/unix/domain/socket/address/at/all/even/when/it/is/as/long/as/this.sock") != 0);

	memset(longarg, 'a', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	memcpy(longarg, "tracker=", 8);
	CHECK(parse_args(&c, err, sizeof(err), 1, longarg) != 0);
	CHECK_HAS(err, "longer than 512 bytes");
	CHECK_HAS(err, "...");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "timeout=\x1b[31m") != 0);
	CHECK_HAS(err, "\"timeout=?[31m\"");
}

/* ---- tracker replies ---- */

static enum vgpu_reply reply(const char *line, struct vgpu_assembly *a, char *reason, char *err)
{
	return vgpu_parse_assembly_reply(line, strlen(line), a, reason, VGPU_REASON_LOGGED_BYTES + 1, err, VGPU_ERR_MAX);
}

static void test_reply_ok(struct vgpu_assembly *a)
{
	char reason[VGPU_REASON_LOGGED_BYTES + 1], err[VGPU_ERR_MAX];

	CHECK(reply("ok vgpus=3 local=2,3 remote=1@10.0.0.5:7001#v1.abc_-.XYZ= "
		    "agent_socket=/run/vgpu/j42.sock window_base=0x200000000000",
		    a, reason, err) == VGPU_REPLY_OK);
	CHECK(a->vgpus == 3 && a->nlocal == 2 && a->local[0] == 2 && a->local[1] == 3);
	CHECK(a->nremote == 1 && a->remote[0].vgpu == 1 && a->remote[0].port == 7001);
	CHECK_STR(a->remote[0].host, "10.0.0.5");
	CHECK_STR(a->remote[0].token, "v1.abc_-.XYZ=");
	CHECK(a->has_agent_socket);
	CHECK_STR(a->agent_socket, "/run/vgpu/j42.sock");
	CHECK(a->window_base == UINT64_C(0x200000000000));

	CHECK(reply("ok vgpus=2 local=0,1", a, reason, err) == VGPU_REPLY_OK);
	CHECK(!a->has_agent_socket && a->window_base == VGPU_WINDOW_BASE_DEFAULT && a->nremote == 0);
	CHECK(reply("ok vgpus=2 local= remote=1@[fe80::1]:7002#t1,0@n3:7001#t0", a, reason, err) == VGPU_REPLY_OK);
	CHECK(a->nlocal == 0 && a->nremote == 2);
	CHECK(a->remote[0].vgpu == 0 && a->remote[1].vgpu == 1);	/* sorted */
	CHECK_STR(a->remote[1].host, "[fe80::1]");
	CHECK(reply("ok remote=0@n3:1#t vgpus=1", a, reason, err) == VGPU_REPLY_OK);	/* any key order */
	/* 64 vGPUs, the most, with the highest window that still fits */
	CHECK(reply("ok vgpus=64 window_base=0x7000000000000 local=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,"
		    "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,"
		    "44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63", a, reason, err) != VGPU_REPLY_OK);
	CHECK_HAS(err, "do not fit");
	CHECK(reply("ok vgpus=64 window_base=0x400000000000 local=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,"
		    "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,"
		    "44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63", a, reason, err) == VGPU_REPLY_OK);
}

static void expect_bad(const char *line, const char *why, struct vgpu_assembly *a)
{
	char reason[VGPU_REASON_LOGGED_BYTES + 1], err[VGPU_ERR_MAX];
	const enum vgpu_reply r = reply(line, a, reason, err);

	CHECK(r == VGPU_REPLY_BAD);
	if (r == VGPU_REPLY_BAD)
		CHECK_HAS(err, why);
	else
		fprintf(stderr, "  (line was \"%s\")\n", line);
}

static void test_reply_bad(struct vgpu_assembly *a)
{
	char reason[VGPU_REASON_LOGGED_BYTES + 1], err[VGPU_ERR_MAX];
	char big[VGPU_LINE_MAX + 10];
	const char nul[] = "ok vgpus=1\0local=0";

	CHECK(reply("wait holders not placed yet", a, reason, err) == VGPU_REPLY_WAIT);
	CHECK_STR(reason, "holders not placed yet");
	CHECK(reply("error job 42 has no assembly", a, reason, err) == VGPU_REPLY_ERROR);
	CHECK_STR(reason, "job 42 has no assembly");

	expect_bad("", "empty reply", a);
	expect_bad("wait", "without a reason", a);
	expect_bad("error", "without a reason", a);
	expect_bad("hello world", "reply starts with \"hello\"", a);
	expect_bad("OK vgpus=1 local=0", "not ok, wait or error", a);
	expect_bad("ok", "without vgpus=", a);
	expect_bad("ok vgpus=1 local=0\r", "non-printable byte 0x0d", a);
	expect_bad("ok vgpus=1\tlocal=0", "non-printable byte 0x09", a);
	expect_bad("ok  vgpus=1 local=0", "stray space", a);
	expect_bad(" ok vgpus=1 local=0", "stray space", a);
	expect_bad("ok vgpus=1 local=0 ", "stray space", a);
	expect_bad("ok vgpus=1 local=0 \xc3\xa9=1", "non-printable byte 0xc3", a);
	expect_bad("ok vgpus=1 colour=blue", "unknown key \"colour\"", a);
	expect_bad("ok vgpus=1 vgpus=1 local=0", "vgpus given twice", a);
	expect_bad("ok vgpus local=0", "is not key=value", a);
	expect_bad("ok =1 local=0", "is not key=value", a);
	expect_bad("ok vgpus=0", "vgpus: expected 1.." LIMIT(VGPU_VGPUS_MAX), a);
	expect_bad("ok vgpus=65", "vgpus: expected 1.." LIMIT(VGPU_VGPUS_MAX), a);
	expect_bad("ok vgpus=-1", "vgpus: expected", a);
	expect_bad("ok vgpus=01 local=0", "vgpus: expected", a);
	expect_bad("ok vgpus=1e3", "vgpus: expected", a);
	expect_bad("ok vgpus=99999999999999999999999 local=0", "vgpus: expected", a);
	expect_bad("ok vgpus=2 local=1,,2", "bad GPU index", a);
	expect_bad("ok vgpus=2 local=,1", "bad GPU index", a);
	expect_bad("ok vgpus=2 local=1,2,", "trailing comma", a);
	expect_bad("ok vgpus=2 local=1,1", "GPU 1 listed twice", a);
	expect_bad("ok vgpus=1 local=1024", "bad GPU index (0.." LIMIT(VGPU_GPU_INDEX_MAX) ")", a);
	expect_bad("ok vgpus=2 local=0", "vgpus=2 but 1 local and 0 remote", a);
	expect_bad("ok vgpus=1 local=0,1", "vgpus=1 but 2 local", a);
	expect_bad("ok vgpus=1 remote=0@n3:7001", "has no '#token'", a);
	expect_bad("ok vgpus=1 remote=n3:7001#t", "without '@'", a);
	expect_bad("ok vgpus=1 remote=x@n3:7001#t", "bad vGPU index", a);
	expect_bad("ok vgpus=1 remote=64@n3:7001#t", "bad vGPU index (0..63)", a);
	expect_bad("ok vgpus=1 remote=0@n3#t", "endpoint is not HOST:PORT", a);
	expect_bad("ok vgpus=1 remote=0@n3:0#t", "bad port", a);
	expect_bad("ok vgpus=1 remote=0@n3:65536#t", "bad port", a);
	expect_bad("ok vgpus=1 remote=0@n3:#t", "bad port", a);
	expect_bad("ok vgpus=1 remote=0@:7001#t", "bad host name", a);
	expect_bad("ok vgpus=1 remote=0@n_3:7001#t", "bad host name", a);
	expect_bad("ok vgpus=1 remote=0@[nothex]:7001#t", "bad IPv6", a);
	expect_bad("ok vgpus=1 remote=0@n3:7001#", "token must be", a);
	expect_bad("ok vgpus=1 remote=0@n3:7001#a#b", "token must be", a);
	expect_bad("ok vgpus=1 remote=0@n3:7001#t;rm", "token must be", a);
	expect_bad("ok vgpus=1 remote=1@n3:7001#t", "vGPU 1 out of range", a);
	expect_bad("ok vgpus=2 remote=0@n3:7001#t,0@n4:7001#t", "vGPU 0 listed twice", a);
	expect_bad("ok vgpus=1 remote=0@n3:7001#t,", "trailing comma", a);
	expect_bad("ok vgpus=1 local=0 window_base=0x1000", "multiple of 2 MiB", a);
	expect_bad("ok vgpus=1 local=0 window_base=0x0", "non-zero", a);
	expect_bad("ok vgpus=1 local=0 window_base=0xffffffffffe00000", "do not fit", a);
	expect_bad("ok vgpus=1 local=0 window_base=0x10000000000000000", "window_base: expected", a);
	expect_bad("ok vgpus=1 local=0 window_base=4096", "window_base: expected", a);
	expect_bad("ok vgpus=1 local=0 agent_socket=relative.sock", "agent_socket: must be absolute", a);
	expect_bad("ok vgpus=1 local=0 agent_socket=/run/../etc/x", "agent_socket: must be", a);
	expect_bad("ok vgpus=1 local=0 agent_socket=/run/$(id)", "agent_socket: must be", a);

	/* a 2000-character token: over the 1024 limit, rejected, not truncated */
	memset(big, 'A', 2100);
	memcpy(big, "ok vgpus=1 remote=0@n3:7001#", 28);
	big[2100] = '\0';
	expect_bad(big, "token must be 1.." LIMIT(VGPU_TOKEN_BYTES) " bytes", a);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	expect_bad(big, "longer than " LIMIT(VGPU_REPLY_LINE_BYTES) " bytes", a);
	CHECK(vgpu_parse_assembly_reply(nul, sizeof(nul) - 1, a, reason, 256, err, sizeof(err)) == VGPU_REPLY_BAD);
	CHECK_HAS(err, "non-printable byte 0x00");

	/* reasons are sanitized and bounded */
	memset(big, 'r', 1000);
	memcpy(big, "wait ", 5);
	big[1000] = '\0';
	CHECK(reply(big, a, reason, err) == VGPU_REPLY_WAIT);
	CHECK(strlen(reason) == VGPU_REASON_LOGGED_BYTES);
}

static void test_done_reply(void)
{
	char reason[64], err[VGPU_ERR_MAX];

	CHECK(vgpu_parse_done_reply("ok", 2, reason, sizeof(reason), err, sizeof(err)) == VGPU_REPLY_OK);
	CHECK(vgpu_parse_done_reply("ok x", 4, reason, sizeof(reason), err, sizeof(err)) == VGPU_REPLY_BAD);
	CHECK(vgpu_parse_done_reply("error unknown job 7", 19, reason, sizeof(reason), err, sizeof(err)) == VGPU_REPLY_ERROR);
	CHECK_STR(reason, "unknown job 7");
	CHECK(vgpu_parse_done_reply("wait x", 6, reason, sizeof(reason), err, sizeof(err)) == VGPU_REPLY_BAD);
	CHECK(vgpu_parse_done_reply("", 0, reason, sizeof(reason), err, sizeof(err)) == VGPU_REPLY_BAD);
}

static void test_requests(void)
{
	char buf[64], err[VGPU_ERR_MAX];

	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 42, "n1", err, sizeof(err)) == 14);
	CHECK_STR(buf, "assembly 42 n1");
	CHECK(vgpu_format_done_request(buf, sizeof(buf), 4294967295u, "gpu-node.07", -1, err, sizeof(err)) > 0);
	CHECK_STR(buf, "done 4294967295 gpu-node.07 -1");
	CHECK(vgpu_format_done_request(buf, sizeof(buf), 42, "n1", 137, err, sizeof(err)) > 0);
	CHECK_STR(buf, "done 42 n1 137");
	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 0, "n1", err, sizeof(err)) < 0);
	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 42, "n1 x", err, sizeof(err)) < 0);
	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 42, "n1\n", err, sizeof(err)) < 0);
	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 42, "", err, sizeof(err)) < 0);
	CHECK(vgpu_format_assembly_request(buf, sizeof(buf), 42, NULL, err, sizeof(err)) < 0);
	CHECK(vgpu_format_assembly_request(buf, 10, 42, "n1", err, sizeof(err)) < 0);
	CHECK_HAS(err, "does not fit");
}

static void test_auth(void)
{
	struct vgpu_config c;
	char err[VGPU_ERR_MAX], buf[256];
	const char *cred = "MUNGE:AwQFAADVgeXZ+/==:";

	CHECK(parse_args(&c, err, sizeof(err), 1, "tracker=h:1") == 0 && c.auth == VGPU_AUTH_NONE);
	CHECK(vgpu_finish_request(&c, "assembly 42 n1", buf, sizeof(buf), err, sizeof(err)) == 15);
	CHECK_STR(buf, "assembly 42 n1\n");
	CHECK(vgpu_finish_request(&c, "assembly 42 n1", buf, 15, err, sizeof(err)) < 0);
	CHECK(parse_args(&c, err, sizeof(err), 3, "tracker=h:1", "auth=munge",
			 "munge_socket=/run/munge/munge.socket.2") == 0);
	CHECK(c.auth == VGPU_AUTH_MUNGE);
	CHECK_STR(c.munge_socket, "/run/munge/munge.socket.2");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "auth=kerberos") != 0);
	CHECK_HAS(err, "\"auth=kerberos\": expected munge or none");
	CHECK(parse_args(&c, err, sizeof(err), 2, "tracker=h:1", "munge_socket=/run/m.sock") != 0);
	CHECK_HAS(err, "munge_socket= without auth=munge");
	CHECK(parse_args(&c, err, sizeof(err), 3, "tracker=h:1", "auth=munge", "munge_socket=m.sock") != 0);

	CHECK(vgpu_append_credential(buf, sizeof(buf), "done 42 n1 0", cred, err, sizeof(err)) > 0);
	CHECK_STR(buf, "done 42 n1 0 munge=MUNGE:AwQFAADVgeXZ+/==:\n");
	CHECK(vgpu_append_credential(buf, sizeof(buf), "done 42 n1 0", "MUNGE:a b:", err, sizeof(err)) < 0);
	CHECK(vgpu_append_credential(buf, sizeof(buf), "done 42 n1 0", "XUNGE:abcd:", err, sizeof(err)) < 0);
	CHECK(vgpu_append_credential(buf, sizeof(buf), "done 42 n1 0", "MUNGE:a\nb:", err, sizeof(err)) < 0);
	CHECK(vgpu_append_credential(buf, 20, "done 42 n1 0", cred, err, sizeof(err)) < 0);
	/* no munged at this socket: a clear error, no crash */
	CHECK(vgpu_munge_encode("/nonexistent/munge.socket", "x", 1, buf, sizeof(buf), err, sizeof(err)) < 0);
	CHECK_HAS(err, "auth=munge: ");
}

static void test_tres(void)
{
	char err[VGPU_ERR_MAX];
	unsigned n = 99;

	CHECK(vgpu_count_from_tres(NULL, &n, err, sizeof(err)) == 0 && n == 0);
	CHECK(vgpu_count_from_tres("", &n, err, sizeof(err)) == 0 && n == 0);
	CHECK(vgpu_count_from_tres("gres:gpu:2", &n, err, sizeof(err)) == 0 && n == 0);
	CHECK(vgpu_count_from_tres("gres:vgpu:2", &n, err, sizeof(err)) == 0 && n == 2);
	CHECK(vgpu_count_from_tres("gres/vgpu:3", &n, err, sizeof(err)) == 0 && n == 3);
	CHECK(vgpu_count_from_tres("gres:gpu:1,gres:vgpu:4", &n, err, sizeof(err)) == 0 && n == 4);
	CHECK(vgpu_count_from_tres("gres:vgpu:a100:2", &n, err, sizeof(err)) == 0 && n == 2);
	CHECK(vgpu_count_from_tres("gres:vgpu:a100:1,gres:vgpu:h100:2", &n, err, sizeof(err)) == 0 && n == 3);
	CHECK(vgpu_count_from_tres("gres:vgpu", &n, err, sizeof(err)) == 0 && n == 1);
	CHECK(vgpu_count_from_tres("gres:vgpu:h200", &n, err, sizeof(err)) == 0 && n == 1);
	CHECK(vgpu_count_from_tres("gres:vgpux:2", &n, err, sizeof(err)) == 0 && n == 0);
	CHECK(vgpu_count_from_tres("gres:vgpu:2x", &n, err, sizeof(err)) != 0);
	CHECK(vgpu_count_from_tres("gres:vgpu:", &n, err, sizeof(err)) != 0);
	CHECK(vgpu_count_from_tres("gres:vgpu:65", &n, err, sizeof(err)) != 0);
	CHECK(vgpu_count_from_tres("gres:vgpu:40,gres:vgpu:40", &n, err, sizeof(err)) != 0);
	CHECK_HAS(err, "more than " LIMIT(VGPU_VGPUS_MAX));
}

static void test_local_only(struct vgpu_assembly *a)
{
	char err[VGPU_ERR_MAX];

	CHECK(vgpu_local_only_assembly(2, "4,5,6", a, err, sizeof(err)) == 0);
	CHECK(a->vgpus == 2 && a->nlocal == 2 && a->local[0] == 4 && a->local[1] == 5 && a->nremote == 0);
	CHECK(vgpu_local_only_assembly(2, "0", a, err, sizeof(err)) != 0);
	CHECK_HAS(err, "has 1 local GPU(s), it needs 2");
	CHECK(vgpu_local_only_assembly(1, "", a, err, sizeof(err)) != 0);
	CHECK(vgpu_local_only_assembly(1, NULL, a, err, sizeof(err)) != 0);
	CHECK(vgpu_local_only_assembly(1, "GPU-8a1c2f", a, err, sizeof(err)) != 0);
	CHECK_HAS(err, "not a list of GPU indices");
	CHECK(vgpu_local_only_assembly(0, "0", a, err, sizeof(err)) != 0);
}

static void test_env(struct vgpu_assembly *a, struct vgpu_env *e)
{
	char reason[VGPU_REASON_LOGGED_BYTES + 1], err[VGPU_ERR_MAX];

	CHECK(reply("ok vgpus=4 local=6,2 remote=3@n4:7003#v1.bbbb.cccc,1@[::1]:7001#v1.aaaa.bbbb",
		    a, reason, err) == VGPU_REPLY_OK);
	CHECK(vgpu_env_render(a, "/run/vgpu", 42, "n1", e, err, sizeof(err)) == 0);
	CHECK_STR(e->count, "4");
	CHECK_STR(e->local, "6,2");
	CHECK_STR(e->remote, "1@[::1]:7001#v1.aaaa.bbbb,3@n4:7003#v1.bbbb.cccc");
	CHECK_STR(e->assembly, "0=local:6,1=remote:[::1]:7001,2=local:2,3=remote:n4:7003");
	/* the job's own directory, which the bridge makes as root (sockdir.h) */
	CHECK_STR(e->agent_socket, "/run/vgpu/job-42/vgpu-n1.sock");
	CHECK_STR(e->window_base, "0x100000000000");

	CHECK(reply("ok vgpus=1 remote=0@n4:7003#tok agent_socket=/run/vgpu/job-42/agent.sock",
		    a, reason, err) == VGPU_REPLY_OK);
	CHECK(vgpu_env_render(a, "/run/vgpu", 42, "n1", e, err, sizeof(err)) == 0);
	CHECK_STR(e->agent_socket, "/run/vgpu/job-42/agent.sock");
	CHECK_STR(e->local, "");
	CHECK(vgpu_env_render(a, "/run/vgpu/job4", 42, "n1", e, err, sizeof(err)) != 0);
	CHECK_HAS(err, "not inside the job's directory /run/vgpu/job4/job-42");
	CHECK(vgpu_env_render(a, "/tmp", 42, "n1", e, err, sizeof(err)) != 0);
	/* inside agent_socket_dir, but in another job's directory or the shared one: refused */
	CHECK(vgpu_env_render(a, "/run/vgpu", 4, "n1", e, err, sizeof(err)) != 0);
	CHECK(vgpu_env_render(a, "/run/vgpu", 420, "n1", e, err, sizeof(err)) != 0);
	CHECK(reply("ok vgpus=1 remote=0@n4:7003#tok agent_socket=/run/vgpu/a.sock", a, reason, err) == VGPU_REPLY_OK);
	CHECK(vgpu_env_render(a, "/run/vgpu", 42, "n1", e, err, sizeof(err)) != 0);

	CHECK(reply("ok vgpus=1 local=0", a, reason, err) == VGPU_REPLY_OK);
	CHECK(vgpu_env_render(a, "/a/directory/name/that/is/long/enough/to/overflow/the/socket/path/limit",
			      4294967295u, "a-rather-long-node-name-0001", e, err, sizeof(err)) != 0);
	CHECK_HAS(err, "longer than " LIMIT(VGPU_SOCKET_PATH_BYTES) " bytes");
}

/*
 * Random mutations of valid replies (fixed seed, so failures reproduce): the
 * parser must never crash or overrun (ASan/valgrind watch), and whatever it
 * accepts must be a consistent assembly that renders.
 */
static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

static void test_reply_fuzz(struct vgpu_assembly *a, struct vgpu_env *e)
{
	static const char *const seeds[] = {
		"ok vgpus=3 local=2,3 remote=1@10.0.0.5:7001#v1.abc.def agent_socket=/run/vgpu/a.sock window_base=0x100000000000",
		"ok vgpus=2 remote=0@[::1]:1#t,1@n-2.x:65535#u",
		"wait not yet",
		"error no",
	};
	static const char alphabet[] = "ok=,@:#[]/.0123456789xv ";
	char line[512], reason[256], err[VGPU_ERR_MAX];
	const char *env_n = getenv("VGPU_FUZZ_ITERATIONS");
	const unsigned iterations = env_n != NULL ? (unsigned)strtoul(env_n, NULL, 10) : 200000;
	unsigned accepted = 0, i, k;
	int bad_invariant = 0;

	for (i = 0; i < iterations; i++) {
		const char *seed = seeds[rnd(4)];
		size_t n = strlen(seed);
		const unsigned edits = 1 + rnd(4);

		memcpy(line, seed, n);
		for (k = 0; k < edits; k++) {
			const size_t at = rnd((unsigned)n + 1);

			switch (rnd(4)) {
			case 0:	/* replace */
				if (at < n)
					line[at] = rnd(3) == 0 ? (char)rnd(256) : alphabet[rnd(sizeof(alphabet) - 1)];
				break;
			case 1:	/* delete */
				if (at < n) {
					memmove(line + at, line + at + 1, n - at - 1);
					n--;
				}
				break;
			case 2:	/* insert */
				if (n + 1 < sizeof(line)) {
					memmove(line + at + 1, line + at, n - at);
					line[at] = alphabet[rnd(sizeof(alphabet) - 1)];
					n++;
				}
				break;
			default: /* truncate */
				n = at;
				break;
			}
		}
		if (vgpu_parse_assembly_reply(line, n, a, reason, sizeof(reason), err, sizeof(err)) != VGPU_REPLY_OK)
			continue;
		accepted++;
		if (a->vgpus == 0 || a->vgpus > VGPU_VGPUS_MAX || a->nlocal + a->nremote != a->vgpus)
			bad_invariant = 1;
		for (k = 0; k < a->nremote; k++)
			if (a->remote[k].vgpu >= a->vgpus || (k > 0 && a->remote[k - 1].vgpu >= a->remote[k].vgpu)
			    || vgpu_valid_token(a->remote[k].token, strlen(a->remote[k].token)) != 0)
				bad_invariant = 1;
		if (vgpu_env_render(a, "/run/vgpu", 1, "n1", e, err, sizeof(err)) != 0
		    && strstr(err, "not inside the job's directory") == NULL)
			bad_invariant = 1;
	}
	CHECK(!bad_invariant);
	CHECK(iterations < 1000 || accepted > 0);
}

/* ---- sockets ---- */

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		perror("socketpair");
		exit(2);
	}
}

static int read_from(const char *data, size_t len, int close_writer, char *buf, size_t cap,
		     unsigned timeout_s, char *err)
{
	struct vgpu_deadline d;
	int sv[2];
	int n;

	pair(sv);
	if (len > 0 && write(sv[1], data, len) != (ssize_t)len) {
		perror("write");
		exit(2);
	}
	if (close_writer)
		close(sv[1]);
	vgpu_deadline_in(&d, timeout_s);
	n = vgpu_read_line(sv[0], buf, cap, &d, err, VGPU_ERR_MAX);
	close(sv[0]);
	if (!close_writer)
		close(sv[1]);
	return n;
}

static void test_read_line(void)
{
	static char big[VGPU_LINE_MAX + 100];
	char buf[VGPU_LINE_MAX];
	char err[VGPU_ERR_MAX];
	struct timespec t0, t1;
	double secs;

	CHECK(read_from("ok vgpus=1 local=0\n", 19, 1, buf, sizeof(buf), 2, err) == 18);
	CHECK_STR(buf, "ok vgpus=1 local=0");
	CHECK(read_from("ok\n", 3, 0, buf, sizeof(buf), 2, err) == 2);	/* no need to wait for EOF */
	CHECK(read_from("\n", 1, 1, buf, sizeof(buf), 2, err) == 0);
	CHECK(read_from("ok\nmore\n", 8, 1, buf, sizeof(buf), 2, err) < 0);
	CHECK_HAS(err, "5 byte(s) after the reply line");
	CHECK(read_from("ok vgpus", 8, 1, buf, sizeof(buf), 2, err) < 0);
	CHECK_HAS(err, "closed in the middle of the reply line");
	CHECK(read_from("", 0, 1, buf, sizeof(buf), 2, err) < 0);
	CHECK_HAS(err, "closed without a reply");
	CHECK(read_from("ok\0x\n", 5, 1, buf, sizeof(buf), 2, err) < 0);
	CHECK_HAS(err, "NUL byte");

	/* the longest line that fits: cap - 2 characters and the newline */
	memset(big, 'x', sizeof(big));
	big[sizeof(buf) - 2] = '\n';
	CHECK(read_from(big, sizeof(buf) - 1, 1, buf, sizeof(buf), 2, err) == (int)sizeof(buf) - 2);
	memset(big, 'x', sizeof(big));
	big[sizeof(buf) - 1] = '\n';
	CHECK(read_from(big, sizeof(buf), 1, buf, sizeof(buf), 2, err) < 0);
	CHECK_HAS(err, "longer than " LIMIT(VGPU_REPLY_LINE_BYTES) " bytes");
	CHECK(read_from(big, sizeof(big), 0, buf, sizeof(buf), 2, err) < 0);	/* never ends */
	CHECK_HAS(err, "longer than");
	CHECK(read_from("ok\n", 3, 1, buf, 1, 2, err) < 0);

	/* silence: the deadline, not the peer, ends the wait */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(read_from("ok vgpus=1", 10, 0, buf, sizeof(buf), 1, err) < 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_HAS(err, "timed out waiting for the reply");
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(secs >= 0.9 && secs < 3.0);
}

/*
 * A fake tracker in a child process: accepts one connection, checks the
 * request, answers with reply (NULL: stays silent until killed).
 */
static pid_t serve_once(int lfd, const char *want, const char *answer)
{
	const pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		char req[256];
		ssize_t n;
		int c = accept(lfd, NULL, NULL);

		if (c < 0)
			_exit(3);
		n = read(c, req, sizeof(req) - 1);
		if (n <= 0)
			_exit(4);
		req[n] = '\0';
		if (strcmp(req, want) != 0)
			_exit(5);
		while (answer == NULL)
			pause();
		if (write(c, answer, strlen(answer)) != (ssize_t)strlen(answer))
			_exit(6);
		close(c);
		_exit(0);
	}
	return pid;
}

/* Exit status of the fake tracker; kill_it for one that stays silent. */
static int reap(pid_t pid, int kill_it)
{
	int st = 0;

	if (kill_it)
		kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_tracker_call(void)
{
	struct vgpu_config c;
	struct sockaddr_un sun;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	char path[64], arg[96], reply_buf[VGPU_LINE_MAX], err[VGPU_ERR_MAX];
	char timeout_arg[] = "timeout=1";
	char *av[2];
	int lfd;
	pid_t pid;

	/* UNIX socket */
	snprintf(path, sizeof(path), "/tmp/vgpu-unit-%ld.sock", (long)getpid());
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0 && listen(lfd, 4) == 0);
	snprintf(arg, sizeof(arg), "tracker=unix:%s", path);
	av[0] = arg;
	av[1] = timeout_arg;
	CHECK(vgpu_config_parse(2, av, &c, err, sizeof(err)) == 0);
	pid = serve_once(lfd, "assembly 7 n1\n", "ok vgpus=1 local=0\n");
	CHECK(vgpu_tracker_call(&c, "assembly 7 n1\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) == 18);
	CHECK_STR(reply_buf, "ok vgpus=1 local=0");
	CHECK(reap(pid, 0) == 0);

	pid = serve_once(lfd, "done 7 n1 0\n", NULL);
	CHECK(vgpu_tracker_call(&c, "done 7 n1 0\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) < 0);
	CHECK_HAS(err, "(timeout 1s): timed out waiting for the reply");
	CHECK_HAS(err, path);
	CHECK(reap(pid, 1) == 128 + SIGTERM);
	close(lfd);
	unlink(path);
	CHECK(vgpu_tracker_call(&c, "done 7 n1 0\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) < 0);
	CHECK_HAS(err, "connect: No such file or directory");

	/* TCP on loopback, ephemeral port */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(lfd, 4) == 0);
	CHECK(lfd >= 0 && getsockname(lfd, (struct sockaddr *)&sin, &slen) == 0);
	snprintf(arg, sizeof(arg), "tracker=127.0.0.1:%u", (unsigned)ntohs(sin.sin_port));
	CHECK(vgpu_config_parse(2, av, &c, err, sizeof(err)) == 0);
	pid = serve_once(lfd, "assembly 8 n2\n", "wait placing holders\n");
	CHECK(vgpu_tracker_call(&c, "assembly 8 n2\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) > 0);
	CHECK_STR(reply_buf, "wait placing holders");
	CHECK(reap(pid, 0) == 0);
	pid = serve_once(lfd, "assembly 8 n2\n", "ok vgpus=1 local=0");	/* no newline, then EOF */
	CHECK(vgpu_tracker_call(&c, "assembly 8 n2\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) < 0);
	CHECK_HAS(err, "closed in the middle");
	CHECK(reap(pid, 0) == 0);
	close(lfd);
	/* nobody listens there any more */
	CHECK(vgpu_tracker_call(&c, "assembly 8 n2\n", reply_buf, sizeof(reply_buf), err, sizeof(err)) < 0);
	CHECK_HAS(err, "Connection refused");
}

/* static, not heap: forked fake trackers exit without freeing anything */
/* ---- golden transcripts (contract/transcripts.txt, replayed by the tracker's tests too) ---- */

/* A session token for the transcripts' {token}: any token the grammar allows will do. */
#define TRANSCRIPT_TOKEN "v1.transcript.token"

static void fill_token(char *dst, size_t cap, const char *src)
{
	size_t used = 0;

	while (*src != '\0' && used + 1 < cap) {
		if (strncmp(src, "{token}", 7) == 0) {
			used += (size_t)snprintf(dst + used, cap - used, "%s", TRANSCRIPT_TOKEN);
			src += 7;
		} else {
			dst[used++] = *src++;
		}
	}
	dst[used < cap ? used : cap - 1] = '\0';
}

static enum vgpu_reply kind_of(const char *reply)
{
	if (strncmp(reply, VGPU_REPLY_OK_WORD, strlen(VGPU_REPLY_OK_WORD)) == 0)
		return VGPU_REPLY_OK;
	if (strncmp(reply, VGPU_REPLY_WAIT_WORD " ", strlen(VGPU_REPLY_WAIT_WORD) + 1) == 0)
		return VGPU_REPLY_WAIT;
	if (strncmp(reply, VGPU_REPLY_ERROR_WORD " ", strlen(VGPU_REPLY_ERROR_WORD) + 1) == 0)
		return VGPU_REPLY_ERROR;
	return VGPU_REPLY_BAD;	/* a status line */
}

/*
 * One request and its first reply line. A request the bridge sends (assembly, done) must be
 * formatted exactly so by the bridge, or refused by it where the tracker refuses it too; the reply
 * must parse to the kind its first word says. 1 when the reply was an ok to assembly, which *a
 * then holds, with *jobid and node set.
 */
static int replay_exchange(const char *request, const char *reply, struct vgpu_assembly *a,
			   unsigned *jobid, char *node, size_t nodecap)
{
	char verb[16], job[32], where[VGPU_NODE_NAME_BYTES + 8], status[32], extra[2];
	char buf[VGPU_REQUEST_MAX] = "", reason[VGPU_REASON_LOGGED_BYTES + 1], err[VGPU_ERR_MAX];
	const enum vgpu_reply want = kind_of(reply);
	const int fields = sscanf(request, "%15s %31s %135s %31s %1s", verb, job, where, status, extra);
	uint64_t id = 0;
	int formatted = -1;

	if (fields < 1)
		return 0;
	if (vgpu_parse_uint(job, fields >= 2 ? strlen(job) : 0, UINT32_MAX, &id) != 0)
		id = 0;
	if (strcmp(verb, VGPU_REQUEST_ASSEMBLY) == 0) {
		if (fields == 3)
			formatted = vgpu_format_assembly_request(buf, sizeof(buf), (uint32_t)id, where, err, sizeof(err));
		if (formatted < 0 ? want != VGPU_REPLY_ERROR : strcmp(buf, request) != 0)
			fprintf(stderr, "  (transcript request \"%s\")\n", request);
		CHECK(formatted < 0 ? want == VGPU_REPLY_ERROR : strcmp(buf, request) == 0);
		CHECK(vgpu_parse_assembly_reply(reply, strlen(reply), a, reason, sizeof(reason), err, sizeof(err)) == want);
		if (want == VGPU_REPLY_OK) {
			*jobid = (unsigned)id;
			snprintf(node, nodecap, "%s", where);
			return 1;
		}
	} else if (strcmp(verb, VGPU_REQUEST_DONE) == 0) {
		if (fields == 4 && strcmp(status, "-1") != 0 && vgpu_parse_uint(status, strlen(status), INT32_MAX, &(uint64_t){ 0 }) != 0)
			formatted = -1;
		else if (fields == 4)
			formatted = vgpu_format_done_request(buf, sizeof(buf), (uint32_t)id, where, atoi(status), err, sizeof(err));
		if (formatted < 0 ? want != VGPU_REPLY_ERROR : strcmp(buf, request) != 0)
			fprintf(stderr, "  (transcript request \"%s\")\n", request);
		CHECK(formatted < 0 ? want == VGPU_REPLY_ERROR : strcmp(buf, request) == 0);
		CHECK(vgpu_parse_done_reply(reply, strlen(reply), reason, sizeof(reason), err, sizeof(err)) == want);
	} else if (want == VGPU_REPLY_ERROR) {
		/* requests the bridge never sends: their errors are still well-formed reply lines */
		CHECK(vgpu_parse_done_reply(reply, strlen(reply), reason, sizeof(reason), err, sizeof(err)) == want);
	}
	return 0;
}

/* A "= NAME=VALUE" line: what the bridge exports for the last ok reply. */
static void replay_export(const char *line, const struct vgpu_env *e)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
		{ VGPU_ENV_COUNT, offsetof(struct vgpu_env, count) },
		{ VGPU_ENV_ASSEMBLY, offsetof(struct vgpu_env, assembly) },
		{ VGPU_ENV_LOCAL_GPUS, offsetof(struct vgpu_env, local) },
		{ VGPU_ENV_REMOTE, offsetof(struct vgpu_env, remote) },
		{ VGPU_ENV_AGENT_SOCKET, offsetof(struct vgpu_env, agent_socket) },
		{ VGPU_ENV_WINDOW_BASE, offsetof(struct vgpu_env, window_base) },
	};
	const char *eq = strchr(line, '=');
	size_t k;

	CHECK(eq != NULL);
	if (eq == NULL)
		return;
	for (k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		if (strlen(fields[k].name) == (size_t)(eq - line) && strncmp(line, fields[k].name, (size_t)(eq - line)) == 0) {
			CHECK_STR((const char *)e + fields[k].offset, eq + 1);
			return;
		}
	}
	failures++;
	fprintf(stderr, "FAIL transcript exports unknown variable: %s\n", line);
}

static void test_transcripts(struct vgpu_assembly *a, struct vgpu_env *e)
{
	FILE *f = fopen(TRANSCRIPTS_FILE, "r");
	static char line[VGPU_LINE_MAX + 16], text[VGPU_LINE_MAX + 16], request[VGPU_LINE_MAX + 16];
	char node[VGPU_NODE_NAME_BYTES + 8], err[VGPU_ERR_MAX];
	unsigned jobid = 0, exchanges = 0, exports = 0;
	int first_reply = 0, rendered = 0;

	CHECK(f != NULL);
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) < 2)
			continue;
		fill_token(text, sizeof(text), line + 2);
		switch (line[0]) {
		case '>':
			snprintf(request, sizeof(request), "%s", text);
			first_reply = 1;
			rendered = 0;
			break;
		case '<':
			if (first_reply && replay_exchange(request, text, a, &jobid, node, sizeof(node))) {
				CHECK(vgpu_env_render(a, VGPU_DEFAULT_AGENT_SOCKET_DIR, jobid, node, e, err, sizeof(err)) == 0);
				rendered = 1;
			}
			exchanges += (unsigned)first_reply;
			first_reply = 0;
			break;
		case '=':
			CHECK(rendered);
			if (rendered)
				replay_export(text, e);
			exports++;
			break;
		default:
			break;
		}
	}
	fclose(f);
	CHECK(exchanges >= 20 && exports >= 5);
}

/* ---- grants: holder names, gres.conf, cgroups (a fake tree here; tests/cgroup-v1-test.sh: a real one) ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f == NULL)
		return;
	fputs(text, f);
	fclose(f);
}

static void read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f == NULL)
		return;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

struct collected {
	char text[512];
};

static int collect(const char *item, void *ctx)
{
	struct collected *c = ctx;
	size_t used = strlen(c->text);

	snprintf(c->text + used, sizeof(c->text) - used, "%s%s", used ? " " : "", item);
	return 0;
}

static void expect_expansion(const char *expr, const char *want)
{
	struct collected c = { "" };
	char err[VGPU_ERR_MAX];

	CHECK(vgpu_expand_hostlist(expr, collect, &c, err, sizeof(err)) == 0);
	CHECK_STR(c.text, want);
}

static void test_grant_names(void)
{
	char err[VGPU_ERR_MAX];
	uint32_t job = 0;
	unsigned vgpu = 0, gpu = 0;

	CHECK(vgpu_parse_grant_name("vgpu-grant-42-v1", &job, &vgpu, err, sizeof(err)) == 1);
	CHECK(job == 42 && vgpu == 1);
	CHECK(vgpu_parse_grant_name("vgpu-grant-4294967295-v63", &job, &vgpu, err, sizeof(err)) == 1);
	CHECK(job == 4294967295u && vgpu == 63);
	/* lend holders and ordinary jobs are no grant holders */
	CHECK(vgpu_parse_grant_name("vgpu-holder-42-v1", &job, &vgpu, err, sizeof(err)) == 0);
	CHECK(vgpu_parse_grant_name("train", &job, &vgpu, err, sizeof(err)) == 0);
	CHECK(vgpu_parse_grant_name(NULL, &job, &vgpu, err, sizeof(err)) == 0);
	{
		static const char *const bad[] = {
			"vgpu-grant-", "vgpu-grant-42", "vgpu-grant-42-v", "vgpu-grant-0-v1", "vgpu-grant-042-v1",
			"vgpu-grant-42-v01", "vgpu-grant-42-v64", "vgpu-grant-4294967296-v1", "vgpu-grant-42-v1 ",
			"vgpu-grant-42-v1x", "vgpu-grant--42-v1", "vgpu-grant-4x2-v1", "vgpu-grant-42-v1-v2",
			"vgpu-grant-+42-v1",
		};
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			err[0] = '\0';
			CHECK(vgpu_parse_grant_name(bad[k], &job, &vgpu, err, sizeof(err)) == -1);
			CHECK_HAS(err, "job name is not vgpu-grant-<job 1..4294967295>-v<vGPU 0..63>");
		}
	}

	CHECK(vgpu_parse_single_gpu("3", &gpu, err, sizeof(err)) == 0 && gpu == 3);
	CHECK(vgpu_parse_single_gpu("1023", &gpu, err, sizeof(err)) == 0 && gpu == 1023);
	CHECK(vgpu_parse_single_gpu("1024", &gpu, err, sizeof(err)) != 0);
	CHECK(vgpu_parse_single_gpu("2,3", &gpu, err, sizeof(err)) != 0);
	CHECK_HAS(err, "exactly one GPU");
	CHECK_HAS(err, "\"2,3\"");
	CHECK(vgpu_parse_single_gpu("", &gpu, err, sizeof(err)) != 0);
	CHECK_HAS(err, "no GPU");
	CHECK(vgpu_parse_single_gpu(NULL, &gpu, err, sizeof(err)) != 0);
	CHECK(vgpu_parse_single_gpu("\x1b]0", &gpu, err, sizeof(err)) != 0);
	CHECK_HAS(err, "\"?]0\"");
}

static void test_hostlists(void)
{
	struct collected c = { "" };
	char err[VGPU_ERR_MAX];

	expect_expansion("n1", "n1");
	expect_expansion("n[1-3]", "n1 n2 n3");
	expect_expansion("n[1-2,5],m7", "n1 n2 n5 m7");
	expect_expansion("gpu[08-11]", "gpu08 gpu09 gpu10 gpu11");
	expect_expansion("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
	expect_expansion("/dev/nvidia[0-3]", "/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3");
	expect_expansion("/dev/nvidia2,/dev/nvidia0", "/dev/nvidia2 /dev/nvidia0");
	{
		static const char *const bad[] = {
			"", "n[1-", "n1]", "n[]", "n[3-1]", "n[a-b]", "n[1--2]", "n[[1]]", "a,,b", ",a", "n[1-2",
			"n[1-9999999999]", "n[1,]", "a,",
		};
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
			CHECK(vgpu_expand_hostlist(bad[k], collect, &c, err, sizeof(err)) < 0);
	}
	/* an expansion without end is refused, not walked */
	CHECK(vgpu_expand_hostlist("n[0-999][0-999]", collect, &c, err, sizeof(err)) < 0);
	CHECK_HAS(err, "more than 65536 names");
}

static void test_gres_conf(const char *dir)
{
	char path[256], file[PATH_MAX], err[VGPU_ERR_MAX];

	snprintf(path, sizeof(path), "%s/gres.conf", dir);
	write_file(path,
		   "# rendered by vgpu config render\n"
		   "NodeName=n[1-2] Name=gpu File=/dev/nvidia[0-3]   # four each\n"
		   "NodeName=n[1-3] Name=vgpu Count=8\n"
		   "nodename=n3 name=gpu type=a100 file=/dev/nvidia[4-5]\n"
		   "NodeName=n3 Name=gpu Files=/dev/nvidia9\n"
		   "Name=gpu File=/dev/everywhere0\n");
	CHECK(vgpu_gres_gpu_file(path, "n1", 2, file, sizeof(file), err, sizeof(err)) == 0);
	CHECK_STR(file, "/dev/nvidia2");
	/* lines without NodeName= apply to every node, in the order written */
	CHECK(vgpu_gres_gpu_file(path, "n2", 4, file, sizeof(file), err, sizeof(err)) == 0);
	CHECK_STR(file, "/dev/everywhere0");
	CHECK(vgpu_gres_gpu_file(path, "n3", 1, file, sizeof(file), err, sizeof(err)) == 0);
	CHECK_STR(file, "/dev/nvidia5");
	CHECK(vgpu_gres_gpu_file(path, "n3", 2, file, sizeof(file), err, sizeof(err)) == 0);
	CHECK_STR(file, "/dev/nvidia9");
	CHECK(vgpu_gres_gpu_file(path, "n2", 5, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "names 5 gpu device file(s) for node n2, none with index 5");
	CHECK(vgpu_gres_gpu_file(path, "n9", 0, file, sizeof(file), err, sizeof(err)) == 0);
	CHECK_STR(file, "/dev/everywhere0");

	write_file(path, "NodeName=n1 Name=gpu Count=4\n");
	CHECK(vgpu_gres_gpu_file(path, "n1", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "gres.conf:1: a gpu line for n1 without File=");
	/* another node's line without File= does not matter */
	CHECK(vgpu_gres_gpu_file(path, "n2", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "names 0 gpu device file(s) for node n2");
	write_file(path, "AutoDetect=nvml\nNodeName=n1 Name=gpu File=/dev/nvidia0\n");
	CHECK(vgpu_gres_gpu_file(path, "n1", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "gres.conf:1: AutoDetect= is set");
	write_file(path, "NodeName=n[1-3 Name=gpu File=/dev/nvidia0\n");
	CHECK(vgpu_gres_gpu_file(path, "n1", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "gres.conf:1:");
	write_file(path, "NodeName=n1 Name=gpu File=/dev/nvidia[0-\n");
	CHECK(vgpu_gres_gpu_file(path, "n1", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "File=/dev/nvidia[0-: ");
	snprintf(path, sizeof(path), "%s/no-such-gres.conf", dir);
	CHECK(vgpu_gres_gpu_file(path, "n1", 0, file, sizeof(file), err, sizeof(err)) != 0);
	CHECK_HAS(err, "cannot read");
}

static void test_cgroup_tree(const char *dir)
{
	char mounts[256], mount[PATH_MAX], path[PATH_MAX], got[128], err[VGPU_ERR_MAX];
	struct vgpu_device dev = { 195, 2 };
	unsigned written = 0;
	const char *const cgroups[] = {
		"", "/slurm_n1", "/slurm_n1/uid_1000", "/slurm_n1/uid_1000/job_42",
		"/slurm_n1/uid_1000/job_42/step_batch", "/slurm_n1/uid_1000/job_42/step_0",
		"/slurm_n1/uid_1000/job_42/step_0/task_0", "/slurm_n1/uid_1000/job_43",
	};
	size_t k;

	snprintf(mounts, sizeof(mounts), "%s/mounts", dir);
	write_file(mounts, "proc /proc proc rw 0 0\n"
			   "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
			   "cgroup /sys/fs/cgroup/devices cgroup rw,relatime,devices 0 0\n"
			   "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_V1);
	CHECK_STR(mount, "/sys/fs/cgroup/devices");
	write_file(mounts, "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n"
			   "cgroup /x cgroup rw,relatime,devicesx 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_V2);
	write_file(mounts, "proc /proc proc rw 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_NONE);

	/* Slurm's v1 layout, with plain files standing in for devices.allow/deny */
	for (k = 0; k < sizeof(cgroups) / sizeof(cgroups[0]); k++) {
		snprintf(path, sizeof(path), "%s/devices%s", dir, cgroups[k]);
		CHECK(mkdir(path, 0755) == 0);
		snprintf(path, sizeof(path), "%s/devices%s/devices.allow", dir, cgroups[k]);
		write_file(path, "");
		snprintf(path, sizeof(path), "%s/devices%s/devices.deny", dir, cgroups[k]);
		write_file(path, "");
	}
	snprintf(mount, sizeof(mount), "%s/devices", dir);
	CHECK(vgpu_job_devices_cgroup(mount, "n1", 1000, 42, path, sizeof(path), err, sizeof(err)) == 0);
	CHECK_HAS(path, "/devices/slurm_n1/uid_1000/job_42");
	CHECK(vgpu_job_devices_cgroup(mount, "n2", 1000, 42, path, sizeof(path), err, sizeof(err)) == 1);
	CHECK(vgpu_job_devices_cgroup(mount, "n1", 1001, 42, path, sizeof(path), err, sizeof(err)) == 1);
	CHECK(vgpu_job_devices_cgroup(mount, "n1;x", 1000, 42, path, sizeof(path), err, sizeof(err)) == -1);
	CHECK(vgpu_job_devices_cgroup(mount, "n1", 1000, 42, path, sizeof(path), err, sizeof(err)) == 0);

	CHECK(vgpu_cgroup_set_device(path, &dev, 1, &written, err, sizeof(err)) == 0);
	CHECK(written == 4);	/* the job, its two steps, and the task below step 0 */
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_42/step_0/task_0/devices.allow", dir);
	read_file(path, got, sizeof(got));
	CHECK_STR(got, "c 195:2 rw");
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_43/devices.allow", dir);
	read_file(path, got, sizeof(got));
	CHECK_STR(got, "");	/* another job: untouched */
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/devices.allow", dir);
	read_file(path, got, sizeof(got));
	CHECK_STR(got, "");	/* above the job: untouched */

	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_42", dir);
	CHECK(vgpu_cgroup_set_device(path, &dev, 0, &written, err, sizeof(err)) == 0 && written == 4);
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_42/step_batch/devices.deny", dir);
	read_file(path, got, sizeof(got));
	CHECK_STR(got, "c 195:2 rwm");

	/* a link in place of the job's cgroup is refused, never followed */
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_44", dir);
	CHECK(symlink("job_43", path) == 0);
	CHECK(vgpu_job_devices_cgroup(mount, "n1", 1000, 44, path, sizeof(path), err, sizeof(err)) == -1);
	CHECK_HAS(err, "is not a directory");
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_44", dir);
	CHECK(vgpu_cgroup_set_device(path, &dev, 1, &written, err, sizeof(err)) != 0);
	/* a cgroup without devices.allow (no devices controller) fails, naming the file */
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_42/step_0/task_0/devices.allow", dir);
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/devices/slurm_n1/uid_1000/job_42", dir);
	CHECK(vgpu_cgroup_set_device(path, &dev, 1, &written, err, sizeof(err)) != 0);
	CHECK_HAS(err, "task_0/devices.allow");

	CHECK(vgpu_char_device("/dev/null", &dev, err, sizeof(err)) == 0);
	CHECK(dev.major == 1 && dev.minor == 3);
	CHECK(vgpu_char_device(mounts, &dev, err, sizeof(err)) != 0);
	CHECK_HAS(err, "is not a character device");
}

/* Slurm's cgroup/v2 layout, and where the bridge looks for the job's devices constraint. */
static void test_cgroup2_layout(const char *dir)
{
	char mounts[256], mount[PATH_MAX], path[PATH_MAX], err[VGPU_ERR_MAX];
	struct vgpu_cgroup_root root;
	struct vgpu_device dev = { 195, 7 };
	unsigned count = 7;
	const char *const cgroups[] = {
		"/v2", "/v2/system.slice", "/v2/system.slice/slurmstepd.scope",
		"/v2/system.slice/slurmstepd.scope/job_42", "/v2/system.slice/n2_slurmstepd.scope",
		"/v2/system.slice/n2_slurmstepd.scope/job_42",
	};
	size_t k;

	/* a hybrid host: v1 devices win, as Slurm takes v1 there; the unified mount is still found */
	snprintf(mounts, sizeof(mounts), "%s/mounts2", dir);
	write_file(mounts, "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
			   "cgroup /sys/fs/cgroup/devices cgroup rw,relatime,devices 0 0\n"
			   "cgroup2 /other cgroup2 rw 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_V1);
	CHECK_STR(mount, "/sys/fs/cgroup/devices");
	CHECK(vgpu_find_cgroup2(mounts, mount, sizeof(mount)) == 0);
	CHECK_STR(mount, "/sys/fs/cgroup/unified");
	/* pure v2: the cgroup2 mount is where Slurm's job cgroups are */
	write_file(mounts, "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_V2);
	CHECK_STR(mount, "/sys/fs/cgroup");
	write_file(mounts, "cgroup /sys/fs/cgroup/devices cgroup rw,devices 0 0\n");
	CHECK(vgpu_find_cgroup2(mounts, mount, sizeof(mount)) == -1);
	write_file(mounts, "proc /proc proc rw 0 0\n");
	CHECK(vgpu_find_devices_cgroup(mounts, mount, sizeof(mount)) == VGPU_CGROUP_NONE);
	CHECK_STR(mount, "");

	for (k = 0; k < sizeof(cgroups) / sizeof(cgroups[0]); k++) {
		snprintf(path, sizeof(path), "%s%s", dir, cgroups[k]);
		CHECK(mkdir(path, 0755) == 0);
	}
	snprintf(mount, sizeof(mount), "%s/v2", dir);
	CHECK(vgpu_job_cgroup2(mount, "n1", 42, path, sizeof(path), err, sizeof(err)) == 0);
	CHECK_HAS(path, "/v2/system.slice/slurmstepd.scope/job_42");
	/* several slurmd per host: <node>_slurmstepd.scope comes first */
	CHECK(vgpu_job_cgroup2(mount, "n2", 42, path, sizeof(path), err, sizeof(err)) == 0);
	CHECK_HAS(path, "/v2/system.slice/n2_slurmstepd.scope/job_42");
	CHECK(vgpu_job_cgroup2(mount, "n1", 43, path, sizeof(path), err, sizeof(err)) == 1);
	CHECK(vgpu_job_cgroup2(mount, "n1/..", 42, path, sizeof(path), err, sizeof(err)) == -1);
	CHECK(vgpu_job_cgroup2(mount, "n1", 42, path, 20, err, sizeof(err)) == -1);
	CHECK_HAS(err, "too long");
	snprintf(path, sizeof(path), "%s/v2/system.slice/slurmstepd.scope/job_44", dir);
	CHECK(symlink("job_42", path) == 0);
	CHECK(vgpu_job_cgroup2(mount, "n1", 44, path, sizeof(path), err, sizeof(err)) == -1);
	CHECK_HAS(err, "is not a directory");

	/* the dispatch by kind: v2 takes the v2 layout (no uid in it); no cgroups, nothing constrained */
	root.kind = VGPU_CGROUP_V2;
	snprintf(root.mount, sizeof(root.mount), "%s", mount);
	CHECK(vgpu_job_cgroup(&root, "n1", 1000, 42, path, sizeof(path), err, sizeof(err)) == 0);
	CHECK_HAS(path, "/v2/system.slice/slurmstepd.scope/job_42");
	root.kind = VGPU_CGROUP_NONE;
	CHECK(vgpu_job_cgroup(&root, "n1", 1000, 42, path, sizeof(path), err, sizeof(err)) == 1);
	CHECK(vgpu_job_set_device(&root, path, &dev, 1, &count, err, sizeof(err)) == 0 && count == 0);
	/* a directory that is no cgroup has no device programs to ask about: a clear failure */
	snprintf(path, sizeof(path), "%s/v2/system.slice/slurmstepd.scope/job_42", dir);
	CHECK(vgpu_cgroup2_set_device(path, &dev, 1, &count, err, sizeof(err)) == -1);
	CHECK_HAS(err, "job_42: querying its device programs");
	CHECK(vgpu_cgroup2_set_device(path, &dev, 0, &count, err, sizeof(err)) == -1 && count == 0);
	snprintf(path, sizeof(path), "%s/v2/none", dir);
	CHECK(vgpu_cgroup2_set_device(path, &dev, 1, &count, err, sizeof(err)) == -1);
	CHECK_HAS(err, "No such file or directory");
}

/* The grant check's shape, and which programs may be wrapped. */
static void test_grant_program(void)
{
	struct bpf_insn check[VGPU_GRANT_CHECK_INSNS + 1], prog[4];
	char err[VGPU_ERR_MAX];
	unsigned calls = 0, exits = 0, lookups = 0;
	size_t n, i;

	memset(check, 0xa5, sizeof(check));
	n = vgpu_grant_check_insns(check, 9);
	CHECK(n == VGPU_GRANT_CHECK_INSNS);
	CHECK(check[VGPU_GRANT_CHECK_INSNS].code == 0xa5);	/* nothing written past the end */
	/* it starts by saving the request and ends by handing it back in r1 to the wrapped program */
	CHECK(check[0].code == (BPF_ALU64 | BPF_MOV | BPF_X) && check[0].dst_reg == BPF_REG_6
	      && check[0].src_reg == BPF_REG_1);
	CHECK(check[n - 1].code == (BPF_ALU64 | BPF_MOV | BPF_X) && check[n - 1].dst_reg == BPF_REG_1
	      && check[n - 1].src_reg == BPF_REG_6);
	for (i = 0; i < n; i++) {
		const uint8_t code = check[i].code;

		if (code == (BPF_JMP | BPF_CALL)) {
			calls++;
			CHECK(check[i].imm == BPF_FUNC_map_lookup_elem);
		} else if (code == (BPF_JMP | BPF_EXIT)) {
			exits++;
			/* its one exit allows: r0 = 1 just before */
			CHECK(i > 0 && check[i - 1].code == (BPF_ALU64 | BPF_MOV | BPF_K) && check[i - 1].imm == 1);
		} else if (BPF_CLASS(code) == BPF_JMP) {
			/* every other way out goes to the wrapped program's verdict */
			CHECK((long)i + 1 + check[i].off == (long)n - 1);
		} else if (code == (BPF_LD | BPF_DW | BPF_IMM)) {
			lookups++;
			CHECK(check[i].src_reg == BPF_PSEUDO_MAP_FD && check[i].imm == 9);
			i++;	/* the second half of the 64-bit load */
		}
	}
	CHECK(calls == 1 && exits == 1 && lookups == 1);

	/* Slurm's shape: loads, compares, verdicts */
	prog[0] = vgpu_bpf_insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
	prog[1] = vgpu_bpf_insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 1, 195);
	prog[2] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
	prog[3] = vgpu_bpf_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	CHECK(vgpu_wrappable_insns(prog, 4, err, sizeof(err)) == 0);
	CHECK(vgpu_wrappable_insns(prog, 0, err, sizeof(err)) == -1);
	CHECK_HAS(err, "no instructions");
	CHECK(vgpu_wrappable_insns(prog, VGPU_WRAPPED_INSNS_MAX + 1, err, sizeof(err)) == -1);
	CHECK_HAS(err, "more than " LIMIT(VGPU_WRAPPED_INSNS_MAX));
	prog[2] = vgpu_bpf_insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	CHECK(vgpu_wrappable_insns(prog, 4, err, sizeof(err)) == -1);
	CHECK_HAS(err, "instruction 2 calls a helper");
	prog[2] = vgpu_bpf_insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, 3);
	CHECK(vgpu_wrappable_insns(prog, 4, err, sizeof(err)) == -1);
	CHECK_HAS(err, "instruction 2 loads a map");
	prog[2] = vgpu_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_0, 0, 0, 0);
	prog[2].src_reg = 11;	/* BPF_REG_AX: constant blinding's */
	CHECK(vgpu_wrappable_insns(prog, 4, err, sizeof(err)) == -1);
	CHECK_HAS(err, "bpf_jit_harden");
}

/* ---- the agent's socket directory ---- */

static int record_seen(unsigned major, unsigned minor, void *ctx)
{
	struct collected *c = ctx;
	size_t used = strlen(c->text);

	snprintf(c->text + used, sizeof(c->text) - used, "%s%u:%u", used ? " " : "", major, minor);
	return 0;
}

static void test_socket_dir(const char *dir)
{
	char base[256], jobdir[300], path[400], err[VGPU_ERR_MAX];
	const int root = geteuid() == 0;
	const uid_t uid = root ? 65534 : geteuid();
	const gid_t gid = root ? 65534 : getegid();
	struct stat st;

	snprintf(base, sizeof(base), "%s/run/vgpu", dir);
	CHECK(vgpu_job_socket_dir(base, 42, jobdir, sizeof(jobdir)) == 0);
	snprintf(path, sizeof(path), "%s/job-42", base);
	CHECK_STR(jobdir, path);
	if (!root) {
		/* the directory checks want root's agent_socket_dir: only as root */
		CHECK(vgpu_prepare_socket_dir(base, 42, uid, gid, err, sizeof(err)) != 0);
		CHECK_HAS(err, "must be root's");
		return;
	}
	/* made with its parents, root's 0755, the job's directory the user's 0700 */
	CHECK(vgpu_prepare_socket_dir(base, 42, uid, gid, err, sizeof(err)) == 0);
	CHECK(stat(base, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0755);
	CHECK(lstat(jobdir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid && st.st_gid == gid
	      && (st.st_mode & 07777) == 0700);
	/* another step of the job: fine */
	CHECK(vgpu_prepare_socket_dir(base, 42, uid, gid, err, sizeof(err)) == 0);
	/* someone else's directory under the job's name: refused */
	CHECK(vgpu_prepare_socket_dir(base, 42, uid + 1, gid, err, sizeof(err)) != 0);
	CHECK_HAS(err, "exists but is not a directory of uid");
	CHECK(chmod(jobdir, 0755) == 0);
	CHECK(vgpu_prepare_socket_dir(base, 42, uid, gid, err, sizeof(err)) != 0);
	CHECK(chmod(jobdir, 0700) == 0);
	snprintf(path, sizeof(path), "%s/job-43", base);
	CHECK(symlink(jobdir, path) == 0);
	CHECK(vgpu_prepare_socket_dir(base, 43, uid, gid, err, sizeof(err)) != 0);
	CHECK(unlink(path) == 0);

	/* what the job left is removed with the directory; a link is removed, not followed */
	snprintf(path, sizeof(path), "%s/vgpu-n1.sock", jobdir);
	write_file(path, "x");
	snprintf(path, sizeof(path), "%s/sub", jobdir);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/sub/f", jobdir);
	write_file(path, "x");
	snprintf(path, sizeof(path), "%s/escape", jobdir);
	CHECK(symlink(dir, path) == 0);
	CHECK(vgpu_remove_socket_dir(base, 42, err, sizeof(err)) == 0);
	CHECK(lstat(jobdir, &st) != 0 && errno == ENOENT);
	CHECK(stat(dir, &st) == 0 && stat(base, &st) == 0);
	CHECK(vgpu_remove_socket_dir(base, 42, err, sizeof(err)) == 0);	/* none: fine */

	/* grant records: root's, per job and holder, read back by the job's later steps */
	{
		struct collected got = { "" };

		CHECK(vgpu_grant_records(base, 42, record_seen, &got) == 0);
		CHECK_STR(got.text, "");	/* none yet */
		CHECK(vgpu_grant_record_write(base, 42, 7, 195, 2, err, sizeof(err)) == 0);
		CHECK(vgpu_grant_record_write(base, 42, 8, 195, 3, err, sizeof(err)) == 0);
		CHECK(vgpu_grant_record_write(base, 420, 9, 195, 1, err, sizeof(err)) == 0);
		snprintf(path, sizeof(path), "%s/grants", base);
		CHECK(stat(path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0700);
		/* a record root did not write is not one */
		snprintf(path, sizeof(path), "%s/grants/42-99", base);
		write_file(path, "195 0\n");
		CHECK(chown(path, uid, gid) == 0);
		snprintf(path, sizeof(path), "%s/grants/42-98", base);
		write_file(path, "195 0 junk\n");
		CHECK(vgpu_grant_records(base, 42, record_seen, &got) == 0);
		CHECK(strstr(got.text, "195:2") != NULL && strstr(got.text, "195:3") != NULL);
		CHECK(strstr(got.text, "195:1") == NULL && strstr(got.text, "195:0") == NULL);
		CHECK(vgpu_grant_record_remove(base, 42, 7, err, sizeof(err)) == 0);
		CHECK(vgpu_grant_record_remove(base, 42, 7, err, sizeof(err)) == 0);	/* gone: fine */
		got.text[0] = '\0';
		CHECK(vgpu_grant_records(base, 42, record_seen, &got) == 0);
		CHECK_STR(got.text, "195:3");
		/* the job's end (or the start of a later job of that id) clears them all, and only its own */
		vgpu_grant_records_clear(base, 42);
		got.text[0] = '\0';
		CHECK(vgpu_grant_records(base, 42, record_seen, &got) == 0);
		CHECK_STR(got.text, "");
		CHECK(vgpu_grant_records(base, 420, record_seen, &got) == 0);
		CHECK_STR(got.text, "195:1");
	}

	/* an agent_socket_dir others may write into is refused, nothing is made in it */
	CHECK(chmod(base, 01777) == 0);
	CHECK(vgpu_prepare_socket_dir(base, 44, uid, gid, err, sizeof(err)) != 0);
	CHECK_HAS(err, "must be root's and writable by root alone");
	snprintf(path, sizeof(path), "%s/job-44", base);
	CHECK(lstat(path, &st) != 0);
	CHECK(chmod(base, 0755) == 0 && chown(base, uid, gid) == 0);
	CHECK(vgpu_prepare_socket_dir(base, 44, uid, gid, err, sizeof(err)) != 0);
	CHECK_HAS(err, "must be root's");
}

static void remove_all(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

static void test_grants(void)
{
	char dir[] = "/tmp/vgpu-bridge-unit-XXXXXX";

	CHECK(mkdtemp(dir) != NULL);
	test_grant_names();
	test_hostlists();
	test_gres_conf(dir);
	test_cgroup_tree(dir);
	test_cgroup2_layout(dir);
	test_grant_program();
	test_socket_dir(dir);
	remove_all(dir);
}

static struct vgpu_assembly assembly;
static struct vgpu_env env;

int main(void)
{
	struct vgpu_assembly *a = &assembly;
	struct vgpu_env *e = &env;

	signal(SIGPIPE, SIG_IGN);
	test_numbers();
	test_sanitize();
	test_config();
	test_reply_ok(a);
	test_reply_bad(a);
	test_done_reply();
	test_requests();
	test_auth();
	test_tres();
	test_local_only(a);
	test_env(a, e);
	test_transcripts(a, e);
	test_reply_fuzz(a, e);
	test_read_line();
	test_tracker_call();
	test_grants();
	printf("unit tests: %d checks, %d failed\n", checks, failures);
	return failures == 0 ? 0 : 1;
}
