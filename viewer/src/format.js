// How numbers and frames read on the page: binary units (KiB, MiB, GiB), plain durations, and a
// frame as "function (file:line)". Pure functions, unit-tested in test/format.test.js.

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

// 1536 -> "1.50 KiB", 18874368 -> "18.0 MiB": three significant digits, whole bytes below 1 KiB.
export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '–';
  const sign = bytes < 0 ? '-' : '';
  let v = Math.abs(bytes);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u += 1;
  }
  if (u === 0) return `${sign}${Math.round(v)} B`;
  let digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  // 1023.9 KiB would print as "1024 KiB": carry into the next unit instead.
  if (Number(v.toFixed(digits)) >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u += 1;
    digits = 2;
  }
  return `${sign}${v.toFixed(digits)} ${UNITS[u]}`;
}

// A growth rate: "+18.0 MiB per iteration".
export function formatRate(bytesPerIteration) {
  if (!Number.isFinite(bytesPerIteration)) return '–';
  const sign = bytesPerIteration > 0 ? '+' : '';
  return `${sign}${formatBytes(bytesPerIteration)} per iteration`;
}

// 1234567 -> "1,234,567".
export function formatCount(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

// "1 allocation", "3 allocations", "1,024 call sites": a count and its noun, one helper for every
// plural on the page (pluralForm for the irregular ones: plural(2, 'process', 'processes')).
export function plural(n, singular, pluralForm = `${singular}s`) {
  return `${formatCount(n)} ${Math.round(n) === 1 ? singular : pluralForm}`;
}

// The forecast, in the words the terminal summary, Markdown and \`gpuleak check\` use
// (src/format/words.h): "out of memory in ~N iterations (~T)", or "out of memory within the next
// iteration" with less than one iteration of memory left. A device that already ran out is not
// forecast (the page says "ran out of memory" and shows the failure).
export function forecastPhrase(iterationsLeft, secondsLeft) {
  if (!(iterationsLeft > 0)) return 'out of memory within the next iteration';
  let s = `out of memory in ~${plural(iterationsLeft, 'iteration')}`;
  if (secondsLeft > 0) s += ` (${aboutDuration(secondsLeft)})`;
  return s;
}

// A forecast's duration, as words.h rounds it: "under 1 s", "~42 s", "~5 min", "~1.5 h", "~2.0 days".
export function aboutDuration(s) {
  if (s < 1) return 'under 1 s';
  if (s < 120) return `~${Math.round(s)} s`;
  if (s < 7200) return `~${Math.round(s / 60)} min`;
  if (s < 172800) return `~${(s / 3600).toFixed(1)} h`;
  return `~${(s / 86400).toFixed(1)} days`;
}

// Seconds as people say them: "850 ms", "42 s", "59 min", "3.5 h", "2.1 days".
export function formatSeconds(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  if (s < 0.001) return `${Math.round(s * 1e6)} µs`;
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400 * 2) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} days`;
}

export function formatNs(ns) {
  return formatSeconds(ns / 1e9);
}

// A position on the time axis, from the run's start: "12.345 s".
export function formatTimeAxis(ns) {
  const s = ns / 1e9;
  if (Math.abs(s) < 1) return `${(s * 1000).toFixed(1)} ms`;
  if (Math.abs(s) < 100) return `${s.toFixed(3)} s`;
  return `${s.toFixed(1)} s`;
}

// Labels for a whole time axis in one unit that suits its range and step: "0 ms", "250 ms" ...
// or "1.5 s", "2.0 s" (never a mix of units on one axis).
export function formatTimeTicks(ticks) {
  if (ticks.length === 0) return [];
  const top = Math.max(...ticks.map((t) => Math.abs(t)));
  const [unit, name] = top >= 1e9 ? [1e9, 's'] : top >= 1e6 ? [1e6, 'ms'] : top >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) / unit : 1;
  const decimals = step > 0 ? Math.min(6, Math.max(0, -Math.floor(Math.log10(step) + 1e-9))) : 0;
  return ticks.map((t) => `${(t / unit).toFixed(decimals)} ${name}`);
}

export function formatPercent(fraction) {
  if (!Number.isFinite(fraction)) return '–';
  return `${Math.round(fraction * 100)}%`;
}

function basename(path) {
  if (!path) return path;
  const i = path.lastIndexOf('/');
  return i < 0 ? path : path.slice(i + 1);
}

// A demangled C++ name as people read it: without its parameter list, trailing qualifiers and
// return type ("at::detail::empty_generic(c10::ArrayRef<long>, ...)" -> "at::detail::empty_generic"),
// by the rules of the headline's (src/output/sites.cpp short_function). Display only: the frame
// keeps its whole name, shown beside it in a stack.
export function shortFunction(name) {
  if (!name) return name;
  let s = name;
  for (let again = true; again;) {
    again = false;
    for (const q of [' const', ' volatile', ' &&', ' &', '&&', '&']) {
      if (s.length > q.length && s.endsWith(q) && s[s.length - q.length - 1] === ')') {
        s = s.slice(0, s.length - q.length);
        again = true;
      }
    }
  }
  if (s.endsWith(')')) {
    let depth = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      if (s[i] === ')') depth++;
      if (s[i] === '(' && --depth === 0) {
        if (i > 0) s = s.slice(0, i);
        break;
      }
    }
  }
  if (!s) return name;
  if (!s.includes('operator')) {
    let depth = 0;
    let cut = -1;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === '<' || c === '(' || c === '[') depth++;
      if (c === '>' || c === ')' || c === ']') depth--;
      if (c === ' ' && depth === 0) cut = i;
    }
    if (cut >= 0 && cut + 1 < s.length) s = s.slice(cut + 1);
  }
  return s;
}

// "train_step (train.py:42)"; without a function, "0x7f2a91c0e4d3 in libfoo.so"; never empty.
// short: a native function as shortFunction reads it.
export function frameLabel(frame, { short = false } = {}) {
  if (!frame) return '(unknown)';
  const where = frame.file ? `${basename(frame.file)}${frame.line ? `:${frame.line}` : ''}` : frame.module || '';
  const fn = short && frame.kind !== 'python' ? shortFunction(frame.function) : frame.function;
  if (fn) return where ? `${fn} (${where})` : fn;
  if (frame.address) return frame.module ? `${frame.address} in ${frame.module}` : frame.address;
  return where || '(unknown frame)';
}

// What a site, a finding or a failure is called on the page: the report's headline (the user's own
// line, with the library code it called), decided once in src/analysis; reports from before
// headlines fall back to the innermost frame.
export function siteText(row) {
  return row?.headline?.text || frameLabel(row?.stack?.[0]);
}

// The whole frame for the stack view: function, file:line, module.
export function frameDetail(frame) {
  const parts = [];
  if (frame.kind !== 'python' && frame.function && shortFunction(frame.function) !== frame.function) parts.push(frame.function);
  if (frame.file) parts.push(`${frame.file}${frame.line ? `:${frame.line}` : ''}`);
  if (frame.module) parts.push(frame.module);
  if (frame.kind === 'native' && frame.address && frame.function) parts.push(frame.address);
  return parts.join('  ·  ');
}

// Axis steps that read well in binary units: 1, 2, 4, 8 ... 512 of B, KiB, MiB, GiB, TiB.
export const BYTE_INCREMENTS = [];
for (let unit = 1; unit <= 2 ** 40; unit *= 1024) {
  for (let m = 1; m < 1024; m *= 2) BYTE_INCREMENTS.push(m * unit);
}
