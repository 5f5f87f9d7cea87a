/*
 * app.h: the payments application, wired to the HTTP server.
 *
 * app_open opens the store, the provider's ledger and the keys file; call
 * it in each worker process, after fork.  app_handle is the server's
 * handler.
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

void app_handle(void *app, enum req_status status, const struct request *req,
    struct response *resp);

#endif
