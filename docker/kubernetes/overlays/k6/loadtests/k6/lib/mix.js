// Request mixes of the load tests, as plain data in, request descriptors out.
//
// No k6 imports: the k6 scripts use it through lib/k6run.js, and
// loadtests/k6/test_mix.mjs runs it under Node to check the shares.
// The mixes themselves live in loadtests/mixes.json.
//
//   const next = createMix(spec, 'mixed', { random: Math.random, maxId: 200000 });
//   next({ title: 'Note from k6 vu 1 iter 0' })
//   // -> { kind, method, path, body, name, expectedStatus }
//
// body is a JSON string for POST/PUT (sent with Content-Type: application/json)
// and null otherwise.

const MAX_DEPTH = 4;

export function modeNames(spec) {
  return Object.keys(spec.modes);
}

// Throws when a name is both a mode and a request, when a mix names something
// that is neither, has a non-positive weight, or nests modes too deeply.
export function validateSpec(spec) {
  if (!spec || typeof spec !== 'object') throw new Error('mix spec: not an object');
  if (!Array.isArray(spec.tags) || !spec.tags.length) throw new Error('mix spec: tags missing');
  if (!(Number.isInteger(spec.maxId) && spec.maxId >= 1)) throw new Error('mix spec: maxId must be a positive integer');
  for (const mode of modeNames(spec)) {
    if (spec.requests[mode]) throw new Error(`mix spec: "${mode}" is both a mode and a request`);
  }
  const visit = (mode, depth) => {
    if (depth > MAX_DEPTH) throw new Error(`mix spec: modes nest deeper than ${MAX_DEPTH} at "${mode}"`);
    const entries = spec.modes[mode];
    if (!Array.isArray(entries) || !entries.length) throw new Error(`mix spec: mode "${mode}" has no entries`);
    for (const entry of entries) {
      const [key, weight] = entry;
      if (!(typeof weight === 'number' && weight > 0)) throw new Error(`mix spec: "${mode}" gives "${key}" weight ${weight}`);
      if (spec.modes[key]) visit(key, depth + 1);
      else if (!spec.requests[key]) throw new Error(`mix spec: "${mode}" names unknown "${key}"`);
    }
  };
  for (const mode of modeNames(spec)) visit(mode, 0);
  return spec;
}

// Picks one key of [[key, weight], ...] for r in [0, 1).
export function pick(entries, r) {
  let total = 0;
  for (const [, w] of entries) total += w;
  let x = r * total;
  for (const [key, w] of entries) {
    if (x < w) return key;
    x -= w;
  }
  return entries[entries.length - 1][0];
}

// Follows nested modes ("mixed" -> "read" -> "get_note") down to a request kind.
export function drawKind(spec, mode, random) {
  let key = mode;
  for (let depth = 0; spec.modes[key]; depth++) {
    if (depth > MAX_DEPTH) throw new Error(`mix spec: modes nest deeper than ${MAX_DEPTH}`);
    key = pick(spec.modes[key], random());
  }
  return key;
}

export function randomId(random, maxId) {
  return 1 + Math.floor(random() * maxId);
}

export function randomTag(spec, random) {
  return spec.tags[Math.floor(random() * spec.tags.length)];
}

export function noteBodyText(spec) {
  return spec.noteBody.repeat(spec.noteBodyRepeat);
}

export function describe(spec, kind, { random, maxId, title }) {
  const req = spec.requests[kind];
  if (!req) throw new Error(`unknown request kind "${kind}"`);
  const path = req.path
    .replace('{id}', () => String(randomId(random, maxId)))
    .replace('{tag}', () => encodeURIComponent(randomTag(spec, random)));
  const body = req.body
    ? JSON.stringify({ title, body: noteBodyText(spec), tag: randomTag(spec, random) })
    : null;
  return { kind, method: req.method, path, body, name: req.name, expectedStatus: req.expectedStatus };
}

export function createMix(spec, mode, options = {}) {
  validateSpec(spec);
  if (!spec.modes[mode]) {
    throw new Error(`unknown mode "${mode}" (known: ${modeNames(spec).join(', ')})`);
  }
  const random = options.random || Math.random;
  const maxId = options.maxId === undefined ? spec.maxId : Number(options.maxId);
  if (!(Number.isInteger(maxId) && maxId >= 1)) throw new Error(`MAX_ID must be a positive integer, got ${options.maxId}`);
  return function next(ctx = {}) {
    const kind = drawKind(spec, mode, random);
    return describe(spec, kind, { random, maxId, title: ctx.title || 'Note' });
  };
}
