// The run's allocator switches and CUPTI's state as types (format/allocator_settings.h,
// format/cupti_state.h): parsed once from what the recorder wrote, the values every reader decides
// from, and the recorded text given back.
#include "format/allocator_settings.h"

#include <gtest/gtest.h>

#include <string>

#include "format/capture_reader.h"
#include "format/cupti_state.h"

namespace gpuleak::format {
namespace {

TEST(AllocatorSettings, EachSwitchTyped) {
  // As run_facts.cpp writes it: PYTORCH_CUDA_ALLOC_CONF's text, then NAME=value parts.
  const std::string recorded =
      "backend:cudaMallocAsync,expandable_segments:True;PYTORCH_NO_CUDA_MEMORY_CACHING=1;"
      "XLA_PYTHON_CLIENT_ALLOCATOR=address;XLA_PYTHON_CLIENT_PREALLOCATE=false;GPULEAK_CUPY=async;"
      "GPULEAK_JAX=per-buffer;GPULEAK_TORCH=no-caching";
  const AllocatorSettings s = AllocatorSettings::parse(recorded);
  EXPECT_TRUE(s.torch_async_backend);
  EXPECT_TRUE(s.torch_expandable);
  EXPECT_EQ(s.torch_caching, TorchCaching::kOff);
  EXPECT_EQ(s.xla_allocator, XlaAllocator::kAddress);
  EXPECT_TRUE(s.jax_per_buffer());
  EXPECT_EQ(s.cupy, CupyMode::kAsync);
  EXPECT_EQ(s.jax, JaxMode::kPerBuffer);
  EXPECT_EQ(s.torch, TorchMode::kNoCaching);
  EXPECT_TRUE(s.gpuleak_switched());
  ASSERT_EQ(s.parts.size(), 7u);
  EXPECT_EQ(s.parts[0].name, "");
  EXPECT_EQ(s.parts[0].value, "backend:cudaMallocAsync,expandable_segments:True");
  EXPECT_EQ(s.parts[3].name, "XLA_PYTHON_CLIENT_PREALLOCATE");
  EXPECT_EQ(s.parts[3].value, "false");
  EXPECT_EQ(s.text(), recorded);
  EXPECT_STREQ(xla_allocator_name(s.xla_allocator), "address");
}

TEST(AllocatorSettings, UnsetOtherAndFirstValue) {
  const AllocatorSettings none = AllocatorSettings::parse("");
  EXPECT_TRUE(none.parts.empty());
  EXPECT_FALSE(none.torch_async_backend || none.torch_expandable || none.gpuleak_switched() || none.jax_per_buffer());
  EXPECT_EQ(none.torch_caching, TorchCaching::kUnset);
  EXPECT_EQ(none.xla_allocator, XlaAllocator::kUnset);

  // Values no mode has are set but other (PyTorch reads NO_CUDA_MEMORY_CACHING=0 as caching on);
  // a name without '=' is configuration text; the first value of a repeated switch counts.
  const AllocatorSettings s = AllocatorSettings::parse(
      "PYTORCH_NO_CUDA_MEMORY_CACHING=0;;GPULEAK_CUPY;GPULEAK_CUPY=segments;GPULEAK_CUPY=per-array;"
      "XLA_PYTHON_CLIENT_ALLOCATOR=bfc;GPULEAK_TORCH=per-tensor;expandable_segments:true");
  EXPECT_EQ(s.torch_caching, TorchCaching::kOther);
  EXPECT_EQ(s.cupy, CupyMode::kOther);
  EXPECT_EQ(s.xla_allocator, XlaAllocator::kOther);
  EXPECT_STREQ(xla_allocator_name(s.xla_allocator), "");
  EXPECT_EQ(s.torch, TorchMode::kPerTensor);
  EXPECT_TRUE(s.gpuleak_switched());
  EXPECT_TRUE(s.torch_expandable);
  EXPECT_FALSE(s.torch_async_backend);
  ASSERT_EQ(s.parts.size(), 7u);  // the empty part dropped
  EXPECT_EQ(s.parts[1].name, "");
  EXPECT_EQ(s.parts[1].value, "GPULEAK_CUPY");
  EXPECT_EQ(AllocatorSettings::parse(s.text()).text(), s.text());
}

TEST(CuptiState, RecordedValuesAndNames) {
  EXPECT_STREQ(cupti_state_name(cupti_state_of(0)), "off");
  EXPECT_STREQ(cupti_state_name(cupti_state_of(1)), "on");
  EXPECT_STREQ(cupti_state_name(cupti_state_of(2)), "unavailable");
  EXPECT_STREQ(cupti_state_name(cupti_state_of(3)), "taken");
  EXPECT_STREQ(cupti_state_name(cupti_state_of(4)), "yielded");
  EXPECT_EQ(cupti_state_of(5), CuptiState::kUnknown);
  EXPECT_EQ(cupti_state_of(77), CuptiState::kUnknown);
  EXPECT_STREQ(cupti_state_name(static_cast<CuptiState>(77)), "unknown");

  Capture c;
  EXPECT_EQ(c.cupti(), CuptiState::kUnknown);  // no stats record
  StatsRecord s{};
  s.cupti_state = static_cast<uint32_t>(CuptiState::kYielded);
  c.stats = s;
  EXPECT_EQ(c.cupti(), CuptiState::kYielded);
}

}  // namespace
}  // namespace gpuleak::format
