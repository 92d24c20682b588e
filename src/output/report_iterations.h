// The report's `iterations[]`: the listed iterations (at most kMaxReportedIterations, an even
// sample past that) and each one's per-device row. Two writers, both generated from one field
// table (report_rows.def): the tree for make_report(), and the text make_report_document() writes
// straight from the analysis (report_json.h).
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "output/json_text.h"

namespace gpuleak::output {

// Whether iteration i of n is listed: all of them up to kMaxReportedIterations, else the first and
// the last kEdgeIterations and an even sample of the rest, each entry with its own index.
bool iteration_listed(size_t i, size_t n);
// How many of the analysis's iterations are listed.
size_t listed_iterations(const analysis::Analysis &a);

// `iterations[]` as a tree.
nlohmann::json iterations_json(const analysis::Analysis &a);
// iterations_json(a) as text at `indent`, byte for byte what JsonTextWriter writes of the tree: no
// tree of 10,000 objects built, written and freed.
void write_iterations(const analysis::Analysis &a, JsonTextWriter &w, size_t indent);

}  // namespace gpuleak::output
