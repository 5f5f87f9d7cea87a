# RFC 3875 4.3.3: for HEAD the script returns the header fields and MUST NOT
# provide a message body.

request head: HEAD /healthz
expect: 200
  body:
