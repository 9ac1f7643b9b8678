/* Character-level checks of the strings that end up in a job's environment. */
#ifndef VGPU_VALIDATE_H
#define VGPU_VALIDATE_H

#include <stddef.h>

/* All return 0 when s[0..len) is acceptable, -1 otherwise. */

/* letters, digits and VGPU_HOST_CHARS, 1..VGPU_HOST_BYTES bytes, no leading '-' or '.' */
int vgpu_valid_hostname(const char *s, size_t len);
/* hex digits, ':' and '.', 2..45 bytes, at least one ':' (brackets stripped) */
int vgpu_valid_ipv6(const char *s, size_t len);
/* absolute, <= VGPU_SOCKET_PATH_BYTES, letters, digits and VGPU_SOCKET_PATH_CHARS, no "." or ".." component */
int vgpu_valid_socket_path(const char *s, size_t len);
/* letters, digits and VGPU_TOKEN_CHARS, 1..VGPU_TOKEN_BYTES bytes */
int vgpu_valid_token(const char *s, size_t len);
/* a Slurm node name: letters, digits and VGPU_NODE_CHARS, 1..VGPU_NODE_NAME_BYTES bytes */
int vgpu_valid_node(const char *s, size_t len);

#endif
