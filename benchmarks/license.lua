-- wrk script for benchmarks/license.sh: POSTs pre-generated license-request bodies, each
-- once (every body holds its own SPC nonce). Arguments after `--`: BODIES_FILE THREADS CRT.
local bodies = {}
local index = 0
local thread_count = 0
local threads = {}
-- Per thread: how many answers of each status other than 200 and 204, and the first such
-- answer's body (printed at the end).
statuses = {}
first_refusal = nil

function setup(thread)
   thread:set("thread_number", thread_count)
   thread_count = thread_count + 1
   threads[#threads + 1] = thread
end

function init(args)
   local file = assert(io.open(args[1], "r"))
   local threads = tonumber(args[2])
   local n = 0
   for line in file:lines() do
      if n % threads == thread_number then bodies[#bodies + 1] = line end
      n = n + 1
   end
   file:close()
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["Accept"] = "application/octet-stream"
   wrk.headers["X-BOLT-OFFLINE-LICENSE"] = "true"
   wrk.headers["X-BC-CRT-CONFIG"] = args[3]
end

function request()
   index = index + 1
   -- Past the end bodies repeat: replays answer 403 and wrk counts them as non-2xx.
   if index > #bodies then index = 1 end
   return wrk.format(nil, nil, nil, bodies[index])
end

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
