// store: groups, attributes, datasets and tables round-trip, with type/shape checks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "store/file.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::store::DType;
using pc::store::File;
using pc::store::Group;
using pc::store::Order;
using pc::store::Shape;
using pc::store::Table;

namespace {
std::string NewFile(const std::string& name) { return pc::test::TempDir("store") + "/" + name; }
}  // namespace

TEST_CASE("attributes of every type round-trip", "[store]") {
  std::string path = NewFile("attrs.h5");
  {
    File f = File::Create(path, "probe");
    Group g = f.root().CreateGroup("run");
    g.SetAttr("name", "awq-w4g128");
    g.SetAttr("utf8", std::string("caf\xc3\xa9 \xe2\x96\x81"));
    g.SetAttr("empty", "");
    g.SetAttr("seed", 1234);
    g.SetAttr("big", int64_t{1} << 60);
    g.SetAttr("negative", -7L);
    g.SetAttr("size", size_t{42});
    g.SetAttr("lr", 3e-4);
    g.SetAttr("nan", std::numeric_limits<double>::quiet_NaN());
    g.SetAttr("yes", true);
    g.SetAttr("no", false);
    g.SetAttr("bits", std::vector<double>{4, 8, 16.5});
    g.SetAttr("layers", std::vector<int64_t>{0, 1, -2});
    g.SetAttr("recipes", std::vector<std::string>{"rtn", "awq", ""});
    g.SetAttr("none", std::vector<double>{});
    g.SetAttr("no_names", std::vector<std::string>{});
    g.SetAttr("seed", 99);  // replaced, keeps its value type
    f.Close();
  }
  File f = File::OpenRead(path, "probe");
  Group g = f.root().OpenGroup("run");
  CHECK(g.GetAttr<std::string>("name") == "awq-w4g128");
  CHECK(g.GetAttr<std::string>("utf8") == "caf\xc3\xa9 \xe2\x96\x81");
  CHECK(g.GetAttr<std::string>("empty").empty());
  CHECK(g.GetAttr<int64_t>("seed") == 99);
  CHECK(g.GetAttr<int64_t>("big") == (int64_t{1} << 60));
  CHECK(g.GetAttr<int64_t>("negative") == -7);
  CHECK(g.GetAttr<int64_t>("size") == 42);
  CHECK(g.GetAttr<double>("lr") == 3e-4);
  CHECK(std::isnan(g.GetAttr<double>("nan")));
  CHECK(g.GetAttr<bool>("yes"));
  CHECK_FALSE(g.GetAttr<bool>("no"));
  CHECK(g.GetAttr<std::vector<double>>("bits") == std::vector<double>{4, 8, 16.5});
  CHECK(g.GetAttr<std::vector<int64_t>>("layers") == std::vector<int64_t>{0, 1, -2});
  CHECK(g.GetAttr<std::vector<std::string>>("recipes") == std::vector<std::string>{"rtn", "awq", ""});
  CHECK(g.GetAttr<std::vector<double>>("none").empty());
  CHECK(g.GetAttr<std::vector<std::string>>("no_names").empty());
  CHECK(g.GetAttrOr<int64_t>("missing", 5) == 5);
  CHECK(g.GetAttrOr<std::string>("name", "x") == "awq-w4g128");

  CHECK(g.AttrType("name") == DType::kString);
  CHECK(g.AttrType("seed") == DType::kInt64);
  CHECK(g.AttrType("lr") == DType::kFloat64);
  CHECK(g.AttrType("yes") == DType::kBool);
  CHECK(g.HasAttr("lr"));
  CHECK_FALSE(g.HasAttr("lr2"));

  // Creation order (a replaced attribute moves to the end) and name order.
  std::vector<std::string> created = {"name", "utf8", "empty", "big",    "negative", "size", "lr",       "nan",
                                      "yes",  "no",   "bits",  "layers", "recipes",  "none", "no_names", "seed"};
  CHECK(g.AttrNames() == created);
  std::vector<std::string> sorted = created;
  std::sort(sorted.begin(), sorted.end());
  CHECK(g.AttrNames(Order::kName) == sorted);

  // Root attributes of every file.
  Group root = f.root();
  CHECK(root.GetAttr<int64_t>("perpcomp_schema") == pc::store::kSchemaVersion);
  CHECK(root.GetAttr<std::string>("perpcomp_kind") == "probe");
  CHECK(root.GetAttr<std::string>("created_by") == pc::store::CreatedBy());
  CHECK(pc::StartsWith(pc::store::CreatedBy(), "perpcomp "));
  std::string at = root.GetAttr<std::string>("created_at");
  CHECK(at.size() == 20);
  CHECK(at[10] == 'T');
  CHECK(at.back() == 'Z');
  CHECK(f.kind() == "probe");
  CHECK(f.schema() == 1);
}

TEST_CASE("attribute errors name the file, group, attribute and types", "[store]") {
  std::string path = NewFile("attr-errors.h5");
  File f = File::Create(path, "probe");
  Group g = f.root().CreateGroup("run");
  g.SetAttr("name", "x");
  g.SetAttr("seed", 3);
  g.SetAttr("lr", 0.5);
  g.SetAttr("list", std::vector<int64_t>{1, 2});
  CHECK_THROWS_WITH(g.GetAttr<int64_t>("missing"),
                    Contains(path + ":/run: no attribute 'missing'") && Contains("attributes: name, seed, lr, list"));
  CHECK_THROWS_WITH(g.GetAttr<int64_t>("name"), Contains(":/run: attribute 'name' holds string, expected int64"));
  CHECK_THROWS_WITH(g.GetAttr<double>("seed"), Contains("attribute 'seed' holds int64, expected float64"));
  CHECK_THROWS_WITH(g.GetAttr<std::string>("lr"), Contains("attribute 'lr' holds float64, expected string"));
  CHECK_THROWS_WITH(g.GetAttr<bool>("seed"), Contains("attribute 'seed' holds int64, expected bool"));
  CHECK_THROWS_WITH(g.GetAttr<int64_t>("list"), Contains("attribute 'list' holds 2 values [2], expected one int64"));
  CHECK_THROWS_WITH(g.GetAttr<std::vector<std::string>>("list"), Contains("holds int64, expected string"));
  CHECK(g.GetAttr<std::vector<int64_t>>("seed") == std::vector<int64_t>{3});  // a scalar reads as one value
  CHECK_THROWS_WITH(g.SetAttr("a/b", 1), Contains("invalid attribute name 'a/b'"));
  CHECK_THROWS_WITH(g.SetAttr("", 1), Contains("empty attribute name"));
  CHECK_THROWS_WITH(g.SetAttr("s", std::string("a\0b", 3)), Contains("contains a NUL byte"));
  CHECK_THROWS_WITH(g.SetAttr("s", "ab\xff"), Contains("not valid UTF-8 (byte offset 2)"));
  CHECK_THROWS_WITH(g.SetAttr("big", uint64_t{1} << 63), Contains("does not fit in int64"));
}

TEST_CASE("N-D arrays of every element type round-trip", "[store]") {
  std::string path = NewFile("arrays.h5");
  std::vector<double> d(2 * 3 * 4);
  for (size_t i = 0; i < d.size(); ++i) d[i] = 0.5 * static_cast<double>(i) - 3;
  std::vector<float> fl = {1.5f, -2.25f, 3e-8f, 7.f};
  std::vector<int64_t> i64 = {int64_t{1} << 62, -1, 0};
  std::vector<int32_t> i32 = {1, -2, 3, -4, 5, -6};
  std::vector<uint8_t> u8 = {0, 1, 255};
  std::vector<std::string> s = {"alpha", "", "caf\xc3\xa9", "\xe2\x96\x81the"};
  {
    File f = File::Create(path, "measure");
    Group g = f.root().CreateGroup("data");
    g.WriteArray("d", d, Shape{2, 3, 4});
    g.WriteArray("f", fl, Shape{2, 2});
    g.WriteVector("i64", i64);
    g.WriteArray("i32", i32.data(), Shape{3, 2});
    g.WriteVector("u8", u8);
    g.WriteVector("s", s);
    g.WriteVector("empty", std::vector<double>{});
    g.WriteArray("empty2", std::vector<float>{}, Shape{0, 5});
    g.WriteVector("no_strings", std::vector<std::string>{});
    f.Close();
  }
  File f = File::OpenRead(path);
  Group g = f.root().OpenGroup("data");
  auto ad = g.ReadArray<double>("d");
  CHECK(ad.shape == Shape{2, 3, 4});
  CHECK(ad.values == d);
  auto af = g.ReadArray<float>("f", {2, -1});
  CHECK(af.shape == Shape{2, 2});
  CHECK(af.values == fl);
  CHECK(g.ReadVector<int64_t>("i64") == i64);
  auto ai = g.ReadArray<int32_t>("i32", {3, 2});
  CHECK(ai.values == i32);
  CHECK(g.ReadVector<uint8_t>("u8", 3) == u8);
  CHECK(g.ReadVector<std::string>("s") == s);
  CHECK(g.ReadVector<double>("empty").empty());
  CHECK(g.ReadArray<float>("empty2").shape == Shape{0, 5});
  CHECK(g.ReadVector<std::string>("no_strings").empty());
  CHECK(g.Info("d").dtype == DType::kFloat64);
  CHECK(g.Info("d").shape == Shape{2, 3, 4});
  CHECK(g.Info("s").dtype == DType::kString);
  CHECK(g.Info("u8").dtype == DType::kUInt8);
  CHECK(g.List() == std::vector<std::string>{"d", "f", "i64", "i32", "u8", "s", "empty", "empty2", "no_strings"});
}

TEST_CASE("large arrays: chunked + gzip, smaller on disk, same values", "[store]") {
  std::string dir = pc::test::TempDir("store-gzip");
  const int64_t n = 1 << 20;  // a million per-token values
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.25f;
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % 50257);
  for (bool compress : {false, true}) {
    pc::store::WriteOptions opts = compress ? pc::store::WriteOptions::Compressed() : pc::store::WriteOptions{};
    std::string path = dir + (compress ? "/gz.h5" : "/plain.h5");
    File f = File::Create(path, "measure");
    f.root().WriteArray("nll", v, Shape{1024, 1024}, opts);
    f.root().WriteVector("tokens", tokens, opts);
    f.root().WriteVector("tiny", std::vector<double>{1, 2, 3}, opts);  // under 64 KiB: stays contiguous
    f.Close();
  }
  int64_t plain = pc::fs::FileSize(dir + "/plain.h5"), gz = pc::fs::FileSize(dir + "/gz.h5");
  CHECK(plain > 8 * n);
  CHECK(gz * 4 < plain);
  File f = File::OpenRead(dir + "/gz.h5");
  CHECK(f.root().ReadArray<float>("nll", {1024, 1024}).values == v);
  CHECK(f.root().ReadVector<int32_t>("tokens") == tokens);
  CHECK(f.root().ReadVector<double>("tiny") == std::vector<double>{1, 2, 3});
  // Explicit chunks, and chunk errors.
  std::string p2 = dir + "/chunks.h5";
  File g = File::Create(p2, "measure");
  pc::store::WriteOptions opts;
  opts.chunk = {10, 1000};  // clipped to the shape
  g.root().WriteArray("x", std::vector<double>(6, 1.0), Shape{2, 3}, opts);
  CHECK(g.root().ReadArray<double>("x").values == std::vector<double>(6, 1.0));
  opts.chunk = {2};
  CHECK_THROWS_WITH(g.root().WriteArray("y", std::vector<double>(6), Shape{2, 3}, opts),
                    Contains("chunk shape [2] does not match the rank of shape [2, 3]"));
  opts.chunk = {};
  opts.gzip_level = 12;
  CHECK_THROWS_WITH(g.root().WriteVector("z", std::vector<double>(6), opts), Contains("gzip level 12 is out of range"));
}

TEST_CASE("dataset reads check type and shape, writes check counts and names", "[store]") {
  std::string path = NewFile("checks.h5");
  File f = File::Create(path, "measure");
  Group g = f.root().CreateGroup("run");
  g.WriteArray("x", std::vector<float>(12), Shape{3, 4});
  g.WriteVector("names", std::vector<std::string>{"a"});
  CHECK_THROWS_WITH(g.ReadArray<double>("x"),
                    Contains(path + ":/run: dataset 'x' holds float32 values, expected float64"));
  CHECK_THROWS_WITH(g.ReadArray<float>("x", {3, 5}), Contains("dataset 'x' has shape [3, 4], expected [3, 5]"));
  CHECK_THROWS_WITH(g.ReadArray<float>("x", {12}), Contains("has shape [3, 4], expected [12]"));
  CHECK_THROWS_WITH(g.ReadVector<float>("x"), Contains("has shape [3, 4], expected [-1] (a 1-D array)"));
  CHECK_THROWS_WITH(g.ReadVector<std::string>("names", 2), Contains("has shape [1], expected [2]"));
  CHECK_THROWS_WITH(g.ReadVector<int64_t>("names"), Contains("holds string values, expected int64"));
  CHECK_THROWS_WITH(g.ReadVector<double>("missing"), Contains(":/run: no dataset 'missing' (children: x, names)"));
  CHECK_THROWS_WITH(f.root().ReadVector<double>("run"), Contains("'run' is a group, expected a dataset"));
  CHECK_THROWS_WITH(g.WriteArray("y", std::vector<double>(5), Shape{2, 3}),
                    Contains(":/run: cannot write dataset 'y': shape [2, 3] needs 6 values, got 5"));
  CHECK_THROWS_WITH(g.WriteArray("y", std::vector<double>{}, Shape{}), Contains("at least one dimension"));
  CHECK_THROWS_WITH(g.WriteArray("y", std::vector<std::string>(4), Shape{2, 2}), Contains("string arrays are 1-D"));
  CHECK_THROWS_WITH(g.WriteVector("x", std::vector<double>{1}),
                    Contains("'x' already exists (results are written once"));
  CHECK_THROWS_WITH(g.WriteVector("a/b", std::vector<double>{1}), Contains("invalid dataset name 'a/b'"));
  CHECK_THROWS_WITH(g.WriteVector(".", std::vector<double>{1}), Contains("invalid dataset name '.'"));
  CHECK_THROWS_WITH(g.WriteVector("s", std::vector<std::string>{"ok", "bad\xc3"}),
                    Contains("dataset 's': string 1 is not valid UTF-8 (byte offset 3)"));
}

TEST_CASE("groups: nesting, relative paths, listing and kinds", "[store]") {
  std::string path = NewFile("groups.h5");
  File f = File::Create(path, "sweep-results");
  Group runs = f.root().CreateGroup("runs");
  for (const char* name : {"zeta", "alpha", "mid"}) runs.CreateGroup(name).SetAttr("recipe", name);
  Group deep = runs.OpenGroup("alpha").CreateGroup("layers").CreateGroup("0");
  deep.WriteVector("iso", std::vector<double>{1, 2});
  CHECK(deep.path() == "/runs/alpha/layers/0");
  CHECK(deep.Where() == path + ":/runs/alpha/layers/0");
  CHECK(runs.List() == std::vector<std::string>{"zeta", "alpha", "mid"});
  CHECK(runs.List(Order::kName) == std::vector<std::string>{"alpha", "mid", "zeta"});
  CHECK(f.root().OpenGroup("runs/alpha/layers/0").ReadVector<double>("iso") == std::vector<double>{1, 2});
  CHECK(runs.Has("alpha/layers/0/iso"));
  CHECK(runs.IsDataset("alpha/layers/0/iso"));
  CHECK(runs.IsGroup("alpha/layers"));
  CHECK_FALSE(runs.Has("alpha/nothing/0"));
  CHECK_FALSE(runs.Has("alpha/layers/0/iso/x"));  // through a dataset
  CHECK(runs.Kind("nope") == pc::store::ChildKind::kMissing);
  f.root().WriteVector("v", std::vector<int64_t>{1});
  CHECK(f.root().List() == std::vector<std::string>{"runs", "v"});
  CHECK(f.root().ListGroups() == std::vector<std::string>{"runs"});
  CHECK(runs.OpenGroup("alpha").ReadVector<double>("layers/0/iso").size() == 2);

  CHECK_THROWS_WITH(runs.CreateGroup("alpha"), Contains(":/runs: cannot create group 'alpha': 'alpha' already exists"));
  CHECK_THROWS_WITH(runs.OpenGroup("beta"), Contains(":/runs: no group 'beta' (children: zeta, alpha, mid)"));
  CHECK_THROWS_WITH(f.root().OpenGroup("v"), Contains("'v' is a dataset, expected a group"));
  CHECK_THROWS_WITH(runs.OpenGroup("alpha//layers"), Contains("empty path component name"));
  CHECK_THROWS_WITH(runs.CreateGroup("a/b"), Contains("invalid group name 'a/b'"));
}

TEST_CASE("tables: columns of every type, subsets, typed access and checks", "[store]") {
  std::string path = NewFile("tables.h5");
  Table t;
  t.AddColumn("name", std::vector<std::string>{"l0.q", "l0.k", "l1.q"});
  t.AddColumn("iso", std::vector<double>{0.25, 0.5, 0.75});
  t.AddColumn("perp", std::vector<float>{1.f, 2.f, 3.f});
  t.AddColumn("layer", std::vector<int64_t>{0, 0, 1});
  t.AddColumn("bits", std::vector<int32_t>{4, 4, 8});
  t.AddColumn("skipped", std::vector<uint8_t>{0, 1, 0});
  CHECK(t.rows() == 3);
  CHECK(t.num_columns() == 6);
  CHECK_THROWS_WITH(t.AddColumn("short", std::vector<double>{1.0}),
                    Contains("table: column 'short' has 1 rows, the other columns have 3"));
  CHECK_THROWS_WITH(t.AddColumn("iso", std::vector<double>{1, 2, 3}), Contains("duplicate column 'iso'"));
  CHECK_THROWS_WITH(t.AddColumn("a/b", std::vector<double>{1, 2, 3}), Contains("invalid column name 'a/b'"));
  CHECK_THROWS_WITH(t.Get<int64_t>("iso"), Contains("column 'iso' holds float64 values, requested int64"));
  CHECK_THROWS_WITH(t.Get<double>("nope"),
                    Contains("no column 'nope' (columns: name, iso, perp, layer, bits, skipped)"));
  {
    File f = File::Create(path, "measure");
    Group run = f.root().CreateGroup("run");
    Group sites = run.WriteTable("sites", t);
    sites.SetAttr("units", "nats");
    run.WriteTable("empty", Table());
    Table none;
    none.AddColumn("x", std::vector<double>{});
    run.WriteTable("no_rows", none);
    run.WriteTable("big", Table().AddColumn("v", std::vector<double>(100000, 1.5)),
                   pc::store::WriteOptions::Compressed());
    CHECK_THROWS_WITH(run.WriteTable("sites", t), Contains("'sites' already exists"));
    f.Close();
  }
  File f = File::OpenRead(path, "measure");
  Group run = f.root().OpenGroup("run");
  CHECK(run.IsTable("sites"));
  CHECK_FALSE(f.root().IsTable("run"));
  Table r = run.ReadTable("sites");
  CHECK(r.column_names() == t.column_names());
  CHECK(r.rows() == 3);
  CHECK(r.Get<std::string>("name") == t.Get<std::string>("name"));
  CHECK(r.Get<double>("iso") == t.Get<double>("iso"));
  CHECK(r.Get<float>("perp") == t.Get<float>("perp"));
  CHECK(r.Get<int64_t>("layer") == t.Get<int64_t>("layer"));
  CHECK(r.Get<int32_t>("bits") == t.Get<int32_t>("bits"));
  CHECK(r.Get<uint8_t>("skipped") == t.Get<uint8_t>("skipped"));
  CHECK(r.type("perp") == DType::kFloat32);
  CHECK(run.OpenGroup("sites").GetAttr<std::string>("units") == "nats");
  CHECK_THROWS_WITH(r.Get<float>("iso"),
                    Contains(path + ":/run/sites: column 'iso' holds float64 values, requested float32"));

  Table sub = run.ReadTable("sites", {"iso", "name"});
  CHECK(sub.column_names() == std::vector<std::string>{"iso", "name"});
  CHECK_THROWS_WITH(run.ReadTable("sites", {"iso", "nope"}),
                    Contains(":/run/sites: no column 'nope' (columns: name, iso"));
  CHECK(run.ReadTable("empty").num_columns() == 0);
  CHECK(run.ReadTable("no_rows").rows() == 0);
  CHECK(run.ReadTable("big").Get<double>("v").size() == 100000);
  CHECK_THROWS_WITH(f.root().ReadTable("run"), Contains(":/run: not a table (no 'columns' attribute)"));
  CHECK_THROWS_WITH(run.ReadTable("nope"), Contains("no group 'nope'"));
}

TEST_CASE("tables: extra datasets are ignored, a short column is an error", "[store]") {
  std::string path = NewFile("table-evolve.h5");
  {
    File f = File::Create(path, "measure");
    Group sites = f.root().WriteTable("sites", Table().AddColumn("iso", std::vector<double>{1, 2}));
    sites.WriteVector("future_column", std::vector<double>{1, 2});  // not listed in `columns`
    sites.SetAttr("future_attr", 1);
    Group bad = f.root().WriteTable("bad", Table().AddColumn("iso", std::vector<double>{1, 2}));
    bad.SetAttr("rows", 3);
    f.Close();
  }
  File f = File::OpenRead(path);
  CHECK(f.root().ReadTable("sites").column_names() == std::vector<std::string>{"iso"});
  CHECK_THROWS_WITH(f.root().ReadTable("bad"), Contains(":/bad: column 'iso' has shape [2], the table has 3 rows"));
}
