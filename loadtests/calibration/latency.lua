-- latency.lua: wrk's latency figures as one machine-readable line.
--
--   wrk -t1 -c10 -d5s --latency -s loadtests/calibration/latency.lua http://127.0.0.1:8080/delay/50
--
-- The request is wrk's own static GET of the URL (no request() here, so wrk
-- sends it as fast as it can). At the end one line:
--   WRK_JSON {"requests":N,"duration_s":..,"rps":..,"mean_ms":..,"stdev_ms":..,
--             "min_ms":..,"p50_ms":..,"p75_ms":..,"p90_ms":..,"p99_ms":..,
--             "p999_ms":..,"max_ms":..,"connect_errors":N,"read_errors":N,
--             "write_errors":N,"timeouts":N,"status_errors":N}
-- The percentiles are wrk's: measured from when a request was written, after
-- wrk 4's own correction (stats_correct: every sample longer than twice the
-- mean interval between a connection's requests also stands for the requests
-- that connection would have sent meanwhile). status_errors counts status >= 400.

local function ms(us)
  return us / 1000
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,"mean_ms":%.3f,"stdev_ms":%.3f,' ..
    '"min_ms":%.3f,"p50_ms":%.3f,"p75_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"p999_ms":%.3f,' ..
    '"max_ms":%.3f,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
    '"status_errors":%d}\n',
    summary.requests, seconds, seconds > 0 and summary.requests / seconds or 0,
    ms(latency.mean), ms(latency.stdev), ms(latency.min),
    ms(latency:percentile(50)), ms(latency:percentile(75)), ms(latency:percentile(90)),
    ms(latency:percentile(99)), ms(latency:percentile(99.9)), ms(latency.max),
    e.connect, e.read, e.write, e.timeout, e.status))
end
