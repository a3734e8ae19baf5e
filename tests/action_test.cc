// The text form of one action (spec §3): `F3.7`, `F3.7@0.5`, `B3.7`, `W3.7`, `R3.7`.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/action.h"

namespace optpipe {
namespace {

Action ok(const std::string& text) {
  std::string why;
  const std::optional<Action> a = parse_action(text, &why);
  EXPECT_TRUE(a.has_value()) << "\"" << text << "\" did not parse: " << why;
  return a.value_or(Action{OpType::R, -1, -1, -1});
}

// The reason for rejecting `text`; fails the test when it parses.
std::string bad(const std::string& text) {
  std::string why;
  const std::optional<Action> a = parse_action(text, &why);
  EXPECT_FALSE(a.has_value()) << "\"" << text << "\" parsed as " << (a ? to_string(*a) : "");
  EXPECT_NE(why.find("\"" + text + "\" is not an action"), std::string::npos) << why;
  return why;
}

void expect_reason(const std::string& text, const std::string& reason) {
  const std::string why = bad(text);
  EXPECT_NE(why.find(reason), std::string::npos) << "\"" << reason << "\" not in: " << why;
}

TEST(Action, ParsesEveryType) {
  EXPECT_EQ(ok("F3.7"), (Action{OpType::F, 3, 7, 0.0}));
  EXPECT_EQ(ok("F3.7@0.5"), (Action{OpType::F, 3, 7, 0.5}));
  EXPECT_EQ(ok("F0.0@1"), (Action{OpType::F, 0, 0, 1.0}));
  EXPECT_EQ(ok("F12.345@0.25"), (Action{OpType::F, 12, 345, 0.25}));
  EXPECT_EQ(ok("B3.7"), make_b(3, 7));
  EXPECT_EQ(ok("W3.7"), make_w(3, 7));
  EXPECT_EQ(ok("R3.7"), make_r(3, 7));
  EXPECT_TRUE(ok("B3.7").is_compute());
  EXPECT_FALSE(ok("R3.7").is_compute());
  EXPECT_EQ(ok("F1.2@0"), make_f(1, 2));  // an explicit 0 is the default
}

TEST(Action, RejectsBadForms) {
  expect_reason("X0.1", "F, B, W or R");
  expect_reason("f0.1", "F, B, W or R");
  expect_reason("F1", "too short");
  expect_reason("F1.", "too short");
  expect_reason("F.1", "too short");
  expect_reason("", "too short");
  expect_reason("F10.", "microbatch");
  expect_reason("F.10", "stage");
  expect_reason("Fa.1", "stage");
  expect_reason("F1.b", "microbatch");
  expect_reason("F123", "missing '.'");
  expect_reason("B0.1@0.5", "only F");
  expect_reason("R0.1@1", "only F");
  expect_reason("F0.1@", "missing offload level");
  expect_reason("F0.1@x", "must be a number");
  expect_reason("F0.1@0.5x", "must be a number");
  expect_reason("F0.1@1.5", "[0, 1]");
  expect_reason("F0.1@-0.5", "[0, 1]");
  expect_reason("F-1.0", "stage");
  expect_reason("F1.-1", "microbatch");
  expect_reason("F 1.0", "stage");
  expect_reason("F1.0 ", "microbatch");
  expect_reason("F1.2.3", "microbatch");
  // Every reason shows the accepted forms.
  EXPECT_NE(bad("Q1.1").find("F3.7@0.5"), std::string::npos);
  EXPECT_FALSE(parse_action("Q1.1", nullptr).has_value());
}

TEST(Action, ToString) {
  EXPECT_EQ(to_string(make_f(3, 7)), "F3.7");
  EXPECT_EQ(to_string(make_f(3, 7, 0.5)), "F3.7@0.5");
  EXPECT_EQ(to_string(make_f(0, 0, 1.0)), "F0.0@1");
  EXPECT_EQ(to_string(make_f(2, 1, 0.25)), "F2.1@0.25");
  EXPECT_EQ(to_string(make_f(2, 1, 0.3)), "F2.1@0.3");
  EXPECT_EQ(to_string(make_b(10, 20)), "B10.20");
  EXPECT_EQ(to_string(make_w(3, 7)), "W3.7");
  EXPECT_EQ(to_string(make_r(3, 7)), "R3.7");
  EXPECT_EQ(type_letter(OpType::F), 'F');
  EXPECT_EQ(type_letter(OpType::R), 'R');
}

TEST(Action, RoundTrips) {
  for (const char* text : {"F3.7", "F3.7@0.5", "F0.0@1", "F2.1@0.25", "F2.1@0.3", "F5.5@0.125",
                           "F1.1@0.1", "F1.1@0.7", "B3.7", "W0.0", "R99.123"}) {
    EXPECT_EQ(to_string(ok(text)), text);
  }
  // The other way: every level prints exactly and reads back to the same double.
  for (double r : {0.1, 0.2, 0.25, 0.3, 1.0 / 3, 2.0 / 3, 0.999, 1e-3, 1.0}) {
    const Action a = make_f(4, 9, r);
    EXPECT_EQ(ok(to_string(a)), a) << to_string(a);
  }
}

}  // namespace
}  // namespace optpipe
