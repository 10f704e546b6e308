-- notes.lua: the load tests' request mixes for wrk 4 (LuaJIT).
--
-- One script for every workload; MODE picks it:
--   read    70% GET /notes/{random id}, 30% GET /notes?tag={one of 8 tags}
--   write   50% POST /notes, 50% PUT /notes/{random id}
--   mixed   80% the read mix, 20% the write mix
--   json    GET /json
--   hello   GET /
--   status  GET /status
--   primes  GET /primes
--   static  GET /static/app.min.js (loadtests/static/, ~88 KB)
-- The shares mirror loadtests/mixes.json (loadtests/k6/test_mix.mjs checks
-- that they agree). Random ids are 1..MAX_ID (default 200000).
--
--   MODE=mixed wrk -t2 -c100 -d3m --latency -s loadtests/wrk/notes.lua http://127.0.0.1:8080
--
-- At the end it prints requests, duration, req/s, latency percentiles, socket
-- errors and non-2xx responses, then one machine-readable line:
--   WRK_JSON {"mode":"read","requests":N,"duration_s":..,"rps":..,"p50_ms":..,
--             "p95_ms":..,"p99_ms":..,"max_ms":..,"non2xx":N,"socket_errors":N}
-- With BREAKDOWN=1 the line also carries counts per request name (the names
-- of mixes.json), between "non2xx" and "socket_errors" (see "per-name
-- breakdown" below):
--   ...,"non2xx":N,"sent":{"GET /notes/:id":N,..},
--       "responses":{"GET /notes/:id 200":N,..,"? 503":N},"socket_errors":N}

local MODE = os.getenv("MODE") or "read"
local MAX_ID = tonumber(os.getenv("MAX_ID") or "200000")

local TAGS = { "js", "ts", "node", "bun", "deno", "postgres", "http", "perf" }
local NOTE_BODY = string.rep("Seeded note body for the JS test. ", 4)

-- kind = { method, path, expected status }; {id} and {tag} are filled per request
local REQUESTS = {
  get_note    = { "GET",  "/notes/{id}",           200 },
  list_by_tag = { "GET",  "/notes?tag={tag}",      200 },
  insert_note = { "POST", "/notes",                201 },
  update_note = { "PUT",  "/notes/{id}",           200 },
  get_json    = { "GET",  "/json",                 200 },
  get_hello   = { "GET",  "/",                     200 },
  get_status  = { "GET",  "/status",               200 },
  get_primes  = { "GET",  "/primes",               200 },
  get_static  = { "GET",  "/static/app.min.js",    200 },
}

-- mode = { { kind or mode, percent }, ... }
local MIXES = {
  read   = { { "get_note", 70 }, { "list_by_tag", 30 } },
  write  = { { "insert_note", 50 }, { "update_note", 50 } },
  mixed  = { { "read", 80 }, { "write", 20 } },
  json   = { { "get_json", 100 } },
  hello  = { { "get_hello", 100 } },
  status = { { "get_status", 100 } },
  primes = { { "get_primes", 100 } },
  static = { { "get_static", 100 } },
}

if not MIXES[MODE] then
  local known = {}
  for name in pairs(MIXES) do known[#known + 1] = name end
  table.sort(known)
  io.stderr:write("notes.lua: unknown MODE '" .. MODE .. "' (known: " .. table.concat(known, ", ") .. ")\n")
  os.exit(2)
end
if not MAX_ID or MAX_ID < 1 or MAX_ID ~= math.floor(MAX_ID) then
  io.stderr:write("notes.lua: MAX_ID must be a positive integer\n")
  os.exit(2)
end

local JSON_HEADERS = { ["Content-Type"] = "application/json" }

-- ------------------------------------------------------------ main thread

local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  threads[#threads + 1] = thread
end

-- ------------------------------------------------------------ worker threads

-- global, so that done() can read it with thread:get("non2xx")
non2xx = 0
local sent = 0

function init(args)
  math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919)
  -- the first values of a freshly seeded generator are poorly spread
  for _ = 1, 10 do math.random() end
end

local function pick(entries)
  local total = 0
  for _, e in ipairs(entries) do total = total + e[2] end
  local x = math.random() * total
  for _, e in ipairs(entries) do
    if x < e[2] then return e[1] end
    x = x - e[2]
  end
  return entries[#entries][1]
end

-- follows nested modes ("mixed" -> "read" -> "get_note") down to a request kind
local function draw_kind(mode)
  local key = mode
  for _ = 1, 4 do
    if not MIXES[key] then return key end
    key = pick(MIXES[key])
  end
  error("notes.lua: modes nest too deeply at " .. key)
end

local function note_json()
  local title = string.format("Note from wrk thread %d req %d", thread_id or 0, sent)
  local tag = TAGS[math.random(#TAGS)]
  return string.format('{"title":"%s","body":"%s","tag":"%s"}', title, NOTE_BODY, tag)
end

function request()
  sent = sent + 1
  local kind = draw_kind(MODE)
  local r = REQUESTS[kind]
  local path = r[2]
  path = path:gsub("{id}", function() return tostring(math.random(MAX_ID)) end)
  path = path:gsub("{tag}", function() return TAGS[math.random(#TAGS)] end)
  if r[1] == "POST" or r[1] == "PUT" then
    return wrk.format(r[1], path, JSON_HEADERS, note_json())
  end
  return wrk.format(r[1], path)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

-- ------------------------------------------------------------ report

-- Per-name breakdown (BREAKDOWN=1), for comparing wrk's counts with the
-- server's per-route counters (loadtests/reconcile).
--
-- wrk tells response() nothing about the request it answers, and with many
-- connections per thread responses arrive in any order. So request() and
-- response() are wrapped here: the request's name is read back from the
-- request line wrk.format built, and a response is attributed by what only
-- one request kind of the mode can produce:
--   - a mode with a single kind: that kind;
--   - 201: the kind expected to answer 201 (POST /notes);
--   - a 2xx body starting with "[": GET /notes?tag= (the only list);
--   - a 2xx object whose title is one this thread sent in a PUT still waiting
--     for its answer: PUT /notes/:id (titles are unique per thread; a GET that
--     happens to read such a row first swaps names with that PUT, which leaves
--     both counts right);
--   - any other 2xx object: GET /notes/:id if the mode has it, else PUT.
-- Responses that cannot be attributed (non-2xx in a mode with several kinds)
-- are counted under the name "?" with their status, never dropped.
-- Names are mixes.json's: the method, then the path with {id} as :id and
-- {tag} left empty ("GET /notes?tag=").
-- "sent" counts calls of request(). wrk 4.1 calls it once more than it sends,
-- on the first thread, to check the script before the run, so "sent" is an
-- upper bound of what reached the server (by one).

local BREAKDOWN = (os.getenv("BREAKDOWN") or "") == "1"

local function kinds_of(mode, out)
  out = out or {}
  if not MIXES[mode] then
    out[mode] = true
  else
    for _, e in ipairs(MIXES[mode]) do kinds_of(e[1], out) end
  end
  return out
end

local MODE_KINDS = {}   -- { kind, name, method, pattern, expected } of this mode
for kind in pairs(kinds_of(MODE)) do
  local r = REQUESTS[kind]
  local template = r[2]:gsub("%?", "\1"):gsub("[%^%$%(%)%%%.%[%]%*%+%-]", "%%%0"):gsub("\1", "%%?")
  MODE_KINDS[#MODE_KINDS + 1] = {
    kind = kind,
    name = r[1] .. " " .. r[2]:gsub("{id}", ":id"):gsub("{tag}", ""),
    method = r[1],
    pattern = "^" .. template:gsub("{id}", "%%d+"):gsub("{tag}", "[^&]*") .. "$",
    expected = r[3],
  }
end
table.sort(MODE_KINDS, function(a, b) return a.kind < b.kind end)

local function mode_has(kind)
  for _, k in ipairs(MODE_KINDS) do
    if k.kind == kind then return k end
  end
end

local function name_of_request(req)
  local method, path = req:match("^(%u+) (%S+) HTTP/")
  for _, k in ipairs(MODE_KINDS) do
    if k.method == method and path and path:match(k.pattern) then return k.name end
  end
  return "?"
end

local function bump(t, key)
  t[key] = (t[key] or 0) + 1
end

local function title_of(text)
  return text:match('"title":"(Note from wrk [^"]*)"')
end

if BREAKDOWN then
  -- globals, so that done() can read them with thread:get() (which copies
  -- flat tables only): sent_by_name[name] = n, responses_by_name["name status"] = n
  sent_by_name = {}
  responses_by_name = {}
  local keys = {}          -- name -> status -> "name status", built once per pair
  local pending_put = {}   -- title -> PUTs with that title waiting for an answer
  local only = #MODE_KINDS == 1 and MODE_KINDS[1].name or nil
  local insert = mode_has("insert_note")
  local list = mode_has("list_by_tag")
  local get = mode_has("get_note")
  local put = mode_has("update_note")
  local OPEN_BRACKET, OPEN_BRACE = string.byte("["), string.byte("{")

  local plain_request, plain_response = request, response

  request = function()
    local req = plain_request()
    local name = only or name_of_request(req)
    sent_by_name[name] = (sent_by_name[name] or 0) + 1
    if put and name == put.name then
      local title = title_of(req)
      if title then pending_put[title] = (pending_put[title] or 0) + 1 end
    end
    return req
  end

  local function attribute(status, body)
    if only then return only end
    if status < 200 or status > 299 then return "?" end
    if status == 201 and insert then return insert.name end
    local first = body and body:byte(1)
    if first == OPEN_BRACKET and list then return list.name end
    if first == OPEN_BRACE then
      local title = put and title_of(body)
      local n = title and pending_put[title]
      if n then
        pending_put[title] = n > 1 and n - 1 or nil
        return put.name
      end
      if get then return get.name end
      if put then return put.name end
    end
    return "?"
  end

  response = function(status, headers, body)
    plain_response(status, headers, body)
    local name = attribute(status, body)
    local by_status = keys[name]
    if not by_status then
      by_status = {}
      keys[name] = by_status
    end
    local key = by_status[status]
    if not key then
      key = name .. " " .. status
      by_status[status] = key
    end
    responses_by_name[key] = (responses_by_name[key] or 0) + 1
  end
end

-- ,"key":{"a":1,...} with the keys sorted, for the WRK_JSON line
local function json_counts(key, counts)
  local keys = {}
  for k in pairs(counts) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = string.format('"%s":%d', k:gsub('[%c"\\]', ""), counts[k])
  end
  return string.format(',"%s":{%s}', key, table.concat(parts, ","))
end

local function merged(name)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get(name) or {}) do total[k] = (total[k] or 0) + v end
  end
  return total
end

local function ms(us)
  return us / 1000
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do
    bad = bad + (tonumber(t:get("non2xx")) or 0)
  end
  local e = summary.errors
  local socket_errors = e.connect + e.read + e.write + e.timeout
  local seconds = summary.duration / 1e6
  local rps = seconds > 0 and summary.requests / seconds or 0
  local p50, p95, p99 = latency:percentile(50), latency:percentile(95), latency:percentile(99)

  io.write(string.format("mode          %s\n", MODE))
  io.write(string.format("requests      %d\n", summary.requests))
  io.write(string.format("duration      %.2f s\n", seconds))
  io.write(string.format("req/s         %.1f\n", rps))
  io.write(string.format("latency ms    p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n", ms(p50), ms(p95), ms(p99), ms(latency.max)))
  io.write(string.format("socket errors %d (connect %d, read %d, write %d, timeout %d)\n",
    socket_errors, e.connect, e.read, e.write, e.timeout))
  io.write(string.format("non-2xx       %d (wrk's own count of status >= 400: %d)\n", bad, e.status))
  local line = string.format(
    'WRK_JSON {"mode":"%s","requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"non2xx":%d,"socket_errors":%d}\n',
    MODE, summary.requests, seconds, rps, ms(p50), ms(p95), ms(p99), ms(latency.max), bad, socket_errors)
  if BREAKDOWN then
    -- inserted before "socket_errors", so the line still ends as smoke.sh expects
    local counts = json_counts("sent", merged("sent_by_name")) .. json_counts("responses", merged("responses_by_name"))
    line = line:gsub(',"socket_errors":', function(rest) return counts .. rest end, 1)
  end
  io.write(line)
end
