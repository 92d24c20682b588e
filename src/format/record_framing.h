// A capture's records are framed one way (capture_format.h: a RecordHeader, then the payload):
// these are the one writer and the one walker of that framing over bytes in memory. The recorder
// frames into its batches and its signal-time tail with them, the writer's tally and the
// aggregator walk drained batches with them; the readers of files have their own, bounded,
// cursor (capture_reader.cpp), which also checks what a file may claim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "format/capture_format.h"

namespace gpuleak::format {

inline RecordHeader record_header(RecordType type, size_t payload_bytes) {
  return RecordHeader{static_cast<uint32_t>(payload_bytes), static_cast<uint16_t>(type), 0};
}

// Appends one whole record: its header, `payload` and an optional `tail` (a stack's frames, a
// string's bytes).
inline void append_record(std::string *out, RecordType type, const void *payload, size_t n, const void *tail = nullptr,
                          size_t tail_n = 0) {
  const RecordHeader h = record_header(type, n + tail_n);
  out->append(reinterpret_cast<const char *>(&h), sizeof h);
  out->append(static_cast<const char *>(payload), n);
  if (tail_n) out->append(static_cast<const char *>(tail), tail_n);
}

// A fixed-size record framed into `out`, which holds sizeof(RecordHeader) + sizeof(T) bytes: no
// allocation (async-signal-safe).
template <typename T>
inline void frame_record(uint8_t *out, RecordType type, const T &payload) {
  const RecordHeader h = record_header(type, sizeof payload);
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + sizeof h, &payload, sizeof payload);
}

// Calls visit(header, body, offset of the header) for each whole record of data[0, n); a record
// cut short at the end is left out.
template <typename Visit>
inline void each_record(const uint8_t *data, size_t n, Visit &&visit) {
  size_t at = 0;
  while (at + sizeof(RecordHeader) <= n) {
    RecordHeader h;
    std::memcpy(&h, data + at, sizeof h);
    if (n - at - sizeof h < h.size) return;
    visit(h, data + at + sizeof h, at);
    at += sizeof h + h.size;
  }
}

}  // namespace gpuleak::format
