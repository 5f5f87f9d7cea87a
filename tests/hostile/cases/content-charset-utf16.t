# RFC 8259 section 8.1: JSON is UTF-8, and application/json has no charset
# parameter, so "charset=utf-16" changes nothing: a UTF-16 body is not JSON
# text, 400 malformed-json, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-charset-utf16"
  Content-Type: application/json; charset=utf-16
  body: {{byte:00}"{byte:00}a{byte:00}m{byte:00}o{byte:00}u{byte:00}n{byte:00}t{byte:00}"{byte:00}:{byte:00} {byte:00}1{byte:00}0{byte:00}0{byte:00}.{byte:00}0{byte:00}0{byte:00},{byte:00} {byte:00}"{byte:00}c{byte:00}u{byte:00}r{byte:00}r{byte:00}e{byte:00}n{byte:00}c{byte:00}y{byte:00}"{byte:00}:{byte:00} {byte:00}"{byte:00}B{byte:00}R{byte:00}L{byte:00}"{byte:00}}{byte:00}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
