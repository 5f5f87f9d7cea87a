-- SPDX-License-Identifier: MIT
-- report.lua: wrk's done() for tests/bench/run.py, loaded by fixed.lua and
-- keys.lua.  Prints one line, "WRK-JSON " and a JSON object: request count,
-- duration, socket errors, non-2xx/3xx answers and latency percentiles in
-- microseconds, for the driver to parse instead of wrk's own text.

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'WRK-JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"min":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency.min, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency.max, latency.mean))
end
