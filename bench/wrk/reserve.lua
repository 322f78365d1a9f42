-- wrk script: 2-seat explicit reserves on one event, each request from the next customer of a
-- token file (one bearer token per line) with a fresh Idempotency-Key. Environment:
-- FRONTROW_WRK_EVENT (event id), FRONTROW_WRK_TOKENS (token file), FRONTROW_WRK_ROWS and
-- FRONTROW_WRK_SEATS (the event's one section "S": rows 1..ROWS of SEATS seats).
local tokens = {}
for line in io.lines(os.getenv("FRONTROW_WRK_TOKENS")) do
  tokens[#tokens + 1] = line
end
local event = os.getenv("FRONTROW_WRK_EVENT")
local rows = tonumber(os.getenv("FRONTROW_WRK_ROWS"))
local seats = tonumber(os.getenv("FRONTROW_WRK_SEATS"))
local path = "/events/" .. event .. "/reservations"

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

local n = 0
function init(args)
  math.randomseed(id * 7919)
end

function request()
  n = n + 1
  local token = tokens[((n * 31 + id) % #tokens) + 1]
  local row = math.random(1, rows)
  local seat = math.random(1, seats - 1)
  local body = string.format('{"seats":["S-%d-%d","S-%d-%d"]}', row, seat, row, seat + 1)
  return wrk.format("POST", path, {
    ["Authorization"] = "Bearer " .. token,
    ["Idempotency-Key"] = string.format("wrk-%d-%d", id, n),
    ["Content-Type"] = "application/json",
  }, body)
end

function done(summary, latency, requests)
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
