-- wrk script: POST the body file named by BODY_FILE to PATH, as a desktop Chrome would (ingest reads
-- the User-Agent for browser, OS and device; wrk's own requests carry none).
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.path = os.getenv("BODY_PATH") or "/api/events"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
