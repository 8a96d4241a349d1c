-- wrk script: creates exactly N runs (env WRK_N) of workflow WRK_WORKFLOW,
-- spread over wrk's threads, and writes each new run id to
-- WRK_OUT.<thread> (one a line). A connection that asks after its thread's share
-- is sent gets GET /healthz; the thread stops after 4 x connections of those.
local n = tonumber(os.getenv("WRK_N") or "1000")
local key = os.getenv("WRK_KEY")
local workflow = os.getenv("WRK_WORKFLOW") or "conformance-approval"
local out_prefix = os.getenv("WRK_OUT") or "/tmp/runs"
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } tg_timespec;
int clock_gettime(int clk, tg_timespec *tp);
]]
local ts = ffi.new("tg_timespec")
-- Monotonic microseconds (wrk's own duration runs until it is interrupted).
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
  local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
  mine = math.floor(n / nthreads) + ((id < n % nthreads) and 1 or 0)
  sent, answered, failed, idle = 0, 0, 0, 0
  conns = tonumber(os.getenv("WRK_C") or "16")
  out = io.open(out_prefix .. "." .. id, "w")
  create = wrk.format("POST", "/runs",
    { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" },
    '{"workflowId":"' .. workflow .. '"}')
  health = wrk.format("GET", "/healthz")
end

function request()
  if sent < mine then
    if sent == 0 then first_us = now_us() end
    sent = sent + 1
    return create
  end
  return health
end

function response(status, headers, body)
  if body == '{"status":"ok"}' then
    -- wrk may take a request it never sends; every connection has been
    -- answered once it gets the idle request's answer a few times over.
    idle = idle + 1
    if idle >= 4 * conns then
      if out then out:close(); out = nil end
      local m = io.open((os.getenv("WRK_DONE") or "/tmp/wrk-done") .. "." .. id, "w")
      m:write("done\n"); m:close()
      wrk.thread:stop()
    end
    return
  end
  answered = answered + 1
  last_us = now_us()
  local run = body and string.match(body, '"runId"%s*:%s*"([^"]+)"')
  if status == 201 and run then
    out:write(run, "\n")
  else
    failed = failed + 1
  end
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
