-- Shared by the wrk scripts of scripts/load-wrk.sh (loaded with dofile after
-- the script defines its hooks). Each wrk thread sends its share of the
-- requests exactly once, timing them itself (wrk's own duration runs until
-- it is interrupted); a connection that asks after the share is sent gets
-- GET /healthz, and the thread stops after 4 x connections of those, when
-- every connection has been answered. done() prints one "WRK …" line.
--
-- Hooks the script defines before loading this file:
--   prepare(id, nthreads) -> how many requests this thread sends
--   nth_request(i)        -> the i-th request (1-based), from wrk.format
--   succeeded(status, body) -> whether an answer counts as success
--   finish()              -> optional, when the thread stops
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } tg_timespec;
int clock_gettime(int clk, tg_timespec *tp);
]]
local ts = ffi.new("tg_timespec")
-- Monotonic microseconds.
local function now_us()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  mine = prepare(id, tonumber(os.getenv("WRK_THREADS") or "1"))
  sent, answered, failed, idle = 0, 0, 0, 0
  conns = tonumber(os.getenv("WRK_C") or "16")
  health = wrk.format("GET", "/healthz")
end

function request()
  if sent < mine then
    if sent == 0 then first_us = now_us() end
    sent = sent + 1
    return nth_request(sent)
  end
  return health
end

function response(status, headers, body)
  if body == '{"status":"ok"}' then
    -- wrk may take a request it never sends; every connection has been
    -- answered once it gets the idle request's answer a few times over.
    idle = idle + 1
    if idle >= 4 * conns then
      if finish then finish() end
      local m = io.open((os.getenv("WRK_DONE") or "/tmp/wrk-done") .. "." .. id, "w")
      m:write("done\n"); m:close()
      wrk.thread:stop()
    end
    return
  end
  answered = answered + 1
  last_us = now_us()
  if not succeeded(status, body) then failed = failed + 1 end
end

function done(summary, latency, requests)
  local failed, answered, first, last = 0, 0, nil, 0
  for _, t in ipairs(threads) do
    local f = t:get("first_us")
    if f and (not first or f < first) then first = f end
    last = math.max(last, t:get("last_us") or 0)
    failed = failed + (t:get("failed") or 0)
    answered = answered + (t:get("answered") or 0)
  end
  io.write(string.format("WRK answered=%d duration_us=%d p50_us=%d p99_us=%d failed=%d\n",
    answered, last - (first or last), latency:percentile(50), latency:percentile(99), failed))
end
