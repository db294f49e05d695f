-- wrk script: POST the body file named by BODY_FILE to PATH, as a desktop Chrome would (ingest reads
-- the User-Agent for browser, OS and device; wrk's own requests carry none).
-- FORWARDED_FOR (comma-separated addresses): each request carries the next one as X-Forwarded-For,
-- in turn, as requests from many clients behind a proxy would. The requests are made once, here.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.path = os.getenv("BODY_PATH") or "/api/events"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

local forwarded = os.getenv("FORWARDED_FOR")
if forwarded and forwarded ~= "" then
  local requests = {}
  local next = 0
  function init(args)
    for address in string.gmatch(forwarded, "[^,]+") do
      wrk.headers["X-Forwarded-For"] = address
      requests[#requests + 1] = wrk.format()
    end
  end
  function request()
    next = next % #requests + 1
    return requests[next]
  end
end
