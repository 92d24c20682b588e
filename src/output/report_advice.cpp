#include "output/report_advice.h"

#include "output/json_text.h"
#include "text/paths.h"

namespace gpuleak::output {

using nlohmann::json;

namespace {

json numbers(const std::vector<analysis::AdviceNumber> &list) {
  json j = json::object();
  for (const auto &n : list) j[n.name] = report_number(n.value, 4);  // shares, per-iteration means
  return j;
}

}  // namespace

json advice_json(const std::vector<analysis::Advice> &advice,
                 const std::function<void(const analysis::Site &, json &)> &describe) {
  json out = json::array();
  for (const auto &a : advice) {
    json j;
    j["kind"] = analysis::advice_kind_name(a.kind);
    j["device"] = a.device;
    if (a.has_site) {
      describe(a.site, j);
    } else {
      j["site_id"] = nullptr;
      j["stack"] = json::array();
    }
    j["evidence"] = numbers(a.evidence);
    j["saving"] = numbers(a.saving);
    j["message"] = a.message;
    // The user's line to change, when the finding knows it apart from its site.
    if (a.change_line > 0)
      j["change_at"] = {{"call", a.change_call},
                        {"file", a.change_file},
                        {"line", a.change_line},
                        {"text", text::basename_of(a.change_file) + ":" + std::to_string(a.change_line)}};
    else
      j["change_at"] = nullptr;
    json sites = json::array();
    for (const auto &s : a.sites) {
      json x{{"bytes", s.bytes},
             {"count", s.count},
             {"this_iteration_bytes", s.this_iteration_bytes},
             {"earlier_iterations_bytes", s.earlier_iterations_bytes},
             {"before_loop_bytes", s.before_loop_bytes}};
      describe(s.site, x);
      sites.push_back(std::move(x));
    }
    j["sites"] = std::move(sites);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace gpuleak::output
