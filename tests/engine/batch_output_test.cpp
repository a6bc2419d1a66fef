// The extract output under failure (issue #28): a write that fails (a file size limit, a
// full tmpfs) throws naming the file and leaves the file as it was before that record (no
// torn line), every record before it is on disk, and recovery plus more appends end with
// every record once. Also: outputs that cannot hold the job's state are refused, and
// --retry-failed's rewrite keeps a symlink a symlink, and the file's mode and owner.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/batch_job.h"
#include "engine/batch_output.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;
using nlohmann::ordered_json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ordered_json record(int i, bool ok = true) {
  return {{"id", "r" + std::to_string(i)}, {"ok", ok}, {"output", {{"text", std::string(150, 'x')}}}};
}

// Complete lines, and whether the content ends in the middle of one.
std::size_t complete_lines(const std::string& s, bool* torn) {
  *torn = !s.empty() && s.back() != '\n';
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class OutputDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ringlm_batch_output_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Appends records until one fails; returns how many succeeded and the error text.
std::pair<int, std::string> append_until_failure(const fs::path& out, int max_records) {
  engine::JsonlAppender a(out.string());
  for (int i = 0; i < max_records; ++i) {
    try {
      a.append(record(i));
    } catch (const Error& e) {
      EXPECT_EQ(a.appended(), static_cast<std::size_t>(i));
      return {i, e.what()};
    }
  }
  return {max_records, ""};
}

// The checks after a failed append: n complete records, no torn tail, then after room is
// made, recovery and the rest of the records give each id exactly once.
void expect_intact_then_resumable(const fs::path& out, int n, int total) {
  bool torn = true;
  const std::string content = slurp(out);
  EXPECT_EQ(complete_lines(content, &torn), static_cast<std::size_t>(n));
  EXPECT_FALSE(torn) << "the failed record left a torn line";
  const auto done = engine::recover_output(out.string());
  EXPECT_EQ(done.size(), static_cast<std::size_t>(n));
  engine::JsonlAppender a(out.string());
  for (int i = 0; i < total; ++i)
    if (!done.count("r" + std::to_string(i))) a.append(record(i));
  const auto state = engine::read_output_state(out.string());
  EXPECT_EQ(state.size(), static_cast<std::size_t>(total));
  EXPECT_EQ(complete_lines(slurp(out), &torn), static_cast<std::size_t>(total));
}

// Fault injection without mounting anything: RLIMIT_FSIZE with SIGXFSZ ignored makes a write
// past the limit fail with EFBIG, after a partial write of the record that crosses it.
TEST_F(OutputDir, FileSizeLimitStopsWithoutATornLine) {
  const fs::path out = dir_ / "out.jsonl";
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 5000;  // not a multiple of a record's length: the crossing record is cut
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  const auto [ok, error] = append_until_failure(out, 100);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_GT(ok, 0);
  EXPECT_LT(ok, 100);
  EXPECT_NE(error.find(out.string() + ": write failed: File too large"), std::string::npos) << error;
  expect_intact_then_resumable(out, ok, 100);
}

// A real full file system: a 64 KiB tmpfs (needs root or CAP_SYS_ADMIN; skipped otherwise).
TEST_F(OutputDir, FullTmpfsStopsWithoutATornLine) {
  const fs::path mnt = dir_ / "small";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "): needs root or CAP_SYS_ADMIN";
  struct Unmount {
    fs::path p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const fs::path out = mnt / "out.jsonl";
  const auto [ok, error] = append_until_failure(out, 1000);
  EXPECT_GT(ok, 0);
  EXPECT_LT(ok, 1000);
  EXPECT_NE(error.find(out.string() + ": write failed: No space left on device"), std::string::npos) << error;
  bool torn = true;
  EXPECT_EQ(complete_lines(slurp(out), &torn), static_cast<std::size_t>(ok));
  EXPECT_FALSE(torn);
  // Room again (the mount grows), and the job resumes to every record once.
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT, "size=1m"), 0) << std::strerror(errno);
  expect_intact_then_resumable(out, ok, 1000);
}

TEST_F(OutputDir, RefusesOutputsThatCannotHoldTheJob) {
  const fs::path in = dir_ / "in.jsonl", link = dir_ / "link.jsonl";
  std::ofstream(in) << "{\"id\":\"a\"}\n";
  fs::create_symlink(in, link);
  fs::create_hard_link(in, dir_ / "hard.jsonl");
  auto refusal = [&](const std::string& output) -> std::string {
    try {
      engine::check_output_path(output, {in.string()});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(in.string()).find("the same file as"), std::string::npos);
  EXPECT_NE(refusal(link.string()).find("the same file as"), std::string::npos);
  EXPECT_NE(refusal((dir_ / "hard.jsonl").string()).find("the same file as"), std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("not a regular file"), std::string::npos);
  EXPECT_NE(refusal(dir_.string()).find("not a regular file (a folder)"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_NE(refusal((dir_ / "fifo").string()).find("a pipe"), std::string::npos);
  EXPECT_EQ(refusal((dir_ / "new.jsonl").string()), "");
  EXPECT_EQ(refusal("-"), "");
  // The appender refuses a FIFO by itself too (without waiting for a reader).
  EXPECT_THROW(engine::JsonlAppender((dir_ / "fifo").string()), Error);
}

// --retry-failed's rewrite happens at the symlink's target, which keeps its mode and owner.
TEST_F(OutputDir, RetryRewriteKeepsLinkModeAndOwner) {
  fs::create_directories(dir_ / "real");
  const fs::path target = dir_ / "real" / "out.jsonl", link = dir_ / "out.jsonl";
  {
    engine::JsonlAppender a(target.string());
    a.append(record(0, false));
    a.append(record(1, true));
  }
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  const bool root = ::geteuid() == 0;
  if (root) ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
  fs::create_symlink(target, link);
  EXPECT_EQ(engine::drop_records(link.string(), {"r0"}), 1u);
  EXPECT_TRUE(fs::is_symlink(link)) << "the symlink became a plain file";
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  if (root) {
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
  }
  const auto state = engine::read_output_state(link.string());
  EXPECT_EQ(state.size(), 1u);
  EXPECT_TRUE(state.count("r1"));
  EXPECT_FALSE(fs::exists(target.string() + ".retry.tmp"));
}

TEST_F(OutputDir, RecordsKeepTheirFingerprint) {
  const fs::path out = dir_ / "out.jsonl";
  {
    engine::JsonlAppender a(out.string());
    ordered_json r = record(0);
    r["fingerprint"] = "0000aaaa-1111bbbb-2222cccc-3333dddd";
    a.append(r);
    a.append(record(1));  // from before fingerprints: none
  }
  const auto state = engine::read_output_state(out.string());
  EXPECT_EQ(state.at("r0").fingerprint, "0000aaaa-1111bbbb-2222cccc-3333dddd");
  EXPECT_EQ(state.at("r1").fingerprint, "");
}

TEST_F(OutputDir, InputLinesAreBounded) {
  EXPECT_THROW(engine::read_input_rows("/dev/zero", "id"), Error);  // a device: refused at once
  EXPECT_THROW(engine::read_input_rows(dir_.string(), "id"), Error);
  const fs::path in = dir_ / "in.jsonl";
  std::ofstream(in) << "{\"id\":\"a\"}\n\n{\"id\":\"b\"}";  // the last line without its newline
  const auto rows = engine::read_input_rows(in.string(), "id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].id, "b");
  EXPECT_EQ(rows[1].line, 3u);
}

}  // namespace
