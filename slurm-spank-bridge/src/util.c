#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

int vgpu_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s == NULL || len == 0 || len > 20)
		return -1;
	if (len > 1 && s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vgpu_parse_hex64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s == NULL || len < 3 || len > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -1;
	for (i = 2; i < len; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return -1;
		v = (v << 4) | (uint64_t)d;
	}
	*out = v;
	return 0;
}

void vgpu_sanitize(char *dst, size_t cap, const char *s, size_t len)
{
	size_t i, n;
	int cut = 0;

	if (cap == 0)
		return;
	n = s == NULL ? 0 : strnlen(s, len);
	if (n >= cap) {
		cut = cap >= 4;
		n = cut ? cap - 4 : cap - 1;
	}
	for (i = 0; i < n; i++)
		dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (cut) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
}

void vgpu_redact_token(char *dst, size_t cap, const char *token)
{
	const size_t len = strnlen(token, VGPU_TOKEN_BYTES + 1);
	char head[8];

	/* A short token would be given away by its first characters. */
	if (len < 16) {
		snprintf(dst, cap, "(%zu chars)", len);
		return;
	}
	vgpu_sanitize(head, 5, token, 4);
	snprintf(dst, cap, "%s...(%zu chars)", head, len);
}

int vgpu_fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err != NULL && errlen > 0) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}
