#include "output/trace/pprof_export.h"

#include <zlib.h>

#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "output/trace/protobuf_encoder.h"
#include "text/escape.h"

namespace gpuleak::output::trace {

using text::valid_utf8;

namespace {

// profile.proto field numbers (github.com/google/pprof/proto/profile.proto).
namespace profile {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
                   kTimeNanos = 9, kPeriodType = 11, kPeriod = 12, kDefaultSampleType = 14;
}
namespace value_type {
constexpr uint32_t kType = 1, kUnit = 2;
}
namespace sample {
constexpr uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label {
constexpr uint32_t kKey = 1, kStr = 2;
}
namespace mapping {
constexpr uint32_t kId = 1, kFilename = 5, kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9;
}
namespace location {
constexpr uint32_t kId = 1, kMappingId = 2, kLine = 4;
}
namespace line {
constexpr uint32_t kFunctionId = 1, kLine = 2;
}
namespace function {
constexpr uint32_t kId = 1, kName = 2, kSystemName = 3, kFilename = 4;
}

// The profile's tables: strings (index 0 is "", as profile.proto requires), functions keyed by
// (name, file), locations keyed by (function, line). Ids start at 1; 0 means none.
class Tables {
 public:
  Tables() { string(""); }

  int64_t string(const std::string &s) {
    auto [it, inserted] = strings_.emplace(s, static_cast<int64_t>(string_order_.size()));
    if (inserted) string_order_.push_back(s);
    return it->second;
  }
  uint64_t location(const std::string &name, const std::string &file, int line_number) {
    const uint64_t fn = function(name, file);
    auto [it, inserted] = locations_.emplace(std::make_pair(fn, line_number), locations_.size() + 1);
    if (inserted) location_order_.push_back({fn, line_number});
    return it->second;
  }

  void write(ProtoEncoder &p) const {
    for (size_t i = 0; i < location_order_.size(); ++i) {
      p.message_field(profile::kLocation, [&](ProtoEncoder &l) {
        l.varint_field(location::kId, i + 1);
        l.varint_field(location::kMappingId, 1);
        l.message_field(location::kLine, [&](ProtoEncoder &ln) {
          ln.varint_field(line::kFunctionId, location_order_[i].first);
          if (location_order_[i].second > 0) ln.int_field(line::kLine, location_order_[i].second);
        });
      });
    }
    for (size_t i = 0; i < function_order_.size(); ++i) {
      p.message_field(profile::kFunction, [&](ProtoEncoder &f) {
        f.varint_field(function::kId, i + 1);
        f.int_field(function::kName, function_order_[i].first);
        f.int_field(function::kSystemName, function_order_[i].first);
        if (function_order_[i].second != 0) f.int_field(function::kFilename, function_order_[i].second);
      });
    }
    for (const std::string &s : string_order_) p.bytes_field(profile::kStringTable, s);
  }

 private:
  uint64_t function(const std::string &name, const std::string &file) {
    auto key = std::make_pair(string(name), string(file));
    auto [it, inserted] = functions_.emplace(key, functions_.size() + 1);
    if (inserted) function_order_.push_back(key);
    return it->second;
  }

  std::unordered_map<std::string, int64_t> strings_;
  std::vector<std::string> string_order_;
  std::map<std::pair<int64_t, int64_t>, uint64_t> functions_;
  std::vector<std::pair<int64_t, int64_t>> function_order_;
  std::map<std::pair<uint64_t, int>, uint64_t> locations_;
  std::vector<std::pair<uint64_t, int>> location_order_;
};

std::string gzip(const std::string &raw) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, which pprof expects (it also reads raw protobuf).
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("export: cannot start gzip compression");
  std::string out(deflateBound(&z, raw.size()), '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("export: gzip compression failed");
  return out;
}

}  // namespace

std::string pprof_profile_uncompressed(const std::vector<LiveStack> &live, int64_t time_ns,
                                       const std::string &program) {
  Tables t;
  ProtoEncoder p;
  auto value_type_field = [&](uint32_t field, const char *type, const char *unit) {
    const int64_t type_index = t.string(type), unit_index = t.string(unit);
    p.message_field(field, [&](ProtoEncoder &v) {
      v.int_field(value_type::kType, type_index);
      v.int_field(value_type::kUnit, unit_index);
    });
  };
  value_type_field(profile::kSampleType, "inuse_space", "bytes");
  value_type_field(profile::kSampleType, "inuse_objects", "count");
  const int64_t device_key = t.string("device");
  for (const LiveStack &s : live) {
    if (s.count == 0) continue;
    const std::string device = "cuda:" + std::to_string(s.device);
    std::vector<uint64_t> locations;  // leaf first
    for (const Frame &f : s.frames)
      locations.push_back(
          t.location(valid_utf8(f.function.empty() ? frame_label(f) : f.function), valid_utf8(f.file), f.line));
    if (s.frames.empty()) locations.push_back(t.location("unknown site", "", 0));
    locations.push_back(t.location(device, "", 0));
    const int64_t device_value = t.string(device);
    p.message_field(profile::kSample, [&](ProtoEncoder &e) {
      for (uint64_t id : locations) e.varint_field(sample::kLocationId, id);
      e.int_field(sample::kValue, static_cast<int64_t>(s.bytes));
      e.int_field(sample::kValue, static_cast<int64_t>(s.count));
      e.message_field(sample::kLabel, [&](ProtoEncoder &l) {
        l.int_field(label::kKey, device_key);
        l.int_field(label::kStr, device_value);
      });
    });
  }
  // One "sample" per live allocation, as a heap profile with no sampling: period 1 byte.
  value_type_field(profile::kPeriodType, "space", "bytes");
  p.int_field(profile::kPeriod, 1);
  if (time_ns > 0) p.int_field(profile::kTimeNanos, time_ns);
  p.int_field(profile::kDefaultSampleType, t.string("inuse_space"));
  // One mapping, marked as already symbolized: pprof then neither looks for the binary nor
  // warns that its name is unknown.
  const int64_t program_index = t.string(valid_utf8(program));
  p.message_field(profile::kMapping, [&](ProtoEncoder &m) {
    m.varint_field(mapping::kId, 1);
    m.int_field(mapping::kFilename, program_index);
    m.bool_field(mapping::kHasFunctions, true);
    m.bool_field(mapping::kHasFilenames, true);
    m.bool_field(mapping::kHasLineNumbers, true);
  });
  t.write(p);
  return p.take();
}

std::string pprof_profile(const std::vector<LiveStack> &live, int64_t time_ns, const std::string &program) {
  return gzip(pprof_profile_uncompressed(live, time_ns, program));
}

}  // namespace gpuleak::output::trace
