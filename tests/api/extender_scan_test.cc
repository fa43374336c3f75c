// The raw JSON scanner the extender reads candidate lists with: it accepts exactly what a
// strict parser (nlohmann) accepts on real requests and thousands of corruptions of them, and
// walks members/elements and decodes strings correctly.
#include "api/extender_scan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace toposched::api::scan {
namespace {

std::string ReadExtenderSample(const std::string& name) {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/tests/api/testdata/extender/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ExtenderScan, AgreesWithAStrictParserOnRequestsAndTheirCorruptions) {
  const std::vector<std::string> docs = {ReadExtenderSample("filter_lone_nodes.request.json"),
                                         ReadExtenderSample("filter_pair0_names.request.json"),
                                         R"({"a": [1, -2.5e+3, 0.0, true, false, null, "\u00e9\n"],
                                             "b": {"c": {}, "d": []}})"};
  const std::string replacements[] = {"\"",   "}",    "]", ",", ":", "x", "\\",
                                      "\x01", "\xc3", " ", "0", "-", "."};
  int cases = 0, valid = 0;
  for (const std::string& doc : docs) {
    ASSERT_TRUE(nlohmann::json::accept(doc));
    std::string err;
    EXPECT_TRUE(Validate(doc, &err)) << err;
    // Every prefix, and every 7th byte replaced by each of the replacements.
    for (size_t n = 0; n < doc.size(); n += 3) {
      const std::string prefix = doc.substr(0, n);
      EXPECT_EQ(Validate(prefix, nullptr), nlohmann::json::accept(prefix)) << prefix;
      ++cases;
    }
    for (size_t at = 0; at < doc.size(); at += 7) {
      for (const std::string& r : replacements) {
        std::string bad = doc;
        bad.replace(at, 1, r);
        const bool want = nlohmann::json::accept(bad);
        EXPECT_EQ(Validate(bad, &err), want) << "byte " << at << " -> " << r << ": " << err;
        valid += want ? 1 : 0;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 3000);
  EXPECT_GT(valid, 100);  // whitespace and digit swaps inside strings stay valid
  EXPECT_FALSE(Validate(std::string(600, '[') + std::string(600, ']'), nullptr));
  std::string err;
  EXPECT_FALSE(Validate("{\"a\": 1} x", &err));
  EXPECT_EQ(err, "at byte 9: trailing characters after the value");
}

TEST(ExtenderScan, WalksMembersAndElementsRaw) {
  const std::string doc = R"( {"k": [1, {"x": "y"}, "s"], "e\"q": null , "o": {}} )";
  std::vector<std::pair<std::string, std::string>> members;
  ASSERT_TRUE(
      ForEachMember(std::string_view(doc).substr(1, doc.size() - 2), [&](std::string_view k,
                                                                         std::string_view v) {
        members.emplace_back(k, v);
        return OkStatus();
      }).ok());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"k", R"([1, {"x": "y"}, "s"])"}, {"e\"q", "null"}, {"o", "{}"}};
  EXPECT_EQ(members, want);
  std::vector<std::string> elems;
  ASSERT_TRUE(ForEachElement(R"([1, {"x": "y"}, "s"])", [&](std::string_view v) {
                elems.emplace_back(v);
                return OkStatus();
              }).ok());
  EXPECT_EQ(elems, (std::vector<std::string>{"1", R"({"x": "y"})", R"("s")"}));
  // The first error stops the walk and comes back.
  int seen = 0;
  Status s = ForEachElement("[1, 2, 3]", [&](std::string_view) {
    return ++seen == 2 ? InvalidArgumentError("stop") : OkStatus();
  });
  EXPECT_EQ(s.message(), "stop");
  EXPECT_EQ(seen, 2);
}

TEST(ExtenderScan, DecodesStrings) {
  std::string storage;
  EXPECT_EQ(StringValue(R"("gpu001")", storage), "gpu001");
  EXPECT_EQ(StringValue(R"("a\u00e9\n\"\\\/")", storage), "a\xc3\xa9\n\"\\/");
  EXPECT_EQ(StringValue(R"("\ud83d\ude00")", storage), "\xf0\x9f\x98\x80");
  EXPECT_EQ(StringValue(R"("\ud800x")", storage), "\xef\xbf\xbdx");  // lone surrogate: U+FFFD
  EXPECT_STREQ(KindOf("{}"), "object");
  EXPECT_STREQ(KindOf("[1]"), "array");
  EXPECT_STREQ(KindOf("-1"), "number");
}

}  // namespace
}  // namespace toposched::api::scan
