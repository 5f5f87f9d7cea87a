# SPDX-License-Identifier: MIT
"""HTTP/1.1 on loopback, one connection a request unless one is given."""

import http.client
import json

from lib import answers
from lib.common import DEADLINE, HOST


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # list of (name, value)
        self.body = body

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def brief(self):
        b = self.body[:200].decode("utf-8", "replace")
        return f"{self.status} {self.header('Content-Type')} {b!r}"


def http_request(port, method, path, body=None, headers=None, conn=None):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(HOST, port, timeout=DEADLINE.timeout())
    try:
        hdrs = {"Connection": "close"}
        hdrs.update(headers or {})
        try:
            conn.request(method, path, body=body, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the server may answer (413) before reading the whole body
        r = conn.getresponse()
        data = r.read()
        answers.record("http:%d" % port, method, path, r.status,
                       r.getheaders(), data, list(hdrs.items()))
        return Reply(r.status, r.getheaders(), data)
    finally:
        conn.close()

