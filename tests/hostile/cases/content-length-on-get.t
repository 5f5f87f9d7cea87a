# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): a GET that declares a body
# which never comes: 400 bad-content-length.

request hostile: GET /payments
  as alice
  Content-Length: 100
expect: 400
  problem: bad-content-length
check: keys=0 payments=0 charges=0
