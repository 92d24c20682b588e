// The allocator mode as a type (format/allocator_mode.h): its names are the report's text, exactly
// as they were written when the mode travelled as prose, and read back from a report.
#include "format/allocator_mode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "output/report_segments.h"

namespace gpuleak::format {
namespace {

constexpr AllocatorMode kLast = AllocatorMode::kJaxArenaSampled;

TEST(AllocatorMode, EveryModeHasItsOwnNameAndReadsBack) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const auto mode = static_cast<AllocatorMode>(i);
    const std::string name = allocator_mode_name(mode);
    EXPECT_TRUE(names.insert(name).second) << name;
    AllocatorMode back;
    ASSERT_TRUE(allocator_mode_from_name(name, &back)) << name;
    EXPECT_EQ(back, mode);
  }
  AllocatorMode m;
  EXPECT_FALSE(allocator_mode_from_name("segments (a newer allocator)", &m));
}

TEST(AllocatorMode, TheReportTextIsTheNamesJoined) {
  AllocatorModes both{{AllocatorMode::kPyTorchTrace, AllocatorMode::kCupyPoolObjects}};
  EXPECT_EQ(both.text(),
            "per-tensor (PyTorch's caching allocator, through its trace); per-array (CuPy's memory pool, through its "
            "allocator)");
  EXPECT_EQ(AllocatorModes::parse(both.text()).modes, both.modes);
  EXPECT_EQ(AllocatorModes::parse("something else; pool (JAX's BFC allocator)").modes,
            std::vector<AllocatorMode>{AllocatorMode::kJaxBfcHidden});
  EXPECT_TRUE(AllocatorModes::parse("").empty());
}

TEST(AllocatorMode, OnlyTheSegmentModesHideSmallLeaks) {
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const AllocatorModes one{{static_cast<AllocatorMode>(i)}};
    EXPECT_EQ(one.segments_only(), one.text().rfind("segments", 0) == 0) << one.text();
  }
}

TEST(AllocatorMode, TheSegmentsOwnerComesFromTheModesFramework) {
  auto owner = [](const std::string &mode) { return output::segments_owner({{"run", {{"allocator_mode", mode}}}}); };
  EXPECT_EQ(owner("per-array (CuPy's memory pool, through its allocator)"), "CuPy's pool");
  EXPECT_EQ(owner("per-array (JAX's arena, live arrays sampled)"), "JAX's arena");
  EXPECT_EQ(owner("per-tensor (PyTorch's caching allocator, through its trace); per-array (CuPy's memory pool, "
                  "through its allocator)"),
            "PyTorch's caching allocator");
  EXPECT_EQ(owner("per-allocation"), "PyTorch's caching allocator");
}

}  // namespace
}  // namespace gpuleak::format
