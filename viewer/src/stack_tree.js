// Live memory by call stack as a tree for the icicle: root "all live memory", then frames from
// the outermost (main) to the innermost (the allocation call). Pure, unit-tested.

// rows: [{site, bytes, count}] with `site` an index into model.sites; other: {sites, bytes, count}
// summed away by the C++ side (shown as one node). Nodes: {frame, bytes, count, children}, frame
// -1 for the root, -2 for "other" and -3 for `extras` ([{label, bytes, count}]: memory that is no
// call site's, such as an allocator's cache, drawn beside the stacks with its own words); children
// largest first. keep(frame, site): which frames to draw (library frames hidden: the stack
// collapses to the kept ones); null keeps all.
export function buildStackTree(sites, rows, other = null, { extras = [], keep = null } = {}) {
  const root = node(-1, null);
  for (const { site, bytes, count } of rows) {
    if (!(bytes > 0)) continue;
    const frames = sites.frames[site] ?? [];
    let n = root;
    n.bytes += bytes;
    n.count += count ?? 0;
    for (let i = frames.length - 1; i >= 0; i--) {
      if (keep && !keep(frames[i], site)) continue;
      n = child(n, frames[i]);
      n.bytes += bytes;
      n.count += count ?? 0;
    }
    n.sites += 1;
  }
  const special = (frame, x, label = null) => {
    root.bytes += x.bytes;
    root.count += x.count ?? 0;
    const o = node(frame, root);
    o.bytes = x.bytes;
    o.count = x.count ?? 0;
    o.sites = x.sites ?? 0;
    o.label = label;
    root.children.push(o);
  };
  if (other && other.bytes > 0) special(-2, other, other.label ?? null);
  for (const x of extras) if (x.bytes > 0) special(-3, x, x.label);
  finish(root);
  return root;
}

function node(frame, parent) {
  return { frame, bytes: 0, count: 0, sites: 0, depth: parent ? parent.depth + 1 : 0, children: [], parent, index: null, label: null };
}

// Most frames have one or two callees: a scan beats a map there, and a map per node would keep
// the garbage collector busy for seconds on 300k nodes. Only wide nodes get an index.
function child(n, frame) {
  const kids = n.children;
  if (n.index) {
    let c = n.index.get(frame);
    if (!c) {
      c = node(frame, n);
      kids.push(c);
      n.index.set(frame, c);
    }
    return c;
  }
  for (let i = 0; i < kids.length; i++) if (kids[i].frame === frame) return kids[i];
  const c = node(frame, n);
  kids.push(c);
  if (kids.length > 16) n.index = new Map(kids.map((k) => [k.frame, k]));
  return c;
}

function finish(root) {
  const stack = [root];
  let maxDepth = 0;
  while (stack.length) {
    const n = stack.pop();
    n.index = null;
    if (n.children.length > 1) n.children.sort((a, b) => b.bytes - a.bytes);
    maxDepth = Math.max(maxDepth, n.depth);
    for (const c of n.children) stack.push(c);
  }
  root.maxDepth = maxDepth;
}

// The temporal view's rows: allocations born in primary iterations [from, to] (inclusive) on
// `device` that were still alive at the end of the run (`untilEnd`) or at the end of iteration
// `to`. temporal: the view's columns (docs/viewer.md); death_iteration -1 = never freed.
export function temporalRows(temporal, device, from, to, untilEnd) {
  const bySite = new Map();
  const n = temporal.site.length;
  for (let i = 0; i < n; i++) {
    if (temporal.device[i] !== device) continue;
    const born = temporal.birth_iteration[i];
    if (born < from || born > to) continue;
    const died = temporal.death_iteration[i];
    const alive = died === -1 || (!untilEnd && died > to);
    if (!alive) continue;
    const s = temporal.site[i];
    const row = bySite.get(s) ?? { site: s, bytes: 0, count: 0 };
    row.bytes += temporal.bytes[i];
    row.count += temporal.count[i];
    bySite.set(s, row);
  }
  return [...bySite.values()].sort((a, b) => b.bytes - a.bytes);
}

// Rows of one snapshot ({site: [], bytes: [], count: []}) as objects.
export function snapshotRows(snapshot) {
  return snapshot.site.map((site, i) => ({ site, bytes: snapshot.bytes[i], count: snapshot.count[i] }));
}
