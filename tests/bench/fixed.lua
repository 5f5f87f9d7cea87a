-- SPDX-License-Identifier: MIT
-- fixed.lua: the same request on every connection, built once (wrk sends a
-- static request when the script defines no request()).
--
--   wrk ... -s fixed.lua URL -- method=GET path=/healthz [auth=SECRET]
--                               [key=IDEMPOTENCY-KEY] [body=JSON]

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")

function init(args)
   local opt = {}
   for _, a in ipairs(args) do
      local k, v = a:match("^([%w_]+)=(.*)$")
      if k then opt[k] = v end
   end
   wrk.method = opt.method or "GET"
   wrk.path = opt.path or "/"
   if opt.auth then wrk.headers["Authorization"] = "Bearer " .. opt.auth end
   if opt.key then wrk.headers["Idempotency-Key"] = '"' .. opt.key .. '"' end
   if opt.body then
      wrk.body = opt.body
      wrk.headers["Content-Type"] = "application/json"
   end
end
