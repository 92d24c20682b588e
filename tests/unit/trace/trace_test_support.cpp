#include "trace_test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "output/trace/chrome_trace_writer.h"
#include "output/trace/file_io.h"
#include "output/trace/perfetto_writer.h"

namespace gpuleak::testing {

using nlohmann::json;
using namespace output::trace;
using output::SymbolizeFn;

SymbolizeFn fake_symbolizer(std::map<uint32_t, std::string> names) {
  return [names](uint32_t id) {
    output::Frame f;
    auto it = names.find(id);
    f.function = it != names.end() ? it->second : "fn" + std::to_string(id);
    f.file = "/src/file" + std::to_string(id) + ".cpp";
    f.line = static_cast<int>(id);
    f.module = "/opt/app/bin/app";
    f.address = 0x400000 + id;
    return output::Stack{f};
  };
}

std::string json_trace(const format::Capture &c, const TraceOptions &o, TraceSummary *summary,
                       const SymbolizeFn &symbolize) {
  analysis::Analysis a = analysis::analyze(c);
  StringStream out;
  ChromeTraceWriter writer(&out);
  TraceSummary s = build_trace(c, a, symbolize, o, &writer);
  if (summary) *summary = s;
  return out.data;
}

std::string perfetto_trace(const format::Capture &c, const TraceOptions &o, const SymbolizeFn &symbolize) {
  analysis::Analysis a = analysis::analyze(c);
  StringStream out;
  PerfettoWriter writer(&out);
  build_trace(c, a, symbolize, o, &writer);
  return out.data;
}

json parse(const std::string &text) { return json::parse(text); }

std::vector<json> events(const json &trace, const std::string &ph, const std::string &name) {
  std::vector<json> out;
  for (const json &e : trace)
    if (e.value("ph", "") == ph && (name.empty() || e.value("name", "") == name)) out.push_back(e);
  return out;
}

namespace {

template <typename T>
void put(std::string *out, const T &value) {
  out->append(reinterpret_cast<const char *>(&value), sizeof value);
}

void record(std::string *out, format::RecordType type, const std::string &payload) {
  format::RecordHeader h{static_cast<uint32_t>(payload.size()), static_cast<uint16_t>(type), 0};
  put(out, h);
  out->append(payload);
}

template <typename T>
void fixed_record(std::string *out, format::RecordType type, const T &value) {
  std::string payload;
  put(&payload, value);
  record(out, type, payload);
}

}  // namespace

std::string capture_bytes(const format::Capture &c) {
  std::string out;
  format::FileHeader h = c.header;
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.major = format::kMajorVersion;
  h.minor = format::kMinorVersion;
  h.header_size = sizeof h;
  put(&out, h);
  if (c.run) {
    std::string p;
    format::RunInfoRecord fixed = c.run->fixed;
    std::string command;
    for (size_t i = 0; i < c.run->command.size(); ++i) command += (i ? std::string(1, '\0') : "") + c.run->command[i];
    const std::string strings[] = {c.run->program,          command,        c.run->host, c.run->version,
                                   c.run->allocator.text(), c.run->unwinder};
    fixed.string_count = 6;
    put(&p, fixed);
    for (const std::string &s : strings) {
      put(&p, static_cast<uint32_t>(s.size()));
      p += s;
    }
    record(&out, format::RecordType::kRunInfo, p);
  }
  for (const auto &d : c.devices) {
    std::string p;
    put(&p, format::DeviceRecord{d.index, static_cast<uint32_t>(d.name.size()), d.total_bytes});
    record(&out, format::RecordType::kDevice, p + d.name);
  }
  for (const auto &[id, s] : c.strings) {
    std::string p;
    put(&p, format::StringRecord{id, static_cast<uint32_t>(s.size())});
    record(&out, format::RecordType::kString, p + s);
  }
  for (const auto &[id, s] : c.stacks) {
    std::string p;
    put(&p, format::StackRecord{id, static_cast<uint16_t>(s.frames.size()), static_cast<uint16_t>(s.kind)});
    for (uint64_t f : s.frames) put(&p, f);
    record(&out, format::RecordType::kStack, p);
  }
  for (const auto &m : c.memory) fixed_record(&out, format::RecordType::kMemory, m);
  for (const auto &n : c.nvtx) fixed_record(&out, format::RecordType::kNvtx, n);
  for (const auto &m : c.markers) fixed_record(&out, format::RecordType::kMarker, m);
  for (const auto &o : c.ooms) fixed_record(&out, format::RecordType::kOom, o);
  for (const auto &g : c.gpu_activity) fixed_record(&out, format::RecordType::kGpuActivity, g);
  if (c.stats) fixed_record(&out, format::RecordType::kStats, *c.stats);
  return out;
}

void write_capture_file(const std::string &path, const format::Capture &c) {
  std::ofstream(path, std::ios::binary) << capture_bytes(c);
}

std::string temp_dir(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("gpuleak-trace-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read_text(const std::string &path) {
  std::string out, error;
  EXPECT_TRUE(read_file(path, &out, &error)) << error;
  return out;
}

bool pb_decode(std::string_view b, std::vector<PbField> *out) {
  size_t i = 0;
  auto varint = [&](uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (i >= b.size()) return false;
      uint8_t c = static_cast<uint8_t>(b[i++]);
      *v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  while (i < b.size()) {
    uint64_t key;
    if (!varint(&key)) return false;
    PbField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint8_t>(key & 7);
    if (f.number == 0) return false;
    switch (f.wire) {
      case 0:
        if (!varint(&f.value)) return false;
        break;
      case 1:
      case 5: {
        size_t n = f.wire == 1 ? 8 : 4;
        if (b.size() - i < n) return false;
        for (size_t k = 0; k < n; ++k) f.value |= static_cast<uint64_t>(static_cast<uint8_t>(b[i + k])) << (8 * k);
        i += n;
        break;
      }
      case 2: {
        uint64_t len;
        if (!varint(&len) || len > b.size() - i) return false;
        f.bytes.assign(b.data() + i, len);
        i += len;
        break;
      }
      default:
        return false;
    }
    out->push_back(std::move(f));
  }
  return true;
}

std::vector<PbField> pb_fields(const std::vector<PbField> &fields, uint32_t number) {
  std::vector<PbField> out;
  for (const auto &f : fields)
    if (f.number == number) out.push_back(f);
  return out;
}

const PbField *pb_field(const std::vector<PbField> &fields, uint32_t number) {
  for (const auto &f : fields)
    if (f.number == number) return &f;
  return nullptr;
}

std::vector<PbField> pb_message(const PbField &field) {
  std::vector<PbField> out;
  EXPECT_EQ(field.wire, 2);
  EXPECT_TRUE(pb_decode(field.bytes, &out)) << "field " << field.number << " is not a message";
  return out;
}

format::Capture rich_capture() {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 1ull << 30);
  format::RunInfo run;
  run.fixed.pid = 4242;
  run.fixed.rank = 3;
  run.program = "train.py";
  run.host = "node1";
  run.version = "0.1.0";
  b.capture.run = run;
  b.capture.stats = format::StatsRecord{};
  b.start("epoch", 77);
  for (int i = 0; i < 12; ++i) {
    b.begin("train");
    b.push("forward");
    uint64_t tmp = b.alloc(4 * kMiB, 1);
    b.alloc(1 * kMiB, 2);  // the leak: never freed
    b.pop();
    b.free(tmp);
    if (i == 6) {
      uint64_t other = b.alloc(2 * kMiB, 3);
      b.capture.memory.back().tid = 2;
      b.free(other).tid = 2;
    }
    b.end("train");
  }
  b.end_range(77);
  b.failed_alloc(2ull << 30, 4);
  b.oom(2ull << 30, 100 * kMiB, 1ull << 30, 4);
  return b.capture;
}

}  // namespace gpuleak::testing
