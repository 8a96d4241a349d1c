-- wrk script: creates exactly N runs (env WRK_N) of workflow WRK_WORKFLOW,
-- spread over wrk's threads, and writes each new run id to
-- WRK_OUT.<thread> (one a line). Sending, timing and stopping: common.lua.
local n = tonumber(os.getenv("WRK_N") or "1000")
local key = os.getenv("WRK_KEY")
local workflow = os.getenv("WRK_WORKFLOW") or "conformance-approval"
local out_prefix = os.getenv("WRK_OUT") or "/tmp/runs"
local create

function prepare(id, nthreads)
  out = io.open(out_prefix .. "." .. id, "w")
  create = wrk.format("POST", "/runs",
    { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" },
    '{"workflowId":"' .. workflow .. '"}')
  return math.floor(n / nthreads) + ((id < n % nthreads) and 1 or 0)
end

function nth_request(i)
  return create
end

function succeeded(status, body)
  local run = body and string.match(body, '"runId"%s*:%s*"([^"]+)"')
  if status == 201 and run then
    out:write(run, "\n")
    return true
  end
  return false
end

function finish()
  if out then out:close(); out = nil end
end

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "scripts/wrk/") .. "common.lua")
