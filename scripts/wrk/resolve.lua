-- wrk script: resolves each run listed in WRK_FILE once (lines
-- "tenant/run-id"), accepting its gate node WRK_NODE, spread over wrk's
-- threads. A connection that asks after its thread's share is
-- sent gets GET /healthz; the thread stops after 4 x connections of those.
local file = os.getenv("WRK_FILE")
local key = os.getenv("WRK_KEY")
local node = os.getenv("WRK_NODE") or "gate"
local body = os.getenv("WRK_BODY") or '{"resumeValue":{"action":"accept"}}'
local counter = 0

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

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
  local headers = { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }
  reqs = {}
  local i = 0
  for line in io.lines(file) do
    if i % nthreads == id and line ~= "" then
      local path = "/runs/" .. string.gsub(line, "/", "~2F") .. "/interrupts/" .. node
      table.insert(reqs, wrk.format("POST", path, headers, body))
    end
    i = i + 1
  end
  mine = #reqs
  sent, answered, failed, idle = 0, 0, 0, 0
  conns = tonumber(os.getenv("WRK_C") or "16")
  health = wrk.format("GET", "/healthz")
end

function request()
  if sent < mine then
    if sent == 0 then first_us = now_us() end
    sent = sent + 1
    return reqs[sent]
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
  if status ~= 200 then failed = failed + 1 end
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
