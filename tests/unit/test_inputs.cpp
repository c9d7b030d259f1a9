// Inputs under attack (harness/core): files read whole only when regular and small enough (Note [Inputs
// that cannot hang or exhaust]), text from files shown on a terminal without its control characters, dates
// with their calendar checked, and a command's outputs on one file refused.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/input_file.hpp"
#include "harness/core/iso_time.hpp"
#include "harness/core/text_table.hpp"
#include "tests/unit/temp_dir.hpp"

namespace memstress {
namespace {

using memstress::testing::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(InputFile, ReadsARegularFileWhole) {
  TempDir dir;
  const std::string text(200'000, 'x');  // several blocks
  std::ofstream(dir.file("a.json"), std::ios::binary) << text << '\0' << "after the NUL";
  EXPECT_EQ(read_input_file(dir.file("a.json"), 1 << 20, "a results file"), text + '\0' + "after the NUL");
  std::ofstream(dir.file("empty.json"));
  EXPECT_EQ(read_input_file(dir.file("empty.json"), 10, "a results file"), "");
}

TEST(InputFile, RefusesWhatIsNotARegularFileWithoutBlocking) {
  TempDir dir;
  const std::filesystem::path fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of([&] { static_cast<void>(read_input_file(fifo, 100, "a results file")); }),
            "a FIFO, not a regular file; a results file is read from a regular file only");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "no writer: must not wait";
  EXPECT_EQ(error_of([] { static_cast<void>(read_input_file("/dev/zero", 100, "a results file")); }),
            "a character device, not a regular file; a results file is read from a regular file only");
  EXPECT_EQ(error_of([&] { static_cast<void>(read_input_file(dir.path(), 100, "a results file")); }),
            "a directory, not a regular file; a results file is read from a regular file only");
  EXPECT_EQ(error_of([&] { static_cast<void>(read_input_file(dir.file("none"), 100, "a results file")); }),
            "no such file");
}

TEST(InputFile, RefusesAFileLargerThanTheLimitByItsSize) {
  TempDir dir;
  const std::filesystem::path sparse = dir.file("sparse.json");
  std::ofstream(sparse).close();
  std::filesystem::resize_file(sparse, std::uintmax_t{6} << 30);  // 6 GiB, sparse: nothing written
  EXPECT_EQ(error_of([&] { static_cast<void>(read_input_file(sparse, 256 << 20, "a results file")); }),
            "6.00 GiB, larger than the 256.00 MiB a results file may be (docs/limits.md)");
  std::ofstream(dir.file("eleven"), std::ios::binary) << "01234567890";
  EXPECT_EQ(read_input_file(dir.file("eleven"), 11, "x").size(), 11U);
  EXPECT_NE(
      error_of([&] { static_cast<void>(read_input_file(dir.file("eleven"), 10, "x")); }).find("larger than"),
      std::string::npos);
}

TEST(TerminalText, ControlCharactersAndBrokenUtf8BecomeEscapes) {
  EXPECT_EQ(terminal_text("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(terminal_text("a\x1b[31mb\rc\nd\te\x07"), "a\\x1b[31mb\\rc\\nd\\te\\x07");
  EXPECT_EQ(terminal_text(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(terminal_text("del\x7f"), "del\\x7f");
  EXPECT_EQ(terminal_text("c1 \xc2\x9b"
                          "2J"),
            "c1 \\u009b2J");                            // U+009B, CSI in 8 bits
  EXPECT_EQ(terminal_text("bare \x9b"), "bare \\x9b");  // not UTF-8 at all
  EXPECT_EQ(terminal_text("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "été € 😀");  // kept
  EXPECT_EQ(terminal_text("\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80"),
            "\\xc0\\xaf \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80");
  EXPECT_EQ(terminal_text("cut \xe2\x82"), "cut \\xe2\\x82");
  EXPECT_EQ(printable(std::string(100, 'x') + "\n", 10), "xxxxxxx...");
  // A table's cells are shown the same way, and the columns line up on what is shown.
  EXPECT_EQ(render_table({{"A", "B"}, {"x\ny", "z"}}), "A     B\nx\\ny  z\n");
}

TEST(Iso8601, OnlyRealCalendarDatesAndTimes) {
  for (const char* good :
       {"2026-11-21", "2026-11-21T14:03:05Z", "2026-11-21 14:03", "2026-11-21T14", "2024-02-29", "2000-02-29",
        "2026-11-21T23:59:60Z", "2026-11-21T14:03:05.123456Z", "2026-12-31T00:00:00"}) {
    EXPECT_TRUE(valid_iso8601(good, TimeZone::utc_only)) << good;
  }
  for (const char* bad :
       {"2026-13-45", "2026-02-31", "2026-02-29", "1900-02-29", "2026-04-31", "2026-00-10", "2026-11-00",
        "2026-11-21T24:00", "2026-11-21T23:60", "2026-11-21T23:59:61", "2026-11-21T14:03:05.", "2026-11-21X",
        "26-11-21", "2026-1-21", "", "2026-11-21T14:03:05+02:00", "2026-11-21T14:03:05Zjunk"}) {
    EXPECT_FALSE(valid_iso8601(bad, TimeZone::utc_only)) << bad;
  }
  EXPECT_TRUE(valid_iso8601("2026-11-21T15:06:00+00:00", TimeZone::any_offset));
  EXPECT_TRUE(valid_iso8601("2026-11-21T15:06:00-0530", TimeZone::any_offset));
  EXPECT_FALSE(valid_iso8601("2026-11-21T15:06:00+24:00", TimeZone::any_offset));
  EXPECT_FALSE(valid_iso8601("2026-02-30T15:06:00+00:00", TimeZone::any_offset));
}

TEST(Outputs, TwoOutputsOnOneFileAreRefusedHoweverSpelt) {
  TempDir dir;
  const std::filesystem::path x = dir.file("x.json");
  std::ofstream(dir.file("real.json")) << "kept";
  std::filesystem::create_symlink(dir.file("real.json"), dir.file("link.json"));
  std::filesystem::create_hard_link(dir.file("real.json"), dir.file("hard.json"));
  std::filesystem::create_directory(dir.file("sub"));
  const auto refused = [](std::vector<NamedOutput> outputs) {
    return error_of([&] { check_distinct_outputs(outputs); });
  };
  EXPECT_EQ(refused({{"--out", x}, {"--junit", x}})
                .find("--out " + x.string() + " and --junit " + x.string() + " are the same file"),
            0U);
  EXPECT_NE(refused({{"--out", x}, {"--junit", dir.path() / "sub/../x.json"}}), "no error");
  EXPECT_NE(refused({{"--out", x}, {"--junit", dir.path() / "./x.json"}}), "no error");
  EXPECT_NE(refused({{"--out", dir.file("link.json")}, {"--snapshot", dir.file("real.json")}}), "no error");
  EXPECT_NE(refused({{"--out", dir.file("hard.json")}, {"--snapshot", dir.file("real.json")}}), "no error");
  EXPECT_EQ(
      refused({{"--out", x}, {"--junit", dir.file("x.xml")}, {"--alloc-trace", ""}, {"--snapshot", ""}}),
      "no error");
}

}  // namespace
}  // namespace memstress
