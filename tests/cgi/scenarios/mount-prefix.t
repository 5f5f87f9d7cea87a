# IDEM_MOUNT strips a path prefix: the responder routes on SCRIPT_NAME +
# PATH_INFO less the mount, whichever way the web server splits the path.

env IDEM_MOUNT=/api

request split: GET /healthz
  env SCRIPT_NAME=/api
expect: 200
  json: {"status": "ok"}

request joined: GET /api/healthz
expect: 200
  json: {"status": "ok"}

