// iterations[] (report_iterations.h), each row's fields taken from report_rows.def by both writers.
#include "output/report_iterations.h"

#include <string>
#include <string_view>
#include <type_traits>

#include "output/report_rows.def"

namespace gpuleak::output {

using nlohmann::json;

namespace {

// At most kMaxReportedIterations entries: a run of 300,000 one-allocation iterations would
// otherwise write a report of over 100 MB. analysis.iterations_total says how many there were.
constexpr size_t kMaxReportedIterations = 10000;
constexpr size_t kEdgeIterations = 1000;

// The text writer writes members in the table's order, which must be the tree's: its keys sorted.
constexpr bool ascending(std::initializer_list<std::string_view> keys) {
  for (auto k = keys.begin(); k != keys.end() && k + 1 != keys.end(); ++k)
    if (!(k[0] < k[1])) return false;
  return true;
}
#define GPULEAK_KEY(key, value) #key,
static_assert(ascending({GPULEAK_ITERATION_FIELDS(GPULEAK_KEY)}), "report_rows.def: iteration fields out of key order");
static_assert(ascending({GPULEAK_ITERATION_DEVICE_FIELDS(GPULEAK_KEY)}),
              "report_rows.def: iteration device fields out of key order");
#undef GPULEAK_KEY
#define GPULEAK_ONE(key, value) +1
constexpr size_t kIterationFields = 0 GPULEAK_ITERATION_FIELDS(GPULEAK_ONE);
constexpr size_t kDeviceFields = 0 GPULEAK_ITERATION_DEVICE_FIELDS(GPULEAK_ONE);
#undef GPULEAK_ONE

// One listed iteration's device rows: the value of the table's `devices` field.
struct DeviceRows {
  const analysis::Analysis &a;
  size_t i;
};

json tree_value(const DeviceRows &rows) {
  json out = json::array();
  auto &cells = out.get_ref<json::array_t &>();
  cells.reserve(rows.a.devices.size());
  for (size_t k = 0; k < rows.a.devices.size(); ++k) {
    const analysis::IterationDevice d = rows.a.iteration_device(rows.i, k);
    // Members set one by one: an initializer list builds every pair as a two-element array and
    // copies it into the object, which was most of the cost of 10,000 iterations.
    json &row = cells.emplace_back(json::value_t::object);
#define GPULEAK_TREE_FIELD(key, value) row[#key] = value;
    GPULEAK_ITERATION_DEVICE_FIELDS(GPULEAK_TREE_FIELD)
#undef GPULEAK_TREE_FIELD
  }
  return out;
}
template <typename T>
json tree_value(const T &v) {
  return v;
}

template <typename>
constexpr bool kUnknownType = false;

// A table value as text at `indent` (the indentation of the member that holds it).
template <typename T>
void text_value(JsonTextWriter &w, const T &v, size_t indent) {
  if constexpr (std::is_same_v<T, bool>) {
    w.boolean(v);
  } else if constexpr (std::is_integral_v<T>) {
    w.integer(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    w.string(v);
  } else if constexpr (std::is_same_v<T, DeviceRows>) {
    const analysis::Analysis &a = v.a;
    if (a.devices.empty()) return w.raw("[]");
    w.raw("[\n");
    for (size_t k = 0; k < a.devices.size(); ++k) {
      const analysis::IterationDevice d = a.iteration_device(v.i, k);
      const size_t r = indent + 2;  // the row's
      w.spaces(r);
      w.raw("{\n");
      size_t left = kDeviceFields;
#define GPULEAK_TEXT_FIELD(key, value) w.member(#key, r, --left == 0, [&] { text_value(w, value, r + 2); });
      GPULEAK_ITERATION_DEVICE_FIELDS(GPULEAK_TEXT_FIELD)
#undef GPULEAK_TEXT_FIELD
      w.spaces(r);
      w.raw(k + 1 < a.devices.size() ? "},\n" : "}\n");
    }
    w.spaces(indent);
    w.raw("]");
  } else {
    // A field of another type (a double: the tree's number() rounding) needs its text here first.
    static_assert(kUnknownType<T>, "report_rows.def: the text writer has no rule for this field's type");
  }
}

}  // namespace

bool iteration_listed(size_t i, size_t n) {
  if (n <= kMaxReportedIterations || i < kEdgeIterations || i >= n - kEdgeIterations) return true;
  const size_t middle = n - 2 * kEdgeIterations, slots = kMaxReportedIterations - 2 * kEdgeIterations;
  const size_t k = i - kEdgeIterations;  // kept when it is the first of its slot
  return k * slots / middle != (k == 0 ? slots : (k - 1) * slots / middle);
}

size_t listed_iterations(const analysis::Analysis &a) {
  size_t listed = 0;
  for (size_t i = 0; i < a.iterations.size(); ++i) listed += iteration_listed(i, a.iterations.size());
  return listed;
}

json iterations_json(const analysis::Analysis &a) {
  json out = json::array();
  auto &entries = out.get_ref<json::array_t &>();
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    if (!iteration_listed(i, a.iterations.size())) continue;
    const analysis::Iteration &it = a.iterations[i];
    const DeviceRows rows{a, i};
    json &entry = entries.emplace_back(json::value_t::object);
#define GPULEAK_TREE_FIELD(key, value) entry[#key] = tree_value(value);
    GPULEAK_ITERATION_FIELDS(GPULEAK_TREE_FIELD)
#undef GPULEAK_TREE_FIELD
  }
  return out;
}

void write_iterations(const analysis::Analysis &a, JsonTextWriter &w, size_t indent) {
  const size_t n = a.iterations.size();
  size_t left = listed_iterations(a);
  if (left == 0) return w.raw("[]");
  w.raw("[\n");
  for (size_t i = 0; i < n; ++i) {
    if (!iteration_listed(i, n)) continue;
    const analysis::Iteration &it = a.iterations[i];
    const DeviceRows rows{a, i};
    const size_t e = indent + 2;  // the entry's indentation
    w.spaces(e);
    w.raw("{\n");
    size_t fields = kIterationFields;
#define GPULEAK_TEXT_FIELD(key, value) w.member(#key, e, --fields == 0, [&] { text_value(w, value, e + 2); });
    GPULEAK_ITERATION_FIELDS(GPULEAK_TEXT_FIELD)
#undef GPULEAK_TEXT_FIELD
    w.spaces(e);
    w.raw(--left ? "},\n" : "}\n");
  }
  w.spaces(indent);
  w.raw("]");
}

}  // namespace gpuleak::output
