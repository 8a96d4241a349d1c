-- wrk script: resolves each run listed in WRK_FILE once (lines
-- "tenant/run-id"), accepting its gate node WRK_NODE, spread over wrk's
-- threads. Sending, timing and stopping: common.lua.
local file = os.getenv("WRK_FILE")
local key = os.getenv("WRK_KEY")
local node = os.getenv("WRK_NODE") or "gate"
local body = os.getenv("WRK_BODY") or '{"resumeValue":{"action":"accept"}}'
local reqs = {}

function prepare(id, nthreads)
  local headers = { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }
  local i = 0
  for line in io.lines(file) do
    if i % nthreads == id and line ~= "" then
      local path = "/runs/" .. string.gsub(line, "/", "~2F") .. "/interrupts/" .. node
      table.insert(reqs, wrk.format("POST", path, headers, body))
    end
    i = i + 1
  end
  return #reqs
end

function nth_request(i)
  return reqs[i]
end

function succeeded(status, body)
  return status == 200
end

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "scripts/wrk/") .. "common.lua")
