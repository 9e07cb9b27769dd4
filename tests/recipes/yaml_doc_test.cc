#include "recipes/yaml_doc.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>

#include "core/error.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::yaml::Node;

namespace {

pc::yaml::Document P(const std::string& text) { return pc::yaml::Parse(text, "r.yaml"); }

double Seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("yaml: mappings keep order, lines, columns and quoting", "[recipes]") {
  auto doc = P("# comment\nb: 1\na: 'x'\nlist:\n  - 3\n  - \"4\"\nflow: {k: v, j: [1, 2]}\nempty:\n");
  REQUIRE_FALSE(doc.empty);
  const Node& root = doc.root;
  REQUIRE(root.IsMapping());
  REQUIRE(root.keys().size() == 5);
  CHECK(root.keys()[0].text() == "b");
  CHECK(root.keys()[1].text() == "a");
  CHECK(root.keys()[0].loc().line == 2);
  CHECK(root.Find("a")->quoted());
  CHECK(root.Find("a")->loc().StrWithColumn() == "r.yaml:3:4");
  CHECK_FALSE(root.Find("b")->quoted());
  const Node& list = *root.Find("list");
  REQUIRE(list.IsSequence());
  CHECK(list.items()[0].AsInt("x") == 3);
  CHECK(list.items()[1].loc().line == 6);
  CHECK(list.items()[1].quoted());
  CHECK(root.Find("flow")->Find("j")->items()[1].AsInt("j") == 2);
  CHECK(root.Find("empty")->IsNull());
  CHECK(root.Find("missing") == nullptr);
}

TEST_CASE("yaml: scalars convert on request, with file:line and the expected type", "[recipes]") {
  auto doc =
      P("i: 42\nn: -7\nd: 0.5\ne: 1e-5\nt: true\nf: False\nq: \"4\"\ns: four\nyes: yes\nbig: 99999999999999999999\n"
        "inf: 1e999\nnul: ~\nlist: [1]\n");
  const Node& r = doc.root;
  CHECK(r.Find("i")->AsInt("'i'") == 42);
  CHECK(r.Find("n")->AsInt("'n'") == -7);
  CHECK(r.Find("d")->AsDouble("'d'") == 0.5);
  CHECK(r.Find("e")->AsDouble("'e'") == 1e-5);
  CHECK(r.Find("i")->AsDouble("'i'") == 42.0);
  CHECK(r.Find("t")->AsBool("'t'"));
  CHECK_FALSE(r.Find("f")->AsBool("'f'"));
  CHECK(r.Find("yes")->AsString("'yes'") == "yes");  // no YAML 1.1 surprise booleans
  CHECK(r.Find("q")->AsString("'q'") == "4");
  CHECK_THROWS_WITH(r.Find("s")->AsInt("'s'"), "r.yaml:8: 's' must be an integer, got 'four'");
  CHECK_THROWS_WITH(r.Find("q")->AsInt("'q'"), "r.yaml:7: 'q' must be an integer, got the quoted string '4'");
  CHECK_THROWS_WITH(r.Find("d")->AsInt("'d'"), "r.yaml:3: 'd' must be an integer, got '0.5'");
  CHECK_THROWS_WITH(r.Find("big")->AsInt("'big'"), Contains("r.yaml:10:") && Contains("64-bit range"));
  CHECK_THROWS_WITH(r.Find("inf")->AsDouble("'inf'"), "r.yaml:11: 'inf' must be a finite number, got '1e999'");
  CHECK_THROWS_WITH(r.Find("yes")->AsBool("'yes'"), "r.yaml:9: 'yes' must be true or false, got 'yes'");
  CHECK_THROWS_WITH(r.Find("nul")->AsString("'nul'"), "r.yaml:12: 'nul' must be a string, got an empty value");
  CHECK_THROWS_WITH(r.Find("list")->AsDouble("'list'"), "r.yaml:13: 'list' must be a number, got a list");
}

TEST_CASE("yaml: syntax errors name file:line:column and libyaml's problem", "[recipes]") {
  CHECK_THROWS_WITH(P("a: 1\nb: [1, 2\nc: 3\n"), Contains("r.yaml:") && Contains("flow sequence"));
  CHECK_THROWS_WITH(P("a: 1\n  b: 2\n"), Contains("r.yaml:2:4: mapping values are not allowed in this context"));
  CHECK_THROWS_WITH(P("a:\n  - 1\n b: 2\n"), Contains("r.yaml:3:2: did not find expected key") &&
                                                 Contains("block mapping that started at line 1"));
  CHECK_THROWS_WITH(P("a: 'open\n"), Contains("r.yaml:2:1: found unexpected end of stream") &&
                                         Contains("while scanning a quoted scalar that started at line 1"));
  CHECK_THROWS_WITH(P("a: \"\\q\"\n"), Contains("r.yaml:1:") && Contains("unknown escape character"));
  CHECK_THROWS_WITH(P("a: 1\n\tb: 2\n"), Contains("r.yaml:2:"));
}

TEST_CASE("yaml: duplicate keys, aliases, tags, complex keys and second documents are refused", "[recipes]") {
  CHECK_THROWS_WITH(P("bits: 4\ngroup_size: 128\nbits: 8\n"), "r.yaml:3:1: duplicate key 'bits' (first at line 1)");
  CHECK_THROWS_WITH(P("a: {x: 1, x: 2}\n"), "r.yaml:1:11: duplicate key 'x' (first at line 1)");
  CHECK_THROWS_WITH(P("a: &A 1\nb: *A\n"), Contains("r.yaml:2:4: YAML aliases ('*A') are not supported"));
  CHECK_THROWS_WITH(P("a: !!int 4\n"), Contains("r.yaml:1:4: YAML tags ('tag:yaml.org,2002:int') are not supported"));
  CHECK_THROWS_WITH(P("? [a, b]\n: 1\n"), Contains("r.yaml:1:3: mapping keys must be plain values, got a list"));
  CHECK_THROWS_WITH(P("a: 1\n---\nb: 2\n"), Contains("r.yaml:2:1: a second YAML document"));
}

TEST_CASE("yaml: empty files and bad bytes", "[recipes]") {
  CHECK(P("").empty);
  CHECK(P("# only a comment\n\n").empty);
  auto doc = P("---\n");
  CHECK_FALSE(doc.empty);
  CHECK(doc.root.IsNull());
  CHECK_THROWS_WITH(P("a: caf\xc3\n"),
                    "r.yaml: invalid trailing UTF-8 octet at byte offset 7 (0x0a); files must be UTF-8 text");
  CHECK_THROWS_WITH(P(std::string("a: x\0y\n", 7)), Contains("r.yaml: control characters are not allowed"));
}

TEST_CASE("yaml: hostile input is refused quickly", "[recipes]") {
  // Deep nesting in every syntax: flow sequences, flow mappings, block sequences.
  double t = Seconds([] {
    CHECK_THROWS_WITH(P(std::string(100000, '[')), Contains("r.yaml:1:33: nesting deeper than 32 levels"));
    std::string maps;
    for (int i = 0; i < 50000; ++i) maps += "{a: ";
    CHECK_THROWS_WITH(P(maps), Contains("r.yaml:1:129: nesting deeper than 32 levels"));
    CHECK_THROWS_WITH(P(std::string(100000, '{')), Contains("r.yaml:1:2: mapping keys must be plain values"));
    std::string dashes;
    for (int i = 0; i < 20000; ++i) dashes += "- ";
    CHECK_THROWS_WITH(P(dashes + "x\n"), Contains("nesting deeper than 32 levels"));
    std::string keys;
    for (int i = 0; i < 100; ++i) keys += std::string(static_cast<size_t>(i), ' ') + "k:\n";
    CHECK_THROWS_WITH(P(keys), Contains("nesting deeper than 32 levels"));
  });
  CHECK(t < 1.0);
  // Huge: over the byte limit (refused before parsing), and many small values under it.
  t = Seconds([] {
    CHECK_THROWS_WITH(P(std::string((1 << 20) + 1, ' ')),
                      Contains("r.yaml: 1048577 bytes, more than the limit of 1048576"));
    std::string many = "[";
    for (int i = 0; i < 200000; ++i) many += "1,";
    many += "1]";
    CHECK_THROWS_WITH(P(many), Contains("more than 100000 YAML values"));
    std::string long_scalar = "a: " + std::string(1000000, 'x') + "\n";
    CHECK(P(long_scalar).root.Find("a")->text().size() == 1000000);
  });
  CHECK(t < 2.0);
  // A file over the limit is refused before it is read.
  std::string dir = pc::test::TempDir("yaml");
  { std::ofstream(dir + "/big.yaml") << std::string(2 << 20, '#'); }
  CHECK_THROWS_WITH(pc::yaml::ParseFile(dir + "/big.yaml"), Contains("big.yaml: 2097152 bytes, more than the limit"));
  CHECK_THROWS_WITH(pc::yaml::ParseFile(dir + "/missing.yaml"), Contains("missing.yaml': the file does not exist"));
}

TEST_CASE("yaml: QuoteString round-trips any UTF-8 string", "[recipes]") {
  const std::vector<std::string> pool = {"a",
                                         "Z",
                                         "0",
                                         " ",
                                         "'",
                                         "\"",
                                         "\\",
                                         "\n",
                                         "\t",
                                         "\r",
                                         "#",
                                         ": ",
                                         "- ",
                                         "{",
                                         "}",
                                         "[",
                                         "]",
                                         ",",
                                         "&",
                                         "*",
                                         "!",
                                         "|",
                                         ">",
                                         "%",
                                         "@",
                                         "`",
                                         "~",
                                         "?",
                                         std::string(1, '\0'),
                                         "\x01",
                                         "\x7f",
                                         "\xc3\xa9",
                                         "\xc2\x85",
                                         "\xe2\x80\xa8",
                                         "\xe2\x80\xa9",
                                         "\xef\xbb\xbf",
                                         "\xc2\x90",
                                         "\xf0\x9f\x98\x80",
                                         "\xef\xbf\xbe"};
  std::mt19937 rng(7);
  std::vector<std::string> cases = {"", "plain", "it's", "model\\.layers\\.0\\..*", "  padded  ", "null", "true", "4"};
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    int n = static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) s += pool[rng() % pool.size()];
    cases.push_back(s);
  }
  for (const auto& s : cases) {
    std::string q = pc::yaml::QuoteString(s);
    INFO("string: " << q);
    auto doc = pc::yaml::Parse("k: " + q + "\nl: [" + q + ", x]\n", "q.yaml");
    CHECK(doc.root.Find("k")->text() == s);
    CHECK(doc.root.Find("k")->quoted());
    CHECK(doc.root.Find("l")->items()[0].text() == s);
  }
  CHECK(pc::yaml::QuoteString("model\\.layers") == "'model\\.layers'");
  CHECK(pc::yaml::QuoteString("it's") == "'it''s'");
  CHECK(pc::yaml::QuoteString("a\nb") == "\"a\\nb\"");
}
