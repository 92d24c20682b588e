// Thinning a memory-over-time series for display without losing its peaks.
//
// A memory curve is read for its extremes: the peak that ran a device out of memory must survive
// any reduction. So points are never averaged: the time range is cut into equal buckets and each
// bucket keeps its lowest and its highest point (in time order), which is what a plot can show
// in one pixel column anyway. The viewer does the same per zoom level (viewer/src/decimate.js).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuleak::output::view {

// Live bytes after each event, time ascending.
struct Series {
  std::vector<uint64_t> t_ns;
  std::vector<uint64_t> bytes;
  size_t size() const { return t_ns.size(); }
};

// Returns `in` unchanged when it has at most `max_points` points (max_points < 4 counts as 4).
// Otherwise at most max_points points: the first and the last point, and per bucket its minimum
// and maximum (ties: the earliest). Every point returned is a point of `in`; the series' maximum
// and minimum are always among them.
Series decimate_min_max(const Series &in, size_t max_points);

}  // namespace gpuleak::output::view
