-- SPDX-License-Identifier: MIT
-- keys.lua: POST /payments with an Idempotency-Key chosen per request.
--
--   wrk ... -s keys.lua URL -- mode=fresh  auth=SECRET body=JSON prefix=P
--       a key never sent before: P-THREAD-N, N counting per thread (P is
--       random per round, so rounds and runs never meet)
--   wrk ... -s keys.lua URL -- mode=random auth=SECRET body=JSON prefix=P count=C
--       one of the C stored keys P0 .. P(C-1), uniformly at random (replays)
--   auths=S1,S2,... in place of auth: each request's account is the next
--       of these secrets, in turn (many accounts)

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")

local nthreads = 0

function setup(thread)
   thread:set("tid", nthreads)
   nthreads = nthreads + 1
end

local opt = {}
local counter = 0
local headers = {}
local auths = {}

function init(args)
   for _, a in ipairs(args) do
      local k, v = a:match("^([%w_]+)=(.*)$")
      if k then opt[k] = v end
   end
   opt.count = tonumber(opt.count or "1")
   headers["Authorization"] = "Bearer " .. (opt.auth or "")
   auths = {}
   for s in (opt.auths or ""):gmatch("[^,]+") do
      auths[#auths + 1] = "Bearer " .. s
   end
   headers["Content-Type"] = "application/json"
   math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
end

function request()
   local key
   if opt.mode == "random" then
      key = opt.prefix .. math.random(0, opt.count - 1)
   else
      counter = counter + 1
      key = opt.prefix .. "-" .. (tid or 0) .. "-" .. counter
   end
   headers["Idempotency-Key"] = '"' .. key .. '"'
   if #auths > 0 then
      headers["Authorization"] = auths[counter % #auths + 1]
   end
   return wrk.format("POST", "/payments", headers, opt.body)
end
