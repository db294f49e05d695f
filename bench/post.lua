-- wrk script: POST the body file named by BODY_FILE to PATH.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.path = os.getenv("BODY_PATH") or "/api/events"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
