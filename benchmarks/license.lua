-- wrk script for benchmarks/license.sh: POSTs pre-generated license-request bodies, each
-- once (every body holds its own SPC nonce). Arguments after `--`: BODIES_FILE THREADS CRT.
--
-- The client shares the two cores with the server it measures, so it does as little as it
-- can per request: every request is formatted once, in init, and answers are not handed to
-- Lua (a `response` function makes wrk collect every answer's headers and body for it). Until
-- 2026-11-28 both happened per request and wrk took about half a core; now about a quarter.
-- wrk still counts the answers that are not 2xx ("Non-2xx or 3xx responses"); to see which
-- statuses and the first refusal's body, run with LICENSE_BENCH_REFUSALS=1.
local requests = {}
local index = 0
local thread_count = 0
local threads = {}

function setup(thread)
   thread:set("thread_number", thread_count)
   thread_count = thread_count + 1
   threads[#threads + 1] = thread
end

function init(args)
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["Accept"] = "application/octet-stream"
   wrk.headers["X-BOLT-OFFLINE-LICENSE"] = "true"
   wrk.headers["X-BC-CRT-CONFIG"] = args[3]
   local file = assert(io.open(args[1], "r"))
   local threads = tonumber(args[2])
   local n = 0
   for line in file:lines() do
      if n % threads == thread_number then requests[#requests + 1] = wrk.format(nil, nil, nil, line) end
      n = n + 1
   end
   file:close()
end

function request()
   index = index + 1
   -- Past the end requests repeat: replays answer 403 and wrk counts them as non-2xx.
   if index > #requests then index = 1 end
   return requests[index]
end

if os.getenv("LICENSE_BENCH_REFUSALS") == "1" then
   -- Per thread: how many answers of each status other than 200 and 204, and the first such
   -- answer's body (printed at the end).
   statuses = {}
   first_refusal = nil

   function response(status, headers, body)
      if status ~= 200 and status ~= 204 then
         statuses[status] = (statuses[status] or 0) + 1
         if first_refusal == nil then first_refusal = string.sub(body or "", 1, 300) end
      end
   end

   function done(summary, latency, requests)
      local total = {}
      for _, thread in ipairs(threads) do
         for status, n in pairs(thread:get("statuses")) do total[status] = (total[status] or 0) + n end
      end
      for status, n in pairs(total) do io.write(string.format("refused with status %d: %d\n", status, n)) end
      for _, thread in ipairs(threads) do
         local body = thread:get("first_refusal")
         if body ~= nil then io.write("refused with status (first answer): " .. body .. "\n") end
      end
   end
end
