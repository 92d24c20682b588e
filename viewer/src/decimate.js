// Thinning a memory curve for the pixels it is drawn on, without ever losing a peak, by the one rule
// gpuleak thins every curve with (src/output/curve_decimation.h, which the embedded data and the
// trace's counters went through already): the visible time range is cut into one bucket per pixel
// column and each bucket keeps, in time order, the point where its lowest value was first reached,
// the point where its highest was, and its last point (never an average), so the step drawn across
// each column's edge has the right value. This runs again at every zoom level.

// First index i with t[i] >= x (t ascending); t.length when none.
export function lowerBound(t, x) {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (t[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Points of (t, y) to draw the range [x0, x1] on `buckets` columns. The point just before x0 and
// the one just after x1 are included so that the curve reaches the edges. Returns plain arrays.
export function decimateCurve(t, y, x0, x1, buckets) {
  const n = t.length;
  if (n === 0) return { t: [], y: [] };
  const from = Math.max(0, lowerBound(t, x0) - 1);
  const to = Math.min(n, lowerBound(t, x1) + 1);  // exclusive
  const outT = [];
  const outY = [];
  const push = (i) => {
    outT.push(t[i]);
    outY.push(y[i]);
  };
  if (to - from <= 3 * buckets + 2 || !(x1 > x0)) {
    for (let i = from; i < to; i++) push(i);
    return { t: outT, y: outY };
  }
  const width = (x1 - x0) / buckets;
  let i = from;
  push(i++);
  while (i < to - 1) {
    const b = Math.min(buckets - 1, Math.max(0, Math.floor((t[i] - x0) / width)));
    const limit = b === buckets - 1 ? Infinity : x0 + (b + 1) * width;
    let lo = i;
    let hi = i;
    let j = i;
    for (; j < to - 1 && t[j] < limit; j++) {
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    if (j === i) j = i + 1;  // rounding put t[i] on the limit: it is its own bucket
    const picked = [Math.min(lo, hi), Math.max(lo, hi), j - 1];
    for (let k = 0; k < 3; k++) if (k === 0 || picked[k] > picked[k - 1]) push(picked[k]);
    i = j;
  }
  if (to - 1 > from) push(to - 1);
  return { t: outT, y: outY };
}
