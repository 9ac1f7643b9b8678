#include <string.h>

#include "common.h"
#include "validate.h"

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int all_in(const char *s, size_t len, const char *extra)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_alnum(s[i]) && (s[i] == '\0' || strchr(extra, s[i]) == NULL))
			return -1;
	return 0;
}

int vgpu_valid_hostname(const char *s, size_t len)
{
	if (len == 0 || len > VGPU_HOST_BYTES || s[0] == '-' || s[0] == '.')
		return -1;
	return all_in(s, len, VGPU_HOST_CHARS);
}

int vgpu_valid_ipv6(const char *s, size_t len)
{
	size_t i;

	if (len < 2 || len > 45 || memchr(s, ':', len) == NULL)
		return -1;
	for (i = 0; i < len; i++) {
		const char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
		      || c == ':' || c == '.'))
			return -1;
	}
	return 0;
}

int vgpu_valid_socket_path(const char *s, size_t len)
{
	size_t i, start;

	if (len < 2 || len > VGPU_SOCKET_PATH_BYTES || s[0] != '/' || all_in(s, len, VGPU_SOCKET_PATH_CHARS) != 0)
		return -1;
	/* every component between slashes: not "." and not ".." */
	for (start = 1, i = 1; i <= len; i++) {
		if (i == len || s[i] == '/') {
			const size_t n = i - start;

			if ((n == 1 && s[start] == '.') || (n == 2 && s[start] == '.' && s[start + 1] == '.'))
				return -1;
			start = i + 1;
		}
	}
	return 0;
}

int vgpu_valid_token(const char *s, size_t len)
{
	if (len == 0 || len > VGPU_TOKEN_BYTES)
		return -1;
	return all_in(s, len, VGPU_TOKEN_CHARS);
}

int vgpu_valid_node(const char *s, size_t len)
{
	if (len == 0 || len > VGPU_NODE_NAME_BYTES || s[0] == '-')
		return -1;
	return all_in(s, len, VGPU_NODE_CHARS);
}
