// Builds synthetic captures in code for the analysis and report tests: every appended record
// gets a timestamp `step` ns after the previous one, so the order written is the order meant.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/capture_reader.h"

namespace gpuleak::testing {

inline constexpr uint64_t kMiB = 1ull << 20;

class CaptureBuilder {
 public:
  using Kind = format::Kind;

  explicit CaptureBuilder(uint64_t start_ns = 1'000'000'000, uint64_t step_ns = 1000) : t_(start_ns), step_(step_ns) {
    capture.header.monotonic_ns = start_ns;
    capture.header.realtime_ns = 1'764'500'000'000'000'000ull;  // 2025-11-30T10:53:20Z
    capture.header.pid = 4242;
    capture.header.major = format::kMajorVersion;
  }

  format::Capture capture;

  uint64_t now() const { return t_; }
  void advance(uint64_t ns) { t_ += ns; }

  uint32_t str(const std::string &s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(ids_.size()) + 1;
    ids_[s] = id;
    capture.strings[id] = s;
    return id;
  }

  // A Python stack (StackKind::kPython) from frames given outermost first as {file, function, line}; returns
  // its id (from 1000 up, apart from the native stack ids the tests pick; the same frames, the same id).
  struct PyFrame {
    std::string file, function;
    uint32_t line;
  };
  uint32_t py_stack(const std::vector<PyFrame> &outermost_first) {
    format::Stack s;
    s.kind = format::StackKind::kPython;
    for (auto f = outermost_first.rbegin(); f != outermost_first.rend(); ++f) {
      s.frames.push_back(static_cast<uint64_t>(str(f->file)) << 32 | str(f->function));
      s.frames.push_back(f->line);
    }
    for (const auto &[id, known] : capture.stacks)  // interned, as the recorder does
      if (id >= 1000 && known.kind == format::StackKind::kPython && known.frames == s.frames) return id;
    uint32_t id = next_py_stack_++;
    capture.stacks[id] = std::move(s);
    return id;
  }

  // Successful allocation; returns the address (a fresh one unless given).
  uint64_t alloc(uint64_t size, uint32_t stack, Kind kind = Kind::kDevice, int16_t device = 0, uint64_t address = 0,
                 uint32_t py_stack = 0) {
    if (address == 0) address = next_address_ += 0x100000;
    format::MemoryRecord &r = mem(format::Op::kAlloc, kind, device);
    r.address = address;
    r.size = size;
    r.stack_id = stack;
    r.py_stack_id = py_stack;
    return address;
  }
  format::MemoryRecord &free(uint64_t address, Kind kind = Kind::kDevice, int16_t device = 0) {
    format::MemoryRecord &r = mem(format::Op::kFree, kind, device);
    r.address = address;
    return r;
  }
  format::MemoryRecord &failed_alloc(uint64_t size, uint32_t stack, int16_t device = 0) {
    format::MemoryRecord &r = mem(format::Op::kAlloc, Kind::kDevice, device);
    r.size = size;
    r.stack_id = stack;
    r.result = 2;  // CUDA_ERROR_OUT_OF_MEMORY
    return r;
  }
  format::MemoryRecord &map(uint64_t va, uint64_t handle, uint64_t size, uint32_t stack, int16_t device = 0) {
    format::MemoryRecord &r = mem(format::Op::kMap, Kind::kVmm, device);
    r.address = va;
    r.aux = handle;
    r.size = size;
    r.stack_id = stack;
    return r;
  }
  format::MemoryRecord &op(format::Op op, Kind kind = Kind::kUnknown, int16_t device = 0) {
    return mem(op, kind, device);
  }

  // gpuleak_mark(label): a labelled instant (the Python hooks' empty_cache() mark).
  void mark(const std::string &label, uint32_t tid = 1) { marker(format::MarkerOp::kMark, label, tid); }
  void begin(const std::string &loop, uint32_t tid = 1) { marker(format::MarkerOp::kIterationBegin, loop, tid); }
  void end(const std::string &loop = "", uint32_t tid = 1) { marker(format::MarkerOp::kIterationEnd, loop, tid); }

  // An observed Python loop (format 1.5): defined once, then its passes (kind 1: back edges; kind 2,
  // a callback: call and return).
  void loop(uint32_t id, uint32_t parent, const std::string &file, const std::string &function, uint32_t first,
            uint32_t last, uint16_t depth = 0, format::LoopKind kind = format::LoopKind::kLoop) {
    format::LoopRecord r{};
    r.id = id;
    r.parent_id = parent;
    r.file_id = str(file);
    r.function_id = str(function);
    r.first_line = first;
    r.last_line = last;
    r.depth = depth;
    r.kind = static_cast<uint8_t>(kind);
    capture.loops.push_back(r);
  }
  void loop_pass(uint32_t id, format::LoopPassOp op = format::LoopPassOp::kBackEdge, uint32_t tid = 1) {
    format::LoopPassRecord &r = capture.loop_passes.emplace_back();
    r = format::LoopPassRecord{};
    r.ts_ns = tick();
    r.tid = tid;
    r.loop_id = id;
    r.op = static_cast<uint8_t>(op);
  }

  void push(const std::string &message, uint32_t tid = 1) { nvtx(format::NvtxOp::kPush, message, tid, 0); }
  void pop(uint32_t tid = 1) { nvtx(format::NvtxOp::kPop, "", tid, 0); }
  void start(const std::string &message, uint64_t range_id, uint32_t tid = 1) {
    nvtx(format::NvtxOp::kStart, message, tid, range_id);
  }
  void end_range(uint64_t range_id, uint32_t tid = 1) { nvtx(format::NvtxOp::kEnd, "", tid, range_id); }

  format::OomRecord &oom(uint64_t requested, uint64_t free_bytes, uint64_t total, uint32_t stack, int16_t device = 0) {
    format::OomRecord &r = capture.ooms.emplace_back();
    r.ts_ns = tick();
    r.requested = requested;
    r.free_bytes = free_bytes;
    r.total_bytes = total;
    r.stack_id = stack;
    r.result = 2;
    r.device = device;
    r.tid = 1;
    return r;
  }

  // An NVML reading (DeviceUsage record): a periodic sample unless `flags` says otherwise.
  format::DeviceUsage &usage(uint64_t process_used, uint64_t tracked_live, int device = 0,
                             uint32_t flags = format::kUsageSample | format::kUsageProcessKnown) {
    format::DeviceUsage &u = capture.device_usage.emplace_back();
    u = format::DeviceUsage{};
    u.ts_ns = tick();
    u.process_used_bytes = process_used;
    u.device_used_bytes = process_used;
    u.device_total_bytes = 80ull << 30;
    u.tracked_live_bytes = tracked_live;
    u.device = device;
    u.flags = flags;
    return u;
  }

  // A retention path (format 1.7) sent now: `address` 0 is a walk's summary.
  void retention(uint64_t address, uint64_t size, const std::string &text, uint8_t event = 1) {
    format::Retention &p = capture.retentions.emplace_back();
    p.ts_ns = tick();
    p.address = address;
    p.size = size;
    p.event = event;
    p.text = text;
  }

  void device(int index, const std::string &name, uint64_t total) {
    format::Device d;
    d.index = index;
    d.name = name;
    d.total_bytes = total;
    capture.devices.push_back(d);
  }

 private:
  uint64_t tick() { return t_ += step_; }
  format::MemoryRecord &mem(format::Op op, Kind kind, int16_t device) {
    format::MemoryRecord &r = capture.memory.emplace_back();
    r = format::MemoryRecord{};
    r.ts_ns = tick();
    r.op = static_cast<uint8_t>(op);
    r.kind = static_cast<uint8_t>(kind);
    r.device = device;
    r.tid = 1;
    return r;
  }
  void marker(format::MarkerOp op, const std::string &label, uint32_t tid) {
    format::MarkerRecord &m = capture.markers.emplace_back();
    m = format::MarkerRecord{};
    m.ts_ns = tick();
    m.tid = tid;
    m.label_id = label.empty() ? 0 : str(label);
    m.op = static_cast<uint8_t>(op);
  }
  void nvtx(format::NvtxOp op, const std::string &message, uint32_t tid, uint64_t range_id) {
    format::NvtxRecord &r = capture.nvtx.emplace_back();
    r = format::NvtxRecord{};
    r.ts_ns = tick();
    r.tid = tid;
    r.range_id = range_id;
    r.message_id = message.empty() ? 0 : str(message);
    r.op = static_cast<uint8_t>(op);
  }

  uint64_t t_;
  uint64_t step_;
  uint64_t next_address_ = 0x7f0000000000;
  uint32_t next_py_stack_ = 1000;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace gpuleak::testing
