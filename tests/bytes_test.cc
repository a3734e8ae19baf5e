// Byte quantities (model/bytes.h): "80GiB"-style strings in, human-readable sizes out.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/bytes.h"

namespace optpipe {
namespace {

constexpr double KiB = 1024.0, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024;

double ok(const std::string& text) {
  std::string why;
  const std::optional<double> v = parse_bytes(text, &why);
  EXPECT_TRUE(v.has_value()) << "\"" << text << "\" did not parse: " << why;
  return v.value_or(-12345);
}

// The reason parse_bytes gives for rejecting `text`; fails the test when it accepts it.
std::string bad(const std::string& text) {
  std::string why;
  const std::optional<double> v = parse_bytes(text, &why);
  EXPECT_FALSE(v.has_value()) << "\"" << text << "\" parsed as " << v.value_or(0);
  EXPECT_FALSE(why.empty()) << "no reason for \"" << text << "\"";
  return why;
}

TEST(Bytes, ParsesUnits) {
  EXPECT_DOUBLE_EQ(ok("80GiB"), 80 * GiB);
  EXPECT_DOUBLE_EQ(ok("512 MiB"), 512 * MiB);
  EXPECT_DOUBLE_EQ(ok("1.5GB"), 1.5e9);
  EXPECT_DOUBLE_EQ(ok("2KiB"), 2048);
  EXPECT_DOUBLE_EQ(ok("1TiB"), TiB);
  EXPECT_DOUBLE_EQ(ok("3kB"), 3000);
  EXPECT_DOUBLE_EQ(ok("3KB"), 3000);
  EXPECT_DOUBLE_EQ(ok("7MB"), 7e6);
  EXPECT_DOUBLE_EQ(ok("2TB"), 2e12);
  EXPECT_DOUBLE_EQ(ok("12B"), 12);
  EXPECT_DOUBLE_EQ(ok("0.25 GiB"), 0.25 * GiB);
}

// Issue 23: "60G" and "60gib" were refused while "--memory-limit 60" was taken as 60 bytes.
TEST(Bytes, ParsesUnitsInAnyCaseAndLoneLettersAsBinary) {
  EXPECT_DOUBLE_EQ(ok("80gib"), 80 * GiB);
  EXPECT_DOUBLE_EQ(ok("80GIB"), 80 * GiB);
  EXPECT_DOUBLE_EQ(ok("60G"), 60 * GiB);
  EXPECT_DOUBLE_EQ(ok("60g"), 60 * GiB);
  EXPECT_DOUBLE_EQ(ok("512m"), 512 * MiB);
  EXPECT_DOUBLE_EQ(ok("4 k"), 4 * KiB);
  EXPECT_DOUBLE_EQ(ok("2T"), 2 * TiB);
  EXPECT_DOUBLE_EQ(ok("1.5gb"), 1.5e9);
  EXPECT_DOUBLE_EQ(ok("12b"), 12);
}

TEST(Bytes, FlagsNeedAUnit) {
  std::string why;
  EXPECT_FALSE(parse_byte_flag("60", &why).has_value());
  EXPECT_NE(why.find("needs a unit"), std::string::npos) << why;
  EXPECT_NE(why.find("60GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("60 bytes"), std::string::npos) << why;
  EXPECT_DOUBLE_EQ(parse_byte_flag("60G", &why).value_or(-1), 60 * GiB);
  EXPECT_DOUBLE_EQ(parse_byte_flag("60 GB", &why).value_or(-1), 60e9);
  EXPECT_DOUBLE_EQ(parse_byte_flag("0", &why).value_or(-1), 0);  // nothing needs no unit
  why.clear();
  EXPECT_FALSE(parse_byte_flag("sixty", &why).has_value());
  EXPECT_NE(why.find("not a byte size"), std::string::npos) << why;
}

TEST(Bytes, ParsesPlainNumbers) {
  EXPECT_DOUBLE_EQ(ok("1.5e9"), 1.5e9);
  EXPECT_DOUBLE_EQ(ok("1e9"), 1e9);
  EXPECT_DOUBLE_EQ(ok("4096"), 4096);
  EXPECT_DOUBLE_EQ(ok("0"), 0);
  EXPECT_DOUBLE_EQ(ok(" 7 "), 7);
  EXPECT_DOUBLE_EQ(ok("\t1 GiB "), GiB);
}

TEST(Bytes, RejectsMalformed) {
  const std::string why = bad("80 GiBs");
  EXPECT_NE(why.find("\"80 GiBs\""), std::string::npos) << why;
  EXPECT_NE(why.find("not a byte size"), std::string::npos) << why;
  EXPECT_NE(why.find("80GiB"), std::string::npos) << why;  // shows what is expected
  bad("");
  bad("   ");
  bad("GiB");
  bad("B");
  bad("abc");
  bad("80 Gi");
  bad("1.5.2GB");
  bad("1e999");   // not finite
  bad("nan");
  bad("inf");
  bad("5 B B");
  bad("GiB80");
  // A null `why` is allowed.
  EXPECT_FALSE(parse_bytes("nope", nullptr).has_value());
}

TEST(Bytes, Formats) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(12), "12 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(640 * MiB), "640 MiB");
  EXPECT_EQ(format_bytes(12.5 * GiB), "12.5 GiB");
  EXPECT_EQ(format_bytes(80 * GiB), "80.0 GiB");
  EXPECT_EQ(format_bytes(1.4 * GiB), "1.40 GiB");
  EXPECT_EQ(format_bytes(1.5 * TiB), "1.50 TiB");
  EXPECT_EQ(format_bytes(-2 * GiB), "-2.00 GiB");
}

TEST(Bytes, FormatThenParseIsClose) {
  for (double v : {1.0, 999.0, 5000.0, 3.3 * MiB, 47.9 * GiB, 2.2 * TiB}) {
    const double back = ok(format_bytes(v));
    EXPECT_NEAR(back, v, v * 0.006) << format_bytes(v);
  }
}

}  // namespace
}  // namespace optpipe
