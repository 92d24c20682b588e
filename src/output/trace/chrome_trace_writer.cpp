#include "output/trace/chrome_trace_writer.h"

#include "text/paths.h"

namespace gpuleak::output::trace {

using nlohmann::json;
using text::hex;

std::string json_line(const json &event) {
  std::string text = event.dump(-1, ' ', false, json::error_handler_t::replace);
  // '<' only occurs inside strings, where "\/" is a valid escape of '/'.
  if (text.find("</") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

json micros(int64_t ns) {
  if (ns % 1000 == 0) return ns / 1000;
  return static_cast<double>(ns) / 1000.0;
}

void ChromeTraceWriter::write(const json &event) {
  line_.clear();
  line_ += events_ == 0 ? "[\n" : ",\n";
  line_ += json_line(event);
  out_->write(line_);
  ++events_;
}

void ChromeTraceWriter::begin(const TraceInfo &info, const std::vector<Track> &tracks) {
  pid_ = info.pid;
  tracks_ = tracks;
  // First, so that a reader (gpuleak merge) finds the anchors without parsing the whole file.
  write({{"ph", "M"}, {"name", "gpuleak_trace"}, {"pid", pid_}, {"tid", 0}, {"args", info.metadata}});
  write({{"ph", "M"}, {"name", "process_name"}, {"pid", pid_}, {"tid", 0}, {"args", {{"name", info.process_name}}}});
  std::string labels = info.host.empty() ? "" : "host " + info.host;
  if (info.rank >= 0) {
    labels += (labels.empty() ? "" : ", ") + std::string("rank ") + std::to_string(info.rank);
    write({{"ph", "M"},
           {"name", "process_sort_index"},
           {"pid", pid_},
           {"tid", 0},
           {"args", {{"sort_index", info.rank}}}});
  }
  if (!labels.empty())
    write({{"ph", "M"}, {"name", "process_labels"}, {"pid", pid_}, {"tid", 0}, {"args", {{"labels", labels}}}});
  for (const Track &t : tracks_) {
    if (t.kind != TrackKind::kThread && t.kind != TrackKind::kPseudo) continue;
    write({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid_}, {"tid", t.tid}, {"args", {{"name", t.name}}}});
    write({{"ph", "M"},
           {"name", "thread_sort_index"},
           {"pid", pid_},
           {"tid", t.tid},
           {"args", {{"sort_index", t.sort_index}}}});
  }
}

void ChromeTraceWriter::event(const Event &e) {
  if (e.phase == Phase::kCompleteEnd) return;  // an "X" event carries its duration
  static const Track kNoTrack{};
  const Track &track = e.track < tracks_.size() ? tracks_[e.track] : kNoTrack;
  json j;
  j["pid"] = pid_;
  j["ts"] = micros(e.ts_ns);
  switch (e.phase) {
    case Phase::kCounter:
      j["ph"] = "C";
      j["name"] = e.name.empty() ? track.name : e.name;
      // One value per event: Perfetto makes each key its own track, catapult stacks them.
      j["args"] = {{track.bytes_unit ? "bytes" : "value", e.value}};
      return write(j);
    case Phase::kComplete:
      j["ph"] = "X";
      j["dur"] = micros(e.dur_ns);
      break;
    case Phase::kBegin:
      j["ph"] = "B";
      break;
    case Phase::kEnd:
      j["ph"] = "E";
      break;
    case Phase::kAsyncBegin:
    case Phase::kAsyncEnd:
      j["ph"] = e.phase == Phase::kAsyncBegin ? "b" : "e";
      j["id"] = hex(e.async_id);
      j["tid"] = e.tid;
      break;
    case Phase::kInstant:
      j["ph"] = "i";
      j["s"] = e.scope == Scope::kGlobal ? "g" : e.scope == Scope::kProcess ? "p" : "t";
      break;
    default:
      return;
  }
  const bool row = &track != &kNoTrack && (track.kind == TrackKind::kThread || track.kind == TrackKind::kPseudo);
  if (!j.contains("tid")) j["tid"] = row ? track.tid : 0;
  if (e.phase != Phase::kEnd) {
    j["name"] = e.name;
    j["cat"] = e.category;
  }
  if (!e.args.is_null()) j["args"] = e.args;
  write(j);
  // Flow arrows (flow events v1): "s" inside the launching slice, "f" binding to the enclosing
  // slice ("bp": "e") where the GPU work starts. Same name, category and id at both ends.
  for (uint64_t id : e.flows_out)
    write({{"ph", "s"},
           {"id", id},
           {"pid", pid_},
           {"tid", j["tid"]},
           {"ts", j["ts"]},
           {"name", "launch"},
           {"cat", "gpu.flow"}});
  if (e.flow_in)
    write({{"ph", "f"},
           {"bp", "e"},
           {"id", e.flow_in},
           {"pid", pid_},
           {"tid", j["tid"]},
           {"ts", j["ts"]},
           {"name", "launch"},
           {"cat", "gpu.flow"}});
}

bool ChromeTraceWriter::end() {
  out_->write(events_ == 0 ? "[\n]\n" : "\n]\n");
  return true;
}

}  // namespace gpuleak::output::trace
