# SPDX-License-Identifier: MIT
"""Records the answers a suite sees, one JSON object a line, for the
conformance check against the OpenAPI description (tests/openapi/check.py).

Nothing is recorded unless IDEM_ANSWERS names a file (tests/cgi.test,
tests/cgi-pg.test and tests/live.test set it); lines are appended under a
lock, so the threads of a runner may record at once.  Each line holds the
request's method, target and routed path (percent-decoded, a mount prefix
taken off), the request's header names, the answer's status, headers and
body (base64), and where it was seen (the scenario or the port)."""

import base64
import json
import os
import threading
import urllib.parse

_LOCK = threading.Lock()


def enabled():
    return bool(os.environ.get("IDEM_ANSWERS"))


def routed_path(target, mount=None):
    """The path the responder routes on: percent-decoded, without the
    query and the mount prefix."""
    path = target.partition("?")[0]
    raw = urllib.parse.unquote_to_bytes(path)
    text = raw.decode("utf-8", "replace")
    if mount and (text == mount or text.startswith(mount + "/")):
        text = text[len(mount):] or "/"
    return text


def _text(s):
    if isinstance(s, bytes):
        return s.decode("latin-1")
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def record(where, method, target, status, headers, body, request_headers=(),
           path=None):
    """Appends one answer; headers are (name, value) pairs."""
    name = os.environ.get("IDEM_ANSWERS")
    if not name:
        return
    line = json.dumps({
        "where": where,
        "method": _text(method or ""),
        "target": _text(target or ""),
        "path": _text(path if path is not None else routed_path(target or "")),
        "request_headers": sorted({_text(n).lower()
                                   for n, _ in request_headers}),
        "status": status,
        "headers": [[_text(n), _text(v)] for n, v in headers],
        "body": base64.b64encode(body or b"").decode("ascii"),
    }, sort_keys=True) + "\n"
    with _LOCK, open(name, "a", encoding="utf-8") as f:
        f.write(line)
