// text::AtomicFile, the one writer of whole-file artifacts: the destination appears only complete,
// and creating the temporary file never follows a symlink nor truncates a file already there.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "text/atomic_file.h"

namespace gpuleak::text {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuleak-atomic-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  static std::string slurp(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void put(const std::string &path, const std::string &bytes) { std::ofstream(path, std::ios::binary) << bytes; }
  std::string tmp_name(const std::string &path) const { return path + ".tmp." + std::to_string(getpid()); }

  std::string dir_;
};

TEST_F(AtomicFileTest, DestinationAppearsOnlyOnCommitAndReplacesTheOldFile) {
  const std::string path = dir_ + "/out.json";
  put(path, "old");
  std::string error;
  auto file = AtomicFile::create(path, &error);
  ASSERT_TRUE(file) << error;
  file->write("new ");
  file->write("bytes");
  EXPECT_EQ(slurp(path), "old");  // readers still see the whole old file
  ASSERT_TRUE(file->commit(&error)) << error;
  EXPECT_EQ(slurp(path), "new bytes");
  EXPECT_EQ(file->bytes_written(), 9u);
  EXPECT_NE(access(tmp_name(path).c_str(), F_OK), 0);
}

TEST_F(AtomicFileTest, AbandonedFileLeavesNothingBehind) {
  const std::string path = dir_ + "/out.json";
  std::string error;
  {
    auto file = AtomicFile::create(path, &error);
    ASSERT_TRUE(file) << error;
    file->write("half");
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_NE(access(tmp_name(path).c_str(), F_OK), 0);
}

// Another run's file (or one a crashed run with the same pid left) at the temporary name is
// neither truncated nor replaced, and a symlink planted there is not followed: the next name is
// taken.
TEST_F(AtomicFileTest, TemporaryNameInUseIsNeverTruncatedNorFollowed) {
  const std::string path = dir_ + "/out.json";
  const std::string victim = dir_ + "/victim";
  put(victim, "precious");
  put(tmp_name(path), "another run's");
  ASSERT_EQ(symlink(victim.c_str(), (tmp_name(path) + ".1").c_str()), 0);
  std::string error;
  ASSERT_TRUE(write_file_atomically(path, "report", &error)) << error;
  EXPECT_EQ(slurp(path), "report");
  EXPECT_EQ(slurp(tmp_name(path)), "another run's");
  EXPECT_EQ(slurp(victim), "precious");
  struct stat st;
  ASSERT_EQ(lstat((tmp_name(path) + ".1").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(AtomicFileTest, UnwritableFolderIsOneLine) {
  std::string error;
  EXPECT_FALSE(write_file_atomically(dir_ + "/no/such/folder/out.json", "x", &error));
  EXPECT_NE(error.find("cannot create " + dir_ + "/no/such/folder/out.json.tmp."), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace gpuleak::text
