/* SPDX-License-Identifier: MIT */
/*
 * app.h: the payments application, wired to the HTTP server.
 *
 * app_open opens the store, the provider and the keys file; call it in
 * each worker process, after fork.  It fails, before it opens anything,
 * when cfg names no provider (config_provider_check).  app_handle is the
 * server's handler.
 */
#ifndef PAY_APP_H
#define PAY_APP_H

#include "cfg.h"
#include "request.h"
#include "response.h"

struct app;

int app_open(const struct config *cfg, struct app **out, char *err,
    size_t errlen);
void app_close(struct app *a);

struct auth_keys;

/*
 * Loads cfg's keys file (IDEM_KEYS_FILE) as app_open does.  With
 * IDEM_AUTH=bearer the file must exist: without it no request could
 * authenticate, so a missing file is an error at start, not an empty
 * set; with IDEM_AUTH=remote-user the keys are not used and a missing
 * file is none.  0 (*out owned by the caller, auth_keys_free), or -1 with
 * a sentence naming IDEM_KEYS_FILE in err.
 */
int app_keys_load(const struct config *cfg, struct auth_keys **out,
    char *err, size_t errlen);

/*
 * What a harness (tests/sim) puts in place of what app_open would open:
 * the library's handle, opened by open_idem instead of idem_open (NULL:
 * idem_open; a harness's own store backend, idem_backend.h, which only
 * tests reach), the library's clock (NULL: the system's) and a provider
 * (NULL: the one cfg names, which it must; else the app's own from then
 * on, closed by app_close).
 */
struct provider;
struct app_inject {
	int (*open_idem)(const struct idem_options *opt, struct idem **out);
	uint64_t (*clock)(void *ctx);
	void *clock_ctx;
	struct provider *provider;
};

/* app_open with inj (may be NULL: app_open). */
int app_open_with(const struct config *cfg, const struct app_inject *inj,
    struct app **out, char *err, size_t errlen);

void app_handle(void *app, enum req_status status, const struct request *req,
    struct response *resp);

/*
 * The store and the provider the handlers use, opened now if they are not
 * open yet (env->open_rc says whether they are): what a completer running
 * beside the handlers (tests/sim) passes to pay_resume_run.
 */
struct pay_env;
void app_env(struct app *a, struct pay_env *env);

#endif
