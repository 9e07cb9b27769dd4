// store <-> h5py (and h5dump): files written by the store read in Python, and the reverse.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "store/file.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::store::File;
using pc::store::Group;
using pc::store::Shape;
using pc::store::Table;

namespace {

bool HaveH5py() {
  static int have = -1;
  if (have < 0) have = pc::test::Run("/usr/bin/python3 -c 'import h5py, numpy'").exit_code == 0 ? 1 : 0;
  return have == 1;
}

// Runs `script` with /usr/bin/python3, argv[1] = `file`.
pc::test::RunResult RunPython(const std::string& script, const std::string& file) {
  std::string py = pc::test::TempDir("store-py") + "/check.py";
  std::ofstream(py) << script;
  return pc::test::Run("/usr/bin/python3 '" + py + "' '" + file + "'");
}

// The small file of docs/HDF5.md: one run with attributes, a table and a per-token array.
void WriteExample(const std::string& path) {
  pc::store::StagedWriter out = File::CreateStaged(path, pc::store::kind::kMeasure, true);
  Group run = out.root().CreateGroup("runs").CreateGroup("awq-w4g128");
  run.SetAttr("recipe", "awq-w4g128");
  run.SetAttr("seed", 7);
  run.SetAttr("lr", 0.5);
  run.SetAttr("ok", true);
  run.SetAttr("bits", std::vector<double>{4, 8});
  run.SetAttr("names", std::vector<std::string>{"a", "b"});
  Table sites;
  sites.AddColumn("name", std::vector<std::string>{"l0.q", "caf\xc3\xa9", ""});
  sites.AddColumn("iso", std::vector<double>{0.25, 0.5, 0.75});
  sites.AddColumn("layer", std::vector<int64_t>{0, 0, 1});
  run.WriteTable("sites", sites);
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i);
  run.WriteArray("x", x, Shape{2, 3, 4});
  std::vector<float> nll(100000);
  for (size_t i = 0; i < nll.size(); ++i) nll[i] = static_cast<float>(i % 97);
  run.WriteVector("nll", nll, pc::store::WriteOptions::Compressed());
  out.root().OpenGroup("runs").CreateGroup("rtn-w4");  // listed after awq-w4g128 (creation order)
  out.Commit();
}

const char* kReadScript = R"PY(
import sys
import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
assert f.attrs["perpcomp_schema"] == 1, f.attrs["perpcomp_schema"]
assert f.attrs["perpcomp_kind"] == "measure"
assert f.attrs["created_by"].startswith("perpcomp ")
assert f.attrs["created_at"].endswith("Z")
assert list(f["runs"]) == ["awq-w4g128", "rtn-w4"], list(f["runs"])
run = f["runs/awq-w4g128"]
assert run.attrs["recipe"] == "awq-w4g128"
assert run.attrs["seed"] == 7 and run.attrs["seed"].dtype == np.int64
assert run.attrs["lr"] == 0.5
assert run.attrs["ok"] is np.True_ or run.attrs["ok"] == True
assert run.attrs["ok"].dtype == np.bool_, run.attrs["ok"].dtype
assert list(run.attrs["bits"]) == [4.0, 8.0]
assert list(run.attrs["names"]) == ["a", "b"], run.attrs["names"]
assert list(run.attrs) == ["recipe", "seed", "lr", "ok", "bits", "names"], list(run.attrs)

sites = run["sites"]
columns = list(sites.attrs["columns"])
assert columns == ["name", "iso", "layer"], columns
assert sites.attrs["rows"] == 3
table = {c: (sites[c].asstr()[()] if h5py.check_string_dtype(sites[c].dtype) else sites[c][()]) for c in columns}
assert list(table["name"]) == ["l0.q", "caf\u00e9", ""], table["name"]
assert np.array_equal(table["iso"], [0.25, 0.5, 0.75]) and table["iso"].dtype == np.float64
assert np.array_equal(table["layer"], [0, 0, 1]) and table["layer"].dtype == np.int64

x = run["x"][()]
assert x.shape == (2, 3, 4) and x.dtype == np.float32, (x.shape, x.dtype)
assert np.array_equal(x.ravel(), np.arange(24, dtype=np.float32) * 0.5)
nll = run["nll"]
assert nll.compression == "gzip" and nll.shuffle and nll.chunks is not None, (nll.compression, nll.chunks)
assert np.array_equal(nll[()], (np.arange(100000) % 97).astype(np.float32))
print("ok")
)PY";

const char* kWriteScript = R"PY(
import sys
import h5py
import numpy as np

with h5py.File(sys.argv[1], "w") as f:
    f.attrs["perpcomp_schema"] = 1
    f.attrs["perpcomp_kind"] = "probe"
    f.attrs["s"] = "text \u2581"
    f.attrs["i"] = 5
    f.attrs["i32"] = np.int32(-7)
    f.attrs["d"] = 2.5
    f.attrs["b"] = True
    f.attrs["dl"] = [1.0, 2.0]
    f.attrs["sl"] = np.array(["x", "yz"], dtype=h5py.string_dtype())
    f.attrs["fixed"] = np.bytes_("fixed")
    f["fixed_strings"] = np.array([b"ab", b"c"], dtype="S3")
    f["vlen"] = np.array(["\u03b1", "b"], dtype=h5py.string_dtype())
    f["x"] = np.arange(6, dtype=np.int64).reshape(2, 3)
    f["u16"] = np.arange(3, dtype=np.uint16)
    f.create_group("zz")
    f.create_group("aa").attrs["k"] = 1
)PY";

}  // namespace

TEST_CASE("h5py reads attributes, a table and arrays written by the store", "[store][h5py]") {
  PC_SKIP_IF(!HaveH5py(), "/usr/bin/python3 has no h5py");
  std::string path = pc::test::TempDir("store-h5py") + "/example.h5";
  WriteExample(path);
  pc::test::RunResult r = RunPython(kReadScript, path);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ok\n");
}

TEST_CASE("the store reads a file written by h5py", "[store][h5py]") {
  PC_SKIP_IF(!HaveH5py(), "/usr/bin/python3 has no h5py");
  std::string path = pc::test::TempDir("store-h5py") + "/from-h5py.h5";
  pc::test::RunResult r = RunPython(kWriteScript, path);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  File f = File::OpenRead(path, "probe");
  Group root = f.root();
  CHECK(root.GetAttr<std::string>("s") == "text \xe2\x96\x81");
  CHECK(root.GetAttr<int64_t>("i") == 5);
  CHECK(root.GetAttr<int64_t>("i32") == -7);
  CHECK(root.GetAttr<double>("d") == 2.5);
  CHECK(root.GetAttr<bool>("b"));
  CHECK(root.GetAttr<std::vector<double>>("dl") == std::vector<double>{1, 2});
  CHECK(root.GetAttr<std::vector<std::string>>("sl") == std::vector<std::string>{"x", "yz"});
  CHECK(root.GetAttr<std::string>("fixed") == "fixed");
  CHECK(root.ReadVector<std::string>("fixed_strings") == std::vector<std::string>{"ab", "c"});
  CHECK(root.ReadVector<std::string>("vlen") == std::vector<std::string>{"\xce\xb1", "b"});
  auto x = root.ReadArray<int64_t>("x", {2, 3});
  CHECK(x.values == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  // h5py does not track creation order by default: name order.
  CHECK(root.List() == std::vector<std::string>{"aa", "fixed_strings", "u16", "vlen", "x", "zz"});
  CHECK(root.ListGroups() == std::vector<std::string>{"aa", "zz"});
  CHECK(root.OpenGroup("aa").AttrNames() == std::vector<std::string>{"k"});
  CHECK_THROWS_WITH(root.ReadVector<int32_t>("u16"),
                    Contains("dataset 'u16' holds uint16 values, which the store does not read"));
  CHECK_THROWS_WITH(root.ReadVector<int32_t>("x"), Contains("holds int64 values, expected int32"));
}

TEST_CASE("h5dump reads the header of a store file", "[store]") {
  PC_SKIP_IF(pc::test::Run("command -v h5dump").exit_code != 0, "h5dump is not installed (hdf5-tools)");
  std::string path = pc::test::TempDir("store-h5dump") + "/example.h5";
  WriteExample(path);
  pc::test::RunResult r = pc::test::Run("h5dump -H '" + path + "'");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("ATTRIBUTE \"perpcomp_schema\"") && Contains("GROUP \"awq-w4g128\"") &&
                        Contains("DATASET \"nll\""));
}
