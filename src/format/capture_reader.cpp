#include "format/capture_reader.h"
#include "format/aggregate_fold.h"
#include "format/free_pairing.h"
#include "format/huge_pages.h"
#include "format/memory_source.h"
#include "text/input_file.h"
#include "text/limits.h"
#include "text/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gpuleak::format {
namespace {

// A bounds-checked cursor over one record's payload.
class Cursor {
 public:
  Cursor(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  bool read(T *out) {
    if (size_ - pos_ < sizeof(T)) return false;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(size_t n, std::string *out) {
    if (size_ - pos_ < n) return false;
    out->assign(reinterpret_cast<const char *>(data_ + pos_), n);
    pos_ += n;
    return true;
  }

 private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

// Reads a fixed struct that later minor versions may extend: a shorter payload is corrupt, a
// longer one keeps its extra bytes for whoever knows them.
template <typename T>
bool fixed(const uint8_t *p, size_t n, T *out) {
  if (n < sizeof(T)) return false;
  std::memcpy(out, p, sizeof(T));
  return true;
}

bool decode_run_info(Cursor c, RunInfo *run) {
  if (!c.read(&run->fixed)) return false;
  for (uint16_t i = 0; i < run->fixed.string_count; ++i) {
    uint32_t len = 0;
    std::string s;
    if (!c.read(&len) || !c.bytes(len, &s)) return false;
    switch (static_cast<RunInfoField>(i)) {
      case RunInfoField::kProgram:
        run->program = s;
        break;
      case RunInfoField::kCommand: {
        size_t start = 0;
        while (start <= s.size() && !s.empty()) {
          size_t end = s.find('\0', start);
          if (end == std::string::npos) end = s.size();
          run->command.push_back(s.substr(start, end - start));
          start = end + 1;
        }
        break;
      }
      case RunInfoField::kHost:
        run->host = s;
        break;
      case RunInfoField::kVersion:
        run->version = s;
        break;
      case RunInfoField::kAllocatorEnv:
        run->allocator = AllocatorSettings::parse(s);
        break;
      case RunInfoField::kUnwinder:
        run->unwinder = s;
        break;
      case RunInfoField::kRunToken:
        run->run_token = s;
        break;
      default:
        break;  // a newer writer's field
    }
  }
  return true;
}

bool decode_module(Cursor c, Module *m) {
  ModuleRecord r;
  std::string build_id;
  if (!c.read(&r) || !c.bytes(r.path_length, &m->path) || !c.bytes(r.build_id_length, &build_id)) return false;
  m->load_bias = r.load_bias;
  m->build_id = text::hex_bytes(build_id);
  for (uint16_t i = 0; i < r.segment_count; ++i) {
    uint64_t vaddr = 0, memsz = 0;
    if (!c.read(&vaddr) || !c.read(&memsz)) return false;
    m->segments.emplace_back(r.load_bias + vaddr, r.load_bias + vaddr + memsz);
  }
  return true;
}

bool decode_stack(Cursor c, Capture *out) {
  StackRecord r;
  if (!c.read(&r)) return false;
  Stack s;
  s.kind = static_cast<StackKind>(r.kind);
  s.frames.resize(r.depth);
  for (auto &f : s.frames)
    if (!c.read(&f)) return false;
  out->stacks[r.id] = std::move(s);
  return true;
}

// What a capture may claim, counted as its records are read. The devices it names (device records,
// and the device of every memory record): a hostile file is refused at device text::kMaxDevices + 1,
// before the analysis builds per-device state for them all. The bytes its successful allocations
// claim, all together: past text::kMaxAllocatedBytes the file is corrupt (a size near 2^64 would
// wrap the live bytes to a small number and a clean verdict); below it no sum of sizes the
// analysis keeps can wrap.
class RecordLimits {
 public:
  // False, and overclaimed() from then on, once the allocations claim more than the limit.
  bool allocate(const MemoryRecord &r) {
    if (r.op != static_cast<uint8_t>(Op::kAlloc) || r.result != 0) return true;  // a failed call holds nothing
    if (r.size > text::kMaxAllocatedBytes - allocated_) return !(overclaimed_ = true);
    allocated_ += r.size;
    return true;
  }
  bool overclaimed() const { return overclaimed_; }

  // False, and full() from then on, once more than text::kMaxDevices distinct devices were seen.
  bool add(int64_t device) {
    if (device < 0) device = 0;  // -1: unknown, which the analysis counts as device 0
    if (device < static_cast<int64_t>(seen_.size())) {
      if (seen_[static_cast<size_t>(device)]) return true;
      seen_[static_cast<size_t>(device)] = true;
    } else {  // only a device record's int32 index gets here
      for (int64_t d : large_)
        if (d == device) return true;
      large_.push_back(device);
    }
    full_ = ++count_ > text::kMaxDevices;
    return !full_;
  }
  bool full() const { return full_; }

 private:
  std::vector<bool> seen_ = std::vector<bool>(size_t{INT16_MAX} + 1);
  std::vector<int64_t> large_;
  size_t count_ = 0;
  bool full_ = false;
  uint64_t allocated_ = 0;
  bool overclaimed_ = false;
};

// `memory`, when given, indexes memory records instead of keeping them; `offset` is the record's.
// False when the record is malformed, or names a device past text::kMaxDevices (devices->full()).
bool decode_record(uint16_t type, const uint8_t *p, size_t n, uint64_t offset, Capture *out, FileMemorySource *memory,
                   RecordLimits *devices) {
  Cursor c(p, n);
  switch (static_cast<RecordType>(type)) {
    case RecordType::kRunInfo: {
      RunInfo run;
      if (!decode_run_info(c, &run)) return false;
      out->run = std::move(run);
      return true;
    }
    case RecordType::kModule: {
      Module m;
      if (!decode_module(c, &m)) return false;
      out->modules.push_back(std::move(m));
      return true;
    }
    case RecordType::kStack:
      return decode_stack(c, out);
    case RecordType::kString: {
      StringRecord r;
      std::string s;
      if (!c.read(&r) || !c.bytes(r.length, &s)) return false;
      out->strings[r.id] = std::move(s);
      return true;
    }
    case RecordType::kMemory: {
      ++out->memory_records;
      MemoryRecord r;
      if (!fixed(p, n, &r) || !devices->add(r.device) || !devices->allocate(r)) return false;
      if (memory)
        memory->add(offset, static_cast<uint32_t>(sizeof(RecordHeader) + n), r);
      else
        out->memory.push_back(r);
      return true;
    }
    case RecordType::kNvtx:
      return fixed(p, n, &out->nvtx.emplace_back());
    case RecordType::kMarker:
      return fixed(p, n, &out->markers.emplace_back());
    case RecordType::kOom: {
      // 1.3 records end before the pool_* fields (format 1.6): those stay zero.
      if (n < kOomRecordSize13) return false;
      OomRecord &o = out->ooms.emplace_back();
      std::memcpy(&o, p, std::min(n, sizeof o));
      return true;
    }
    case RecordType::kDevice: {
      DeviceRecord r;
      Device d;
      if (!c.read(&r) || !c.bytes(r.name_length, &d.name)) return false;
      d.index = r.index;
      d.total_bytes = r.total_bytes;
      for (auto &known : out->devices)
        if (known.index == d.index) {
          known = d;
          return true;
        }
      if (!devices->add(d.index)) return false;
      out->devices.push_back(std::move(d));
      return true;
    }
    case RecordType::kStats: {
      StatsRecord s;
      if (!fixed(p, n, &s)) return false;
      out->stats = s;
      return true;
    }
    case RecordType::kGpuActivity:
      return fixed(p, n, &out->gpu_activity.emplace_back());
    case RecordType::kDeviceUsage:
      return fixed(p, n, &out->device_usage.emplace_back());
    case RecordType::kPoolTracker:
    case RecordType::kPoolMissing: {  // the same payload: what attached, or why it could not
      PoolTrackerRecord r;
      PoolTracker t;
      if (!c.read(&r) || r.length > 4096 || !c.bytes(r.length, &t.description)) return false;
      t.ts_ns = r.ts_ns;
      t.framework = r.framework;
      bool attached = static_cast<RecordType>(type) == RecordType::kPoolTracker;
      (attached ? out->pool_trackers : out->pool_missing).push_back(std::move(t));
      return true;
    }
    case RecordType::kAggregateSite: {
      AggregateSiteRecord r;
      if (!fixed(p, n, &r) || !devices->add(r.device)) return false;
      out->aggregate_rows.push_back(r);
      return true;
    }
    case RecordType::kAggregateWindow: {
      AggregateWindow w;
      if (!fixed(p, n, &w.record)) return false;
      w.rows_begin = out->aggregate_windows.empty() ? 0 : out->aggregate_windows.back().rows_end;
      w.rows_end = out->aggregate_rows.size();
      out->aggregate_windows.push_back(w);
      return true;
    }
    case RecordType::kLoop:
      return fixed(p, n, &out->loops.emplace_back());
    case RecordType::kLoopPass:
      return fixed(p, n, &out->loop_passes.emplace_back());
    case RecordType::kObserver: {
      ObserverRecord r;
      Observer o;
      if (!c.read(&r) || r.length > 4096 || !c.bytes(r.length, &o.note)) return false;
      o.ts_ns = r.ts_ns;
      o.method = r.method;
      out->observers.push_back(std::move(o));
      return true;
    }
    case RecordType::kRetention: {
      RetentionRecord r;
      Retention t;
      if (!c.read(&r) || r.length > kMaxRetentionText || !c.bytes(r.length, &t.text)) return false;
      t.ts_ns = r.ts_ns;
      t.address = r.address;
      t.size = r.size;
      t.tid = r.tid;
      t.event = r.event;
      out->retentions.push_back(std::move(t));
      return true;
    }
    case RecordType::kDisabled: {
      std::string why(reinterpret_cast<const char *>(p), n);
      out->disabled.push_back(std::move(why));
      return true;
    }
  }
  ++out->unknown_records;
  return true;
}

}  // namespace

const std::string &Capture::string(uint32_t id) const {
  static const std::string empty;
  auto it = strings.find(id);
  return it == strings.end() ? empty : it->second;
}

namespace {

// The commonest mix-up: a report or a trace given where the capture belongs, which deserves words
// better than "bad magic". nullptr when the bytes do not look like JSON.
const char *json_instead_of_capture(const uint8_t *data, size_t size) {
  size_t i = 0;
  while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  if (i == size || (data[i] != '{' && data[i] != '[')) return nullptr;
  const std::string head(reinterpret_cast<const char *>(data), std::min<size_t>(size, 4096));
  if (head.find("\"gpuleak.report/") != std::string::npos)
    return "not a gpuleak capture: this is a report (JSON); give the .gpuleak capture it was made from";
  return "not a gpuleak capture: this is JSON (a report or a trace?); give the .gpuleak capture";
}

// The file header: checked, copied to out->header; *pos set past it.
bool parse_header(const uint8_t *data, size_t size, Capture *out, std::string *error, size_t *pos) {
  const bool magic = size >= sizeof(kMagic) && std::memcmp(data, kMagic, sizeof(kMagic)) == 0;
  if (!magic) {
    const char *json = json_instead_of_capture(data, size);
    *error = json                    ? json
             : size < sizeof(kMagic) ? "not a gpuleak capture (file too short)"
                                     : "not a gpuleak capture (bad magic)";
    return false;
  }
  if (size < sizeof(FileHeader)) {
    *error = "truncated capture: the file ends inside its " + std::to_string(sizeof(FileHeader)) + "-byte header (" +
             std::to_string(size) + " bytes)";
    return false;
  }
  std::memcpy(&out->header, data, sizeof(FileHeader));
  if (out->header.major != kMajorVersion) {
    *error = "unsupported capture format version " + std::to_string(out->header.major) + "." +
             std::to_string(out->header.minor) + " (this gpuleak reads " + std::to_string(kMajorVersion) + ".x)";
    return false;
  }
  if (out->header.header_size < sizeof(FileHeader) || out->header.header_size > size) {
    *error = "corrupt capture header (header size " + std::to_string(out->header.header_size) + ")";
    return false;
  }
  *pos = out->header.header_size;
  return true;
}

// Whether the `n` bytes at `p` (n < 8 for a header cut short) can begin a record a writer wrote:
// a size up to kMaxRecordSize, a type other than 0 (types start at 1) and a zero reserved field.
// A capture's tail is either nothing, or the start of such a record cut short (docs/capture-
// format.md); anything else is corruption, whatever its first byte.
const char *implausible_header(const uint8_t *p, size_t n) {
  uint8_t bytes[sizeof(RecordHeader)] = {};
  std::memcpy(bytes, p, n < sizeof bytes ? n : sizeof bytes);
  RecordHeader h;
  std::memcpy(&h, bytes, sizeof h);
  if (n >= 4 && h.size > kMaxRecordSize) return "claims more than the largest record";
  if (n >= 6 && h.type == 0) return "has record type 0";
  if (n >= 8 && h.reserved != 0) return "has a non-zero reserved field";
  return nullptr;
}

std::string corrupt_at(uint64_t offset, const uint8_t *p, size_t n) {
  RecordHeader h{};
  std::memcpy(&h, p, n < sizeof h ? n : sizeof h);
  if (n >= 4 && h.size > kMaxRecordSize)  // the words the reader has always used for this case
    return "corrupt capture: record at offset " + std::to_string(offset) + " claims " + std::to_string(h.size) +
           " bytes";
  return std::string("corrupt capture: the record header at offset ") + std::to_string(offset) + " " +
         implausible_header(p, n);
}

// Decodes the whole records of data[0, size). Returns false on corruption; *used is the bytes
// consumed. A record cut short stops the loop: at the end of the file that is truncation,
// elsewhere the caller brings more bytes. `offset` is data's position in the file (for errors).
bool parse_records(const uint8_t *data, size_t size, uint64_t offset, Capture *out, FileMemorySource *memory,
                   RecordLimits *devices, std::string *error, size_t *used) {
  size_t pos = 0;
  while (size - pos >= sizeof(RecordHeader)) {
    if (implausible_header(data + pos, sizeof(RecordHeader))) {
      *error = corrupt_at(offset + pos, data + pos, sizeof(RecordHeader));
      return false;
    }
    RecordHeader h;
    std::memcpy(&h, data + pos, sizeof h);
    if (size - pos - sizeof h < h.size) break;
    if (!decode_record(h.type, data + pos + sizeof h, h.size, offset + pos, out, memory, devices)) {
      *error = devices->full() ? "capture names more than " + std::to_string(text::kMaxDevices) +
                                     " devices (a limit, docs/limits.md): corrupt or not from gpuleak"
               : devices->overclaimed()
                   ? "corrupt capture: the allocation at offset " + std::to_string(offset + pos) +
                         " takes the bytes its allocations claim past 4 EiB (no machine allocates that; a "
                         "limit, docs/limits.md)"
                   : "corrupt capture: malformed record of type " + std::to_string(h.type) + " at offset " +
                         std::to_string(offset + pos);
      return false;
    }
    pos += sizeof h + h.size;
  }
  *used = pos;
  return true;
}

// At the end of the file: whatever follows the last whole record must be a record cut short.
bool check_tail(const uint8_t *tail, size_t n, uint64_t offset, std::string *error) {
  if (n == 0 || !implausible_header(tail, n)) return true;
  *error = corrupt_at(offset, tail, n) + " (" + std::to_string(n) + " bytes of trailing garbage)";
  return false;
}

}  // namespace

bool parse_capture(const uint8_t *data, size_t size, Capture *out, std::string *error) {
  *out = Capture{};
  size_t pos = 0, used = 0;
  if (!parse_header(data, size, out, error, &pos)) return false;
  RecordLimits devices;
  if (!parse_records(data + pos, size - pos, pos, out, nullptr, &devices, error, &used)) return false;
  pos += used;
  if (!check_tail(data + pos, size - pos, pos, error)) return false;
  out->truncated = pos < size;
  out->bytes_read = pos;
  pair_frees_in_place(out->memory);  // before the unfolded aggregates join them (they come paired)
  return fold_aggregates(out, &out->memory, error);
}

namespace {

// Streams the file through a fixed buffer: a 10-million-event capture is never held twice (file
// bytes and decoded records). Without `memory` the memory records are kept, reserved up front
// from the file size; with it they are indexed, and the open file is handed to it.
bool read_file(const std::string &path, Capture *out, FileMemorySource *memory, std::string *error) {
  *out = Capture{};
  uint64_t size = 0;
  int fd = text::open_input(path, error, &size);  // a regular file only: a FIFO would block open()
  if (fd < 0) return false;
  if (!memory && size > 0) {
    out->memory.reserve(static_cast<size_t>(size) / (sizeof(RecordHeader) + sizeof(MemoryRecord)));
    prefer_huge_pages(out->memory);
  }
  constexpr size_t kChunk = 4u << 20;  // > the largest record (kMaxRecordSize + header)
  std::vector<uint8_t> buf(kChunk);
  size_t have = 0;        // bytes in buf
  uint64_t consumed = 0;  // file offset of buf[0]
  bool header_done = false, eof = false;
  RecordLimits devices;
  while (!eof || have > 0) {
    while (!eof && have < buf.size()) {
      ssize_t n = ::read(fd, buf.data() + have, buf.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = path + ": " + std::strerror(errno);
        ::close(fd);
        return false;
      }
      if (n == 0) eof = true;
      have += static_cast<size_t>(n);
    }
    size_t pos = 0, used = 0;
    if (!header_done) {
      // The header (and any extension of it) fits the first chunk unless it claims more.
      if (!parse_header(buf.data(), have, out, error, &pos)) {
        ::close(fd);
        *error = path + ": " + *error;
        return false;
      }
      header_done = true;
    }
    if (!parse_records(buf.data() + pos, have - pos, consumed + pos, out, memory, &devices, error, &used)) {
      ::close(fd);
      *error = path + ": " + *error;
      return false;
    }
    pos += used;
    if (eof) {  // whatever is left must be a record cut short
      if (!check_tail(buf.data() + pos, have - pos, consumed + pos, error)) {
        ::close(fd);
        *error = path + ": " + *error;
        return false;
      }
      out->truncated = pos < have;
      consumed += pos;
      break;
    }
    std::memmove(buf.data(), buf.data() + pos, have - pos);
    have -= pos;
    consumed += pos;
  }
  if (memory)
    memory->open(fd);
  else
    ::close(fd);
  out->bytes_read = consumed;
  if (!memory) pair_frees_in_place(out->memory);  // (a FileMemorySource pairs as it replays)
  std::vector<MemoryRecord> synthetic;
  if (!fold_aggregates(out, memory ? &synthetic : &out->memory, error)) {
    *error = path + ": " + *error;
    return false;
  }
  if (memory) memory->add_synthetic(std::move(synthetic));
  return true;
}

}  // namespace

bool is_capture_file(const std::string &path) {
  std::string error;
  int fd = text::open_input(path, &error);
  if (fd < 0) return false;
  char magic[sizeof kMagic];
  ssize_t n;
  do n = ::read(fd, magic, sizeof magic);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0;
}

bool read_capture_file(const std::string &path, Capture *out, std::string *error) {
  return read_file(path, out, nullptr, error);
}

bool read_capture_stream(const std::string &path, Capture *out, FileMemorySource *memory, std::string *error) {
  return read_file(path, out, memory, error);
}

}  // namespace gpuleak::format
