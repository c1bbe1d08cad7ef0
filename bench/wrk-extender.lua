-- wrk script for bin/slicefit: POSTs one ExtenderArgs body over keep-alive connections, as
-- kube-scheduler does. The body comes from bench_extender (BENCH_BODIES=build), or BODY=FILE.
--   wrk -t1 -c1 -d60s --latency -s bench/wrk-extender.lua http://127.0.0.1:8888/filter
local f = assert(io.open(os.getenv("BODY") or "build/extender-args.json", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
