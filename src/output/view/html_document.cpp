#include "output/view/html_document.h"

#include <map>
#include <stdexcept>

#include "text/limits.h"

#ifndef GPULEAK_SOURCE_DIR
#define GPULEAK_SOURCE_DIR ""
#endif

namespace gpuleak::output::view {

std::string escape_json_for_script(std::string_view in) {
  std::string out;
  out.reserve(in.size() + in.size() / 64 + 16);
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '\xE2' && i + 2 < in.size() && in[i + 1] == '\x80' &&
               (in[i + 2] == '\xA8' || in[i + 2] == '\xA9')) {
      out += in[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // U+2028/2029 in UTF-8: E2 80 A8/A9
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

nlohmann::json iteration_columns(const nlohmann::json &iterations) {
  using nlohmann::json;
  static const char *const kDeviceFields[] = {"live_end_bytes", "peak_bytes",  "allocated_bytes",
                                              "freed_bytes",    "alloc_count", "free_count"};
  json loops = json::array(), loop = json::array(), index = json::array(), primary = json::array(),
       start = json::array(), end = json::array(), devices = json::array();
  std::map<std::string, size_t> loop_ids;
  const json none = nullptr;
  auto field = [&](const json &j, const char *key) -> const json & {
    auto it = j.is_object() ? j.find(key) : j.end();
    return j.is_object() && it != j.end() ? *it : none;
  };
  if (iterations.is_array() && !iterations.empty()) {
    const json &first = field(iterations[0], "devices");
    // Every iteration gets a column entry per device of the first: a hand-made report listing
    // thousands of devices once would cost devices x iterations values.
    if (first.is_array() && first.size() > text::kMaxDevices)
      throw std::runtime_error("the report's iterations[0] lists " + std::to_string(first.size()) +
                               " devices, more than " + std::to_string(text::kMaxDevices) + " (docs/limits.md)");
    for (size_t d = 0; first.is_array() && d < first.size(); ++d) {
      json dev = {{"index", field(first[d], "index")}};
      for (const char *f : kDeviceFields) dev[f] = json::array();
      devices.push_back(std::move(dev));
    }
    for (const json &it : iterations) {
      const json &name = field(it, "loop");
      std::string key = name.is_string() ? name.get<std::string>() : std::string();
      auto [id, fresh] = loop_ids.try_emplace(key, loop_ids.size());
      if (fresh) loops.push_back(key);
      loop.push_back(id->second);
      index.push_back(field(it, "index"));
      primary.push_back(field(it, "primary").is_boolean() && field(it, "primary").get<bool>() ? 1 : 0);
      start.push_back(field(it, "start_ns"));
      end.push_back(field(it, "end_ns"));
      const json &per_device = field(it, "devices");
      for (size_t d = 0; d < devices.size(); ++d) {
        const json &dev = per_device.is_array() && d < per_device.size() ? per_device[d] : none;
        for (const char *f : kDeviceFields) devices[d][f].push_back(field(dev, f));
      }
    }
  }
  return {{"loops", std::move(loops)},     {"loop", std::move(loop)},      {"index", std::move(index)},
          {"primary", std::move(primary)}, {"start_ns", std::move(start)}, {"end_ns", std::move(end)},
          {"devices", std::move(devices)}};
}

std::string embedded_data(nlohmann::json report, const nlohmann::json &view) {
  nlohmann::json iterations;
  if (report.is_object() && report.contains("iterations")) {
    iterations = std::move(report["iterations"]);
    report.erase("iterations");
  }
  nlohmann::json doc = {{"schema", "gpuleak.html/1"},
                        {"report", std::move(report)},
                        {"iterations", iteration_columns(iterations)},
                        {"view", view}};
  return escape_json_for_script(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string splice_into_template(const std::string &html_template, const std::string &data) {
  const size_t at = html_template.find(kDataPlaceholder);
  if (at == std::string::npos || html_template.find(kDataPlaceholder, at + 1) != std::string::npos)
    throw std::runtime_error("not a gpuleak viewer template (expected one data placeholder)");
  std::string html;
  html.reserve(html_template.size() + data.size());
  html.append(html_template, 0, at);
  html += data;
  html.append(html_template, at + kDataPlaceholder.size(), std::string::npos);
  return html;
}

const char *source_tree_dir() { return GPULEAK_SOURCE_DIR; }

std::vector<std::string> template_candidates(const std::string &explicit_path, const std::string &exe_dir,
                                             const std::string &source_dir) {
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<std::string> out;
  if (!exe_dir.empty()) out.push_back(exe_dir + "/../share/gpuleak/viewer.html");
  if (!source_dir.empty()) {
    out.push_back(source_dir + "/viewer/dist/index.html");
    out.push_back(source_dir + "/viewer/prebuilt/viewer.html");
  }
  return out;
}

}  // namespace gpuleak::output::view
