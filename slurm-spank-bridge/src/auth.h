/*
 * Optional MUNGE authentication of tracker requests (auth=munge): the request
 * line gets a last field "munge=<credential>" whose payload is the line
 * before that field. libmunge is opened at run time, so the plugin neither
 * links it nor needs its headers to build.
 */
#ifndef VGPU_AUTH_H
#define VGPU_AUTH_H

#include <stddef.h>

#include "config.h"

#define VGPU_CRED_MAX 2048

/*
 * A MUNGE credential for payload[0..len) from munged at socket (NULL: the
 * library's default), NUL-terminated in cred.
 */
int vgpu_munge_encode(const char *socket, const char *payload, size_t len, char *cred,
		      size_t cap, char *err, size_t errlen);

/*
 * "<base> munge=<cred>\n" into buf, base being a request line without its
 * newline. Checks the credential's characters ([A-Za-z0-9+/=:]) and length.
 */
int vgpu_append_credential(char *buf, size_t cap, const char *base, const char *cred,
			   char *err, size_t errlen);

/*
 * The request line to send for base (no newline): base and "\n" with
 * auth=none; base, " munge=<credential for base>" and "\n" with auth=munge.
 * A fresh credential each call: munged refuses to decode one twice.
 */
int vgpu_finish_request(const struct vgpu_config *cfg, const char *base, char *buf, size_t cap,
			char *err, size_t errlen);

#endif
