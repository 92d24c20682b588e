// gpuleak as the NVTX injection library (research/CAPTURE.md 2.3). NVTX v3 is header-only: each
// module that uses it (the program, libtorch, cuBLAS ...) loads NVTX_INJECTION64_PATH on its
// first NVTX call and asks it to fill its function table. preload.cpp points that variable at
// libgpuleak.so (when unset), so with plain LD_PRELOAD `torch.cuda.nvtx.range_push("step")`
// reaches the handlers below, which only record; the iteration logic lives in src/analysis.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstring>
#include <cwchar>
#include <string>

#include "core/recorder.h"
#include "core/tls.h"

namespace {

using gpuleak::format::NvtxOp;

GPULEAK_TLS int t_depth = 0;  // push/pop nesting level, returned to the caller as NVTX does
std::atomic<uint64_t> g_next_range{1};

void record(NvtxOp op, const char *message, const char *domain = nullptr, uint64_t id = 0) {
  gpuleak::core::record_nvtx(op, message, message ? strnlen(message, 4096) : 0, domain, id);
}

// Wide-character messages are rare; keep their ASCII part (the rest becomes '?').
std::string narrow(const wchar_t *w) {
  std::string s;
  for (size_t i = 0; w && w[i] && i < 4096; ++i) s.push_back(w[i] > 0 && w[i] < 128 ? static_cast<char>(w[i]) : '?');
  return s;
}

// Registered strings and domains are handed out as pointers to our own copies: stable for the
// life of the process, and the pointer is the name.
const char *copy(const char *s) { return s ? strdup(s) : nullptr; }

const char *message_of(const nvtxEventAttributes_t *a, std::string *scratch) {
  if (!a) return nullptr;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return reinterpret_cast<const char *>(a->message.registered);
    case NVTX_MESSAGE_TYPE_UNICODE:
      *scratch = narrow(a->message.unicode);
      return scratch->c_str();
    default:
      return nullptr;
  }
}
const char *domain_name(nvtxDomainHandle_t d) { return reinterpret_cast<const char *>(d); }

int push(const char *message, const char *domain) {
  record(NvtxOp::kPush, message, domain);
  return t_depth++;
}
int pop(const char *domain) {
  record(NvtxOp::kPop, nullptr, domain);
  return t_depth > 0 ? --t_depth : -1;  // an unbalanced pop is reported, never crashed on
}
nvtxRangeId_t start(const char *message, const char *domain) {
  uint64_t id = g_next_range.fetch_add(1, std::memory_order_relaxed);
  record(NvtxOp::kStart, message, domain, id);
  return id;
}

void NVTX_API mark_ex(const nvtxEventAttributes_t *a) {
  std::string s;
  record(NvtxOp::kMark, message_of(a, &s));
}
void NVTX_API mark_a(const char *m) { record(NvtxOp::kMark, m); }
void NVTX_API mark_w(const wchar_t *m) { record(NvtxOp::kMark, narrow(m).c_str()); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) {
  std::string s;
  return start(message_of(a, &s), nullptr);
}
nvtxRangeId_t NVTX_API start_a(const char *m) { return start(m, nullptr); }
nvtxRangeId_t NVTX_API start_w(const wchar_t *m) { return start(narrow(m).c_str(), nullptr); }
void NVTX_API end(nvtxRangeId_t id) { record(NvtxOp::kEnd, nullptr, nullptr, id); }
int NVTX_API push_ex(const nvtxEventAttributes_t *a) {
  std::string s;
  return push(message_of(a, &s), nullptr);
}
int NVTX_API push_a(const char *m) { return push(m, nullptr); }
int NVTX_API push_w(const wchar_t *m) { return push(narrow(m).c_str(), nullptr); }
int NVTX_API pop_default() { return pop(nullptr); }

void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  std::string s;
  record(NvtxOp::kMark, message_of(a, &s), domain_name(d));
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  std::string s;
  return start(message_of(a, &s), domain_name(d));
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { record(NvtxOp::kEnd, nullptr, domain_name(d), id); }
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  std::string s;
  return push(message_of(a, &s), domain_name(d));
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(domain_name(d)); }
nvtxStringHandle_t NVTX_API domain_register_a(nvtxDomainHandle_t, const char *s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char *>(copy(s)));
}
nvtxStringHandle_t NVTX_API domain_register_w(nvtxDomainHandle_t, const wchar_t *s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char *>(copy(narrow(s).c_str())));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char *name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char *>(copy(name ? name : "")));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char *>(copy(narrow(name).c_str())));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // the name stays valid: records may refer to it

struct Slot {
  unsigned id;
  NvtxFunctionPointer fn;
};

void fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const Slot *slots, size_t n) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(module, &table, &size) || !table) return;
  for (size_t i = 0; i < n; ++i)
    if (slots[i].id < size && table[slots[i].id]) *table[slots[i].id] = slots[i].fn;
}

template <typename F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

// Called once per NVTX instance (module); must be idempotent per table.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (!gpuleak::core::recorder_active() || !get_table) return 0;
  auto *cb = static_cast<const NvtxExportTableCallbacks *>(get_table(NVTX_ETID_CALLBACKS));
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const Slot core[] = {
      {NVTX_CBID_CORE_MarkEx, fp(mark_ex)},       {NVTX_CBID_CORE_MarkA, fp(mark_a)},
      {NVTX_CBID_CORE_MarkW, fp(mark_w)},         {NVTX_CBID_CORE_RangeStartEx, fp(start_ex)},
      {NVTX_CBID_CORE_RangeStartA, fp(start_a)},  {NVTX_CBID_CORE_RangeStartW, fp(start_w)},
      {NVTX_CBID_CORE_RangeEnd, fp(end)},         {NVTX_CBID_CORE_RangePushEx, fp(push_ex)},
      {NVTX_CBID_CORE_RangePushA, fp(push_a)},    {NVTX_CBID_CORE_RangePushW, fp(push_w)},
      {NVTX_CBID_CORE_RangePop, fp(pop_default)},
  };
  const Slot core2[] = {
      {NVTX_CBID_CORE2_DomainMarkEx, fp(domain_mark_ex)},
      {NVTX_CBID_CORE2_DomainRangeStartEx, fp(domain_start_ex)},
      {NVTX_CBID_CORE2_DomainRangeEnd, fp(domain_end)},
      {NVTX_CBID_CORE2_DomainRangePushEx, fp(domain_push_ex)},
      {NVTX_CBID_CORE2_DomainRangePop, fp(domain_pop)},
      {NVTX_CBID_CORE2_DomainRegisterStringA, fp(domain_register_a)},
      {NVTX_CBID_CORE2_DomainRegisterStringW, fp(domain_register_w)},
      {NVTX_CBID_CORE2_DomainCreateA, fp(domain_create_a)},
      {NVTX_CBID_CORE2_DomainCreateW, fp(domain_create_w)},
      {NVTX_CBID_CORE2_DomainDestroy, fp(domain_destroy)},
  };
  fill(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0]);
  fill(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);
  return 1;
}
