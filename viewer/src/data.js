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
    this.frames = { function: [], file: [], line: [], module: [], kind: [], address: [] };
    this.index = new Map();
    this.sites = { site_id: [], frames: [] };
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
    }
    return i;
  }
  site(siteId, stack) {
    let i = this.siteIndex.get(siteId);
    if (i === undefined) {
      i = this.sites.site_id.length;
      this.siteIndex.set(siteId, i);
      this.sites.site_id.push(siteId);
      this.sites.frames.push((stack ?? []).map((f) => this.frame(f)));
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

function reportSnapshots(report, table) {
  const snapshots = [];
  for (const d of report.devices ?? []) {
    const rows = (report.live_at_exit ?? []).filter((s) => s.device === d.index);
    if (rows.length === 0 && !d.live_at_exit_bytes) continue;
    const shown = rows.reduce((s, r) => s + r.live_bytes, 0);
    snapshots.push({
      kind: 'end',
      device: d.index,
      t_ns: report.run?.duration_ns ?? 0,
      live_bytes: d.live_at_exit_bytes,
      live_count: null,
      site: rows.map((r) => table.site(r.site_id, r.stack)),
      bytes: rows.map((r) => r.live_bytes),
      count: rows.map((r) => r.live_count),
      other: {
        sites: Math.max(0, (report.analysis?.live_at_exit_sites ?? rows.length) - rows.length),
        bytes: Math.max(0, d.live_at_exit_bytes - shown),
        count: null,
      },
    });
  }
  (report.oom?.events ?? []).forEach((e, i) => {
    const rows = e.live_by_site ?? [];
    const shown = rows.reduce((s, r) => s + r.bytes, 0);
    snapshots.push({
      kind: 'oom',
      oom_index: i,
      device: e.device,
      t_ns: e.t_ns,
      live_bytes: e.live_bytes,
      live_count: e.live_count,
      site: rows.map((r) => table.site(r.site_id, r.stack)),
      bytes: rows.map((r) => r.bytes),
      count: rows.map((r) => r.count),
      other: { sites: null, bytes: Math.max(0, e.live_bytes - shown), count: null },
    });
  });
  return snapshots;
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
    model.snapshots = view.snapshots;
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
  };
}
