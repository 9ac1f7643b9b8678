#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "common.h"

/* The slice of munge.h used here; stable ABI of libmunge.so.2. */
typedef struct munge_ctx *munge_ctx_t;
typedef int munge_err_t;
#define MUNGE_SUCCESS 0
#define MUNGE_OPT_SOCKET 8

typedef munge_ctx_t (*ctx_create_f)(void);
typedef void (*ctx_destroy_f)(munge_ctx_t);
typedef munge_err_t (*ctx_set_f)(munge_ctx_t, int, ...);
typedef munge_err_t (*encode_f)(char **, munge_ctx_t, const void *, int);
typedef const char *(*strerror_f)(munge_err_t);

#define LIBMUNGE "libmunge.so.2"

static int valid_cred(const char *c, size_t n)
{
	size_t i;

	if (n < 8 || n > VGPU_CRED_MAX - 1 || memcmp(c, "MUNGE:", 6) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		const char ch = c[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
		      || ch == '+' || ch == '/' || ch == '=' || ch == ':'))
			return -1;
	}
	return 0;
}

int vgpu_munge_encode(const char *socket, const char *payload, size_t len, char *cred,
		      size_t cap, char *err, size_t errlen)
{
	void *lib;
	ctx_create_f ctx_create;
	ctx_destroy_f ctx_destroy;
	ctx_set_f ctx_set;
	encode_f encode;
	strerror_f merr;
	munge_ctx_t ctx = NULL;
	char *out = NULL;
	munge_err_t rc;
	size_t n;
	int ret = -1;

	if (len > VGPU_REQUEST_MAX)
		return vgpu_fail(err, errlen, "MUNGE payload too long");
	lib = dlopen(LIBMUNGE, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL)
		return vgpu_fail(err, errlen, "auth=munge: cannot load %s: %s", LIBMUNGE, dlerror());
	/* POSIX: object pointers from dlsym convert to function pointers */
	*(void **)&ctx_create = dlsym(lib, "munge_ctx_create");
	*(void **)&ctx_destroy = dlsym(lib, "munge_ctx_destroy");
	*(void **)&ctx_set = dlsym(lib, "munge_ctx_set");
	*(void **)&encode = dlsym(lib, "munge_encode");
	*(void **)&merr = dlsym(lib, "munge_strerror");
	if (!ctx_create || !ctx_destroy || !ctx_set || !encode || !merr) {
		vgpu_fail(err, errlen, "auth=munge: %s lacks the MUNGE functions", LIBMUNGE);
		goto fail;
	}
	ctx = ctx_create();
	if (ctx == NULL) {
		vgpu_fail(err, errlen, "auth=munge: cannot create a MUNGE context");
		goto fail;
	}
	if (socket != NULL && (rc = ctx_set(ctx, MUNGE_OPT_SOCKET, socket)) != MUNGE_SUCCESS) {
		vgpu_fail(err, errlen, "auth=munge: socket %s: %s", socket, merr(rc));
		goto fail;
	}
	rc = encode(&out, ctx, payload, (int)len);
	if (rc != MUNGE_SUCCESS) {
		vgpu_fail(err, errlen, "auth=munge: cannot get a credential from munged%s%s: %s",
			  socket != NULL ? " at " : "", socket != NULL ? socket : "", merr(rc));
		goto fail;
	}
	n = out == NULL ? 0 : strnlen(out, VGPU_CRED_MAX);
	if (valid_cred(out, n) != 0 || n >= cap) {
		vgpu_fail(err, errlen, "auth=munge: unexpected credential from libmunge");
		goto fail;
	}
	memcpy(cred, out, n);
	cred[n] = '\0';
	ret = 0;
fail:
	free(out);
	if (ctx != NULL)
		ctx_destroy(ctx);
	dlclose(lib);
	return ret;
}

int vgpu_append_credential(char *buf, size_t cap, const char *base, const char *cred,
			   char *err, size_t errlen)
{
	const size_t cn = strnlen(cred, VGPU_CRED_MAX);
	int n;

	if (valid_cred(cred, cn) != 0)
		return vgpu_fail(err, errlen, "malformed MUNGE credential");
	n = snprintf(buf, cap, "%s " VGPU_CREDENTIAL_PREFIX "%s\n", base, cred);
	if (n < 0 || (size_t)n >= cap)
		return vgpu_fail(err, errlen, "request does not fit in %zu bytes", cap);
	return n;
}

int vgpu_finish_request(const struct vgpu_config *cfg, const char *base, char *buf, size_t cap,
			char *err, size_t errlen)
{
	char cred[VGPU_CRED_MAX];
	const size_t len = strnlen(base, VGPU_REQUEST_MAX);

	if (cfg->auth == VGPU_AUTH_NONE) {
		const int n = snprintf(buf, cap, "%s\n", base);

		if (n < 0 || (size_t)n >= cap)
			return vgpu_fail(err, errlen, "request does not fit in %zu bytes", cap);
		return n;
	}
	if (vgpu_munge_encode(cfg->munge_socket[0] != '\0' ? cfg->munge_socket : NULL, base, len,
			      cred, sizeof(cred), err, errlen) != 0)
		return -1;
	return vgpu_append_credential(buf, cap, base, cred, err, errlen);
}
