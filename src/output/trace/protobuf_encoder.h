// A minimal protobuf encoder: enough of the wire format to write Perfetto TracePackets by hand
// (no SDK, no generated code; Perfetto documents this use in "Writing TrackEvent Protos
// Synthetically"). Field numbers come from the caller (perfetto_fields.h).
//
// Wire format: each field is a key varint (field_number << 3 | wire type) then its value:
// type 0 varint (ints, bools, enums; negative int64 as its 10-byte two's complement), type 1
// 8 bytes little endian (double, fixed64), type 2 a length varint then the bytes (strings,
// bytes, nested messages).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuleak::output::trace {

class ProtoEncoder {
 public:
  void varint_field(uint32_t field, uint64_t value) {
    key(field, 0);
    varint(value);
  }
  void int_field(uint32_t field, int64_t value) { varint_field(field, static_cast<uint64_t>(value)); }
  void bool_field(uint32_t field, bool value) { varint_field(field, value ? 1 : 0); }
  void double_field(uint32_t field, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    fixed64_field(field, bits);
  }
  void fixed64_field(uint32_t field, uint64_t value) {
    key(field, 1);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(value >> (8 * i)));
  }
  // Strings must be valid UTF-8 for strict decoders; callers repair untrusted text first.
  void bytes_field(uint32_t field, std::string_view bytes) {
    key(field, 2);
    varint(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }
  // A nested message: `fill` writes its fields into a fresh encoder, which is then appended
  // length-delimited.
  template <typename Fill>
  void message_field(uint32_t field, Fill &&fill) {
    ProtoEncoder nested;
    fill(nested);
    bytes_field(field, nested.data());
  }

  const std::string &data() const { return out_; }
  std::string take() { return std::move(out_); }
  void clear() { out_.clear(); }

 private:
  void key(uint32_t field, uint32_t wire_type) { varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }

  std::string out_;
};

}  // namespace gpuleak::output::trace
