// The embedded document ({"schema": "gpuleak.html/1", "report": ..., "view": ...}, docs/viewer.md)
// turned into one model the views draw from. From a capture, `view` carries the timelines, flame
// graph snapshots and temporal intervals computed in C++; from a report alone the same shapes are
// made from what the report has (coarser, and marked so). Nothing here decides a verdict.

// The document from the page's data element; null for the unfilled template, whose element holds
// a placeholder string (never spelled out here, so that the built page has it exactly once).
export function readDocument(text) {
  const doc = JSON.parse(text);
  if (doc === null || typeof doc !== 'object') return null;
  if (typeof doc.schema !== 'string' || !doc.schema.startsWith('gpuleak.html/')) {
    throw new Error(`unknown data schema ${JSON.stringify(doc.schema)}`);
  }
  return doc;
}

// Frames interned into columns, as the C++ side writes them (view.frames / view.sites).
class FrameTable {
  constructor() {
    this.frames = { function: [], file: [], line: [], module: [], kind: [], address: [], user: [] };
    this.index = new Map();
    this.sites = { site_id: [], frames: [], headline: [], headline_text: [] };
    this.siteIndex = new Map();
  }
  frame(f) {
    const address = f.function ? null : f.address ?? null;
    const key = [f.kind, f.function, f.file, f.line, f.module, address].join('\u0000');
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.frames.function.length;
      this.index.set(key, i);
      this.frames.function.push(f.function ?? null);
      this.frames.file.push(f.file ?? null);
      this.frames.line.push(f.line ?? null);
      this.frames.module.push(f.module ?? null);
      this.frames.kind.push(f.kind ?? 'native');
      this.frames.address.push(address);
      this.frames.user.push(0);
    }
    return i;
  }
  // A report's site: its stack and its headline (the frame of it the analysis chose). A report
  // says whose code a frame is only through its headlines, so the frames some headline names as
  // the user's are the user's frames here.
  site(siteId, stack, headline = null) {
    let i = this.siteIndex.get(siteId);
    if (i === undefined) {
      i = this.sites.site_id.length;
      this.siteIndex.set(siteId, i);
      this.sites.site_id.push(siteId);
      const frames = (stack ?? []).map((f) => this.frame(f));
      this.sites.frames.push(frames);
      const at = headline ? (stack ?? []).findIndex((f) => f.kind === headline.kind && f.function === headline.function &&
        f.file === headline.file && f.line === headline.line) : -1;
      this.sites.headline.push(at >= 0 ? frames[at] : null);
      this.sites.headline_text.push(headline?.text ?? null);
      if (at >= 0 && headline.user) this.frames.user[frames[at]] = 1;
    }
    return i;
  }
}

export function primaryIterations(report) {
  return (report.iterations ?? []).filter((it) => it.primary).sort((a, b) => a.index - b.index);
}

// Memory over time from the report alone: each iteration's end (live bytes) and, inside it, its
// peak. Enough to see a trend; `coarse` says so on the page.
function coarseTimelines(report) {
  return (report.devices ?? []).map((d, slot) => {
    const t = [0];
    const y = [0];
    for (const it of report.iterations ?? []) {
      const dev = it.devices?.[slot];
      if (!dev) continue;
      const mid = (it.start_ns + it.end_ns) / 2;
      t.push(it.start_ns, mid, it.end_ns);
      y.push(y[y.length - 1], dev.peak_bytes, dev.live_end_bytes);
    }
    if (report.run?.duration_ns > t[t.length - 1]) {
      t.push(report.run.duration_ns);
      y.push(d.live_at_exit_bytes ?? y[y.length - 1]);
    }
    const order = t.map((_, i) => i).sort((a, b) => t[a] - t[b]);
    return {
      device: d.index,
      t: Float64Array.from(order, (i) => t[i]),
      y: Float64Array.from(order, (i) => y[i]),
      sourcePoints: t.length,
      decimated: false,
      coarse: true,
      peak: null,
    };
  });
}

// Who holds a framework allocator's segments, in the words of the text summary
// (src/output/report_segments.cpp segments_owner).
export function poolOwner(report) {
  const mode = report.run?.allocator_mode ?? '';
  if (/CuPy/.test(mode) && !/PyTorch/.test(mode)) return 'CuPy\'s pool';
  if (/JAX/.test(mode) && !/PyTorch/.test(mode)) return 'JAX\'s arena';
  return 'PyTorch\'s caching allocator';
}

// A run whose device memory is mostly a framework's pool (allocator_mode `segments (...)`,
// `pool (...)`, or PyTorch's caching allocator seen through its trace): what no listed call site
// accounts for is mostly its cache. Not the per-array and per-buffer modes, whose allocations are
// the program's objects.
export function pooledRun(report) {
  const mode = report.run?.allocator_mode ?? '';
  return (report.segments ?? []).length > 0 || Boolean(report.run?.pool_tracker) ||
    /^(segments|pool)\b/.test(mode) || /caching allocator/.test(mode);
}

function sum(rows, key) {
  return rows.reduce((s, r) => s + (r[key] ?? 0), 0);
}

// The snapshots from the report alone. Each has `device_bytes` (all device memory then, as the
// timeline counts it), `cache_bytes` (the framework allocator's segments not filled by tensors,
// when known) and `other` (the rest; `mixed` when it also holds the cache, unknown apart).
function reportSnapshots(report, table) {
  const snapshots = [];
  const pooled = pooledRun(report);
  const primary = primaryIterations(report);
  const lastIt = primary[primary.length - 1];
  (report.devices ?? []).forEach((d, slot) => {
    // At the last iteration: the leaks, as the report counts them there (their live_bytes).
    const leaks = (report.leaks ?? []).filter((l) => l.device === d.index && l.live_bytes > 0);
    const atLast = lastIt?.devices?.[slot]?.live_end_bytes;
    if (leaks.length > 0 && Number.isFinite(atLast)) {
      snapshots.push({
        kind: 'last_iteration',
        iteration: lastIt.index,
        device: d.index,
        t_ns: lastIt.end_ns,
        device_bytes: atLast,
        live_bytes: atLast,
        live_count: null,
        site: leaks.map((r) => table.site(r.site_id, r.stack, r.headline)),
        bytes: leaks.map((r) => r.live_bytes),
        count: leaks.map((r) => r.live_count),
        other: { sites: null, bytes: Math.max(0, atLast - sum(leaks, 'live_bytes')), count: null, mixed: pooled, notLeaking: true },
        cache_bytes: 0,
      });
    }
    const rows = (report.live_at_exit ?? []).filter((s) => s.device === d.index);
    if (rows.length === 0 && !d.live_at_exit_bytes) return;
    const shown = sum(rows, 'live_bytes');
    // The segments at exit and the tensors in them (the summary's "reserved ... N of it in tensors").
    const segments = (report.segments ?? []).filter((s) => s.device === d.index);
    const reserved = sum(segments, 'live_at_exit_bytes');
    const inTensors = segments.reduce((s, x) => s + sum(x.blocks ?? [], 'live_at_exit_bytes'), 0);
    const known = segments.some((x) => (x.blocks ?? []).length > 0);
    const cache = known ? Math.max(0, reserved - inTensors) : 0;
    snapshots.push({
      kind: 'end',
      device: d.index,
      t_ns: report.run?.duration_ns ?? 0,
      device_bytes: d.live_at_exit_bytes,
      live_bytes: d.live_at_exit_bytes,
      live_count: null,
      site: rows.map((r) => table.site(r.site_id, r.stack, r.headline)),
      bytes: rows.map((r) => r.live_bytes),
      count: rows.map((r) => r.live_count),
      other: {
        sites: Math.max(0, (report.analysis?.live_at_exit_sites ?? rows.length) - rows.length),
        bytes: Math.max(0, d.live_at_exit_bytes - shown - cache),
        count: null,
        mixed: pooled && !known,
      },
      cache_bytes: cache,
    });
  });
  (report.oom?.events ?? []).forEach((e, i) => {
    const rows = e.live_by_site ?? [];
    snapshots.push({
      kind: 'oom',
      oom_index: i,
      device: e.device,
      t_ns: e.t_ns,
      device_bytes: e.live_bytes,
      live_bytes: e.live_bytes,
      live_count: e.live_count,
      site: rows.map((r) => table.site(r.site_id, r.stack, r.headline)),
      bytes: rows.map((r) => r.bytes),
      count: rows.map((r) => r.count),
      other: { sites: null, bytes: Math.max(0, e.live_bytes - sum(rows, 'bytes')), count: null, mixed: pooled },
      cache_bytes: 0,
    });
  });
  return snapshots;
}

// The view's snapshots (from a capture) in the same terms: by site they hold tensors, not the
// segments around them; the segments' part no tensor fills is the cache (`pool`, docs/viewer.md).
function captureSnapshots(view) {
  return view.snapshots.map((s) => {
    const cache = s.pool ? Math.max(0, s.pool.reserved_bytes - s.pool.in_blocks_bytes) : 0;
    return { ...s, cache_bytes: cache, device_bytes: s.live_bytes + cache };
  });
}

// The report's iterations[] back from the columns the CLI embeds them as (docs/viewer.md).
export function iterationsFromColumns(cols) {
  if (!cols) return [];
  const n = cols.start_ns.length;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = {
      index: cols.index[i],
      loop: cols.loops[cols.loop[i]],
      primary: cols.primary[i] === 1,
      start_ns: cols.start_ns[i],
      end_ns: cols.end_ns[i],
      devices: cols.devices.map((d) => ({
        index: d.index,
        live_end_bytes: d.live_end_bytes[i],
        peak_bytes: d.peak_bytes[i],
        allocated_bytes: d.allocated_bytes[i],
        freed_bytes: d.freed_bytes[i],
        alloc_count: d.alloc_count[i],
        free_count: d.free_count[i],
      })),
    };
  }
  return out;
}

export function buildModel(doc) {
  const report = doc.report;
  if (!report.iterations) report.iterations = iterationsFromColumns(doc.iterations);
  const view = doc.view ?? null;
  const model = {
    report,
    fromCapture: view !== null,
    primary: primaryIterations(report),
    warmup: report.analysis?.warmup_iterations ?? 0,
    pooled: pooledRun(report),
    poolOwner: poolOwner(report),
  };
  if (view) {
    model.timelines = view.timeline.map((tl) => ({
      device: tl.device,
      t: Float64Array.from(tl.t_ns),
      y: Float64Array.from(tl.live_bytes),
      sourcePoints: tl.source_points,
      decimated: tl.decimated,
      coarse: false,
      peak: tl.peak,
    }));
    model.frames = view.frames;
    model.sites = view.sites;
    model.snapshots = captureSnapshots(view);
    model.temporal = view.temporal;
  } else {
    const table = new FrameTable();
    model.timelines = coarseTimelines(report);
    model.snapshots = reportSnapshots(report, table);
    model.frames = table.frames;
    model.sites = table.sites;
    model.temporal = null;
  }
  return model;
}

// One frame of the model's table as an object.
export function frameAt(model, i) {
  const f = model.frames;
  return {
    function: f.function[i],
    file: f.file[i],
    line: f.line[i],
    module: f.module[i],
    kind: f.kind[i],
    address: f.address?.[i] ?? null,
    user: f.user?.[i] === 1,
  };
}
