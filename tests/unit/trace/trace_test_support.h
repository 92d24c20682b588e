// What the trace tests share: synthetic captures (tests/unit/analysis/capture_builder.h, plus a
// writer that stores one as a .gpuleak file for the CLI), a symbolizer that needs no ELF files,
// the JSON trace re-parsed by nlohmann, and a small protobuf decoder for the Perfetto output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"
#include "output/trace/trace_builder.h"
#include "output/trace/trace_options.h"

namespace gpuleak::testing {

// Frames for stack id N: one native frame "fn<N>" in "/src/file<N>.cpp" line N, unless `names`
// gives that id's function name instead.
output::SymbolizeFn fake_symbolizer(std::map<uint32_t, std::string> names = {});

// The whole trace of a capture, JSON, as text.
std::string json_trace(const format::Capture &capture, const output::trace::TraceOptions &options = {},
                       output::trace::TraceSummary *summary = nullptr,
                       const output::SymbolizeFn &symbolize = fake_symbolizer());
std::string perfetto_trace(const format::Capture &capture, const output::trace::TraceOptions &options = {},
                           const output::SymbolizeFn &symbolize = fake_symbolizer());

// Parses with nlohmann::json::parse (throws on invalid JSON, failing the test).
nlohmann::json parse(const std::string &text);
// The events of a parsed trace that have this phase (and this name, when given).
std::vector<nlohmann::json> events(const nlohmann::json &trace, const std::string &ph, const std::string &name = "");

// The capture as the bytes of a .gpuleak file (header and records of capture_format.h).
std::string capture_bytes(const format::Capture &capture);
void write_capture_file(const std::string &path, const format::Capture &capture);
std::string temp_dir(const std::string &name);  // fresh, empty
std::string read_text(const std::string &path);

// A protobuf message decoded field by field (wire types 0, 1, 2, 5).
struct PbField {
  uint32_t number = 0;
  uint8_t wire = 0;
  uint64_t value = 0;  // varint, fixed64 or fixed32
  std::string bytes;   // length-delimited
};
// False when the bytes are not a well-formed protobuf message.
bool pb_decode(std::string_view bytes, std::vector<PbField> *out);
std::vector<PbField> pb_fields(const std::vector<PbField> &fields, uint32_t number);
const PbField *pb_field(const std::vector<PbField> &fields, uint32_t number);  // first, or null
std::vector<PbField> pb_message(const PbField &field);  // decodes a length-delimited field (fails the test on error)

// A capture with iterations, a leak, NVTX ranges, an OOM and a second thread: most of what a
// trace can show, small.
format::Capture rich_capture();

}  // namespace gpuleak::testing
