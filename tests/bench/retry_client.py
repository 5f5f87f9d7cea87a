#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client that honours Retry-After, the way a real one does.

It sends one fresh payment with urllib3's Retry (read timeout 0.3 s; read
errors, 409, 502, 503 and 504 retried, Retry-After honoured, the POST
retried with the same Idempotency-Key and body) and prints how long it
took to hold the 201.  Usage: retry_client.py PORT BEARER [RUNS]
"""
import json
import secrets
import sys
import time

import urllib3
from urllib3.util import Retry, Timeout


def one(port, bearer):
    retry = Retry(total=30, connect=5, read=10, status=20, other=0,
                  allowed_methods=None, status_forcelist=[409, 502, 503, 504],
                  respect_retry_after_header=True, backoff_factor=0,
                  raise_on_status=False)
    http = urllib3.PoolManager(retries=retry, timeout=Timeout(connect=2.0, read=0.3))
    key = '"rc-' + secrets.token_hex(8) + '"'
    t0 = time.monotonic()
    r = http.request("POST", f"http://127.0.0.1:{port}/payments",
                     body=json.dumps({"amount": 10.00, "currency": "BRL"}),
                     headers={"Authorization": "Bearer " + bearer,
                              "Content-Type": "application/json",
                              "Idempotency-Key": key})
    took = time.monotonic() - t0
    history = [h.status for h in r.retries.history] if r.retries else []
    return r.status, took, history


def main():
    port, bearer = int(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for _ in range(runs):
        status, took, history = one(port, bearer)
        print(json.dumps({"status": status, "seconds": round(took, 3),
                          "retries": history}))


if __name__ == "__main__":
    main()
