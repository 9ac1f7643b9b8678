/*
 * Shared limits and helpers of the vgpu SPANK bridge. Nothing here depends on
 * Slurm, so the unit tests build it without spank.h.
 */
#ifndef VGPU_COMMON_H
#define VGPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define VGPU_PLUGIN_NAME "vgpu_spank"

/* Longest line either side sends, newline included. */
#define VGPU_LINE_MAX 8192
/* Most vGPUs in one job's assembly on one node. */
#define VGPU_MAX 64
/* Highest local GPU index accepted from the tracker or CUDA_VISIBLE_DEVICES. */
#define VGPU_LOCAL_INDEX_MAX 1023
/* Host names per RFC 1035, IPv6 literals in brackets fit too. */
#define VGPU_HOST_MAX 253
#define VGPU_TOKEN_MAX 1024
/* sun_path of struct sockaddr_un is 108 bytes with its NUL. */
#define VGPU_SOCKET_PATH_MAX 107
#define VGPU_NODE_MAX 128
#define VGPU_ERR_MAX 512

#define VGPU_DEFAULT_WINDOW_BASE UINT64_C(0x100000000000)

/*
 * Strict decimal parse of the whole of s[0..len): digits only, no sign, no
 * blanks, no leading zeros except "0" itself, value <= max.
 * Returns 0 and stores the value, or -1.
 */
int vgpu_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out);

/* Same for "0x" followed by 1..16 hex digits. */
int vgpu_parse_hex64(const char *s, size_t len, uint64_t *out);

/*
 * Copies at most len bytes of s into dst (size cap) for a log message:
 * printable ASCII kept, everything else becomes '?', "..." marks a cut.
 * Always NUL-terminates when cap > 0.
 */
void vgpu_sanitize(char *dst, size_t cap, const char *s, size_t len);

/* "abcd...(57 chars)": enough to tell tokens apart in a log, never the secret. */
void vgpu_redact_token(char *dst, size_t cap, const char *token);

/* snprintf into err when err is not NULL; always returns -1. */
int vgpu_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
