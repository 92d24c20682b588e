// The one rule by which a live-bytes curve is thinned for drawing: the trace's counter tracks
// (output/trace/counter_decimation.h) and the viewer's memory-over-time plot (output/view) both
// call decimate_curve(); the page re-thins per zoom level by the same rule (viewer/src/decimate.js).
//
// A memory curve is read for its extremes: the peak that ran a device out of memory must survive
// any reduction, and so must the trough that shows memory was given back. So points are never
// averaged or moved. Time is cut into buckets of one width, and each bucket keeps, in time order:
//   - the point where its lowest value was first reached,
//   - the point where its highest value was first reached,
//   - its last point;
// and the curve's first point is always kept. Therefore:
//   - every point returned is an input point, at its own time;
//   - the curve's maximum (the peak) and minimum survive, at the moment each was first reached;
//   - the value at every bucket's end is exact, so a curve drawn as steps is right at each bucket
//     edge (what a counter track draws) and the last value is the curve's last value;
//   - at most 1 + 3 x (buckets touched) points come back.
// It is M4's rule (min, max and the bucket's ends: Jugel et al., VLDB 2014) less each bucket's
// first point, which a step drawing gets from the previous bucket's last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuleak::output {

// Indices of the points of (t[i], bytes[i]), i < n, to keep, ascending. `t` ascending (ns on any
// origin); bucket b holds the points with origin + b x bucket_ns <= t < origin + (b+1) x bucket_ns
// (bucket_ns 0 counts as 1).
std::vector<uint32_t> decimate_curve(const int64_t *t, const uint64_t *bytes, size_t n, int64_t origin,
                                     uint64_t bucket_ns);

// The narrowest bucket width with which `curves` curves whose points lie in [first, last], thinned
// with origin `first`, give at most max_points points together (max_points below 4 per curve
// counts as 4 per curve).
uint64_t bucket_width_for(int64_t first, int64_t last, size_t curves, size_t max_points);

}  // namespace gpuleak::output
