// store: opening checks, staged (crash-safe) writing, write errors, gathering runs.
#include "store/file.h"

#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::store::File;
using pc::store::Group;
using pc::store::StagedWriter;
using pc::store::Table;

namespace {

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// Files in `dir` (names only), sorted.
std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A committed measure file with values {1, 2, 3}.
void WriteCommitted(const std::string& path) {
  StagedWriter w = File::CreateStaged(path, "measure", true);
  w.root().WriteVector("values", std::vector<double>{1, 2, 3});
  w.root().SetAttr("generation", 1);
  w.Commit();
}

void CheckCommittedIntact(const std::string& path) {
  File f = File::OpenRead(path, "measure");
  CHECK(f.root().ReadVector<double>("values") == std::vector<double>{1, 2, 3});
  CHECK(f.root().GetAttr<int64_t>("generation") == 1);
}

// Lowers this process's file-size limit (SIGXFSZ ignored, so write() fails with EFBIG)
// until the end of the scope. Each TEST_CASE runs in its own process under CTest.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_ = SIG_DFL;
};

}  // namespace

TEST_CASE("opening checks: missing, folder, not HDF5, not perpcomp, newer schema, wrong kind", "[store]") {
  std::string dir = pc::test::TempDir("store-open");
  CHECK_THROWS_WITH(File::OpenRead(dir + "/missing.h5"), Contains("'" + dir + "/missing.h5' does not exist"));
  CHECK_THROWS_WITH(File::OpenRead(dir), Contains("'" + dir + "' is a folder, expected an HDF5 file"));
  WriteBytes(dir + "/x.txt", "hello, not hdf5\n");
  CHECK_THROWS_WITH(File::OpenRead(dir + "/x.txt"), Contains("'" + dir + "/x.txt' is not an HDF5 file"));
  WriteBytes(dir + "/empty.h5", "");
  CHECK_THROWS_WITH(File::OpenRead(dir + "/empty.h5"), Contains("is not an HDF5 file"));

  // An HDF5 file made by another tool (raw C API): no perpcomp_schema.
  std::string foreign = dir + "/foreign.h5";
  hid_t fid = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(fid >= 0);
  hid_t gid = H5Gcreate2(fid, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(gid);
  H5Fclose(fid);
  CHECK_THROWS_WITH(File::OpenRead(foreign),
                    Contains("'" + foreign + "' is not a perpcomp results file (no perpcomp_schema attribute)"));

  std::string path = dir + "/m.h5";
  File::Create(path, "measure").Close();
  CHECK(File::OpenRead(path).kind() == "measure");
  CHECK(File::OpenRead(path, "measure").schema() == pc::store::kSchemaVersion);
  CHECK_THROWS_WITH(File::OpenRead(path, "sweep-results"),
                    Contains("'" + path + "': expected a 'sweep-results' file, got 'measure'"));

  // A newer schema.
  {
    File f = File::OpenReadWrite(path, "measure");
    f.root().SetAttr("perpcomp_schema", 2);
    f.root().SetAttr("created_by", "perpcomp 9.0.0");
    f.Close();
  }
  CHECK_THROWS_WITH(
      File::OpenRead(path, "measure"),
      Contains("'" + path + "' was written by a newer perpcomp: schema 2, this build reads up to 1; hint:") &&
          Contains("'perpcomp 9.0.0'"));
  // A schema of the wrong type or value.
  std::string odd = dir + "/odd.h5";
  File::Create(odd, "measure").Close();
  File::OpenReadWrite(odd).root().SetAttr("perpcomp_schema", "1");
  CHECK_THROWS_WITH(File::OpenRead(odd), Contains(":/: attribute 'perpcomp_schema' holds string, expected int64"));
  File::Create(odd, "measure", true).root().SetAttr("perpcomp_schema", 0);
  CHECK_THROWS_WITH(File::OpenRead(odd), Contains("has an invalid perpcomp_schema 0"));

  CHECK_THROWS_WITH(File::Create(dir + "/k.h5", "Bad Kind"), Contains("invalid perpcomp file kind 'Bad Kind'"));
  CHECK_FALSE(pc::fs::Exists(dir + "/k.h5"));
  CHECK_THROWS_WITH(File::Create(path, "measure"), Contains("already exists; pass --overwrite"));
  File::Create(path, "eval", true).Close();
  CHECK(File::OpenRead(path).kind() == "eval");
}

TEST_CASE("read-only and closed files refuse use, naming the file", "[store]") {
  std::string path = pc::test::TempDir("store-ro") + "/r.h5";
  File::Create(path, "eval").Close();
  File f = File::OpenRead(path, "eval");
  CHECK_FALSE(f.writable());
  CHECK_THROWS_WITH(f.root().SetAttr("x", 1),
                    Contains(path + ":/: cannot write attribute 'x': the file is open for reading only"));
  CHECK_THROWS_WITH(f.root().CreateGroup("g"), Contains("the file is open for reading only"));
  Group root = f.root();
  f.Close();
  CHECK_FALSE(f.is_open());
  CHECK_THROWS_WITH(root.GetAttr<std::string>("perpcomp_kind"),
                    Contains(path + ":/: cannot read attribute 'perpcomp_kind': the file was closed"));
}

TEST_CASE("unwritable output paths fail before any work, naming the path", "[store]") {
  std::string dir = pc::test::TempDir("store-unwritable");
  WriteBytes(dir + "/afile", "x");
  CHECK_THROWS_WITH(File::CreateStaged(dir + "/afile/out.h5", "measure", false),
                    Contains("--out '" + dir + "/afile/out.h5'") && Contains("is not a folder"));
  CHECK_THROWS_WITH(File::Create("/proc/perpcomp-store-test.h5", "measure"), Contains("/proc/perpcomp-store-test.h5"));
  if (geteuid() != 0) {  // root ignores folder permissions
    std::string ro = dir + "/ro";
    pc::fs::MakeDirs(ro);
    chmod(ro.c_str(), 0555);
    CHECK_THROWS_WITH(File::CreateStaged(ro + "/out.h5", "measure", false), Contains("is not writable"));
    chmod(ro.c_str(), 0755);
  }
}

TEST_CASE("staged writing: nothing under the final name until Commit, overwrite semantics", "[store]") {
  std::string dir = pc::test::TempDir("store-staged");
  std::string final_path = dir + "/out.h5";
  {
    StagedWriter w = File::CreateStaged(final_path, "measure", false);
    w.root().SetAttr("v", 1);
    CHECK(pc::fs::Exists(w.temp_path()));
    CHECK(pc::StartsWith(w.temp_path(), final_path + ".tmp-"));
    CHECK_FALSE(pc::fs::Exists(final_path));
  }  // not committed
  CHECK(FilesIn(dir).empty());

  {
    StagedWriter w = File::CreateStaged(final_path, "measure", false);
    Group g = w.root().CreateGroup("run");
    g.SetAttr("v", 1);
    w.Commit();
    CHECK(w.committed());
    CHECK_THROWS_WITH(g.SetAttr("v", 2), Contains("the file was closed"));
    CHECK_THROWS_WITH(w.Commit(), Contains("was already committed"));
  }
  CHECK(FilesIn(dir) == std::vector<std::string>{"out.h5"});
  CHECK(File::OpenRead(final_path, "measure").root().OpenGroup("run").GetAttr<int64_t>("v") == 1);

  CHECK_THROWS_WITH(File::CreateStaged(final_path, "measure", false),
                    Contains("--out '" + final_path + "' already exists; pass --overwrite to replace it"));
  CHECK_THROWS_WITH(File::CreateStaged(final_path, "measure", false, "--results"), Contains("--results '"));

  // With overwrite: the old file stays until Commit.
  {
    StagedWriter w = File::CreateStaged(final_path, "measure", true);
    w.root().CreateGroup("run").SetAttr("v", 2);
    CHECK(File::OpenRead(final_path).root().OpenGroup("run").GetAttr<int64_t>("v") == 1);
    w.Commit();
  }
  CHECK(File::OpenRead(final_path).root().OpenGroup("run").GetAttr<int64_t>("v") == 2);

  // An error while writing: the writer is destroyed, the final file is untouched.
  auto failing = [&] {
    StagedWriter w = File::CreateStaged(final_path, "measure", true);
    w.root().CreateGroup("run").SetAttr("v", 3);
    w.root().ReadVector<double>("missing");  // throws
    w.Commit();
  };
  CHECK_THROWS_WITH(failing(), Contains("no dataset 'missing'"));
  CHECK(File::OpenRead(final_path).root().OpenGroup("run").GetAttr<int64_t>("v") == 2);
  CHECK(FilesIn(dir) == std::vector<std::string>{"out.h5"});

  // Moving a writer keeps one owner.
  StagedWriter a = File::CreateStaged(dir + "/moved.h5", "eval", false);
  StagedWriter b = std::move(a);
  b.root().SetAttr("x", 1);
  b.Commit();
  CHECK(File::OpenRead(dir + "/moved.h5", "eval").root().GetAttr<int64_t>("x") == 1);
}

TEST_CASE("a writer killed before Commit leaves the committed file intact", "[store]") {
  std::string dir = pc::test::TempDir("store-crash");
  std::string final_path = dir + "/results.h5";
  WriteCommitted(final_path);
  for (bool existing : {true, false}) {
    std::string target = existing ? final_path : dir + "/fresh.h5";
    std::fflush(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      [&]() noexcept {  // an exception here aborts (SIGABRT), which the parent reports
        StagedWriter w = File::CreateStaged(target, "measure", true);
        w.root().WriteVector("values", std::vector<double>(200000, 9.0));
        w.root().SetAttr("generation", 2);
        w.file().Flush();
        kill(getpid(), SIGKILL);
      }();
      _exit(1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    // The half-written file is left under its temporary name only.
    std::string leftover = pc::fs::Basename(target) + ".tmp-" + std::to_string(pid) + "-";
    std::vector<std::string> files = FilesIn(dir);
    CHECK(std::count_if(files.begin(), files.end(),
                        [&](const std::string& n) { return pc::StartsWith(n, leftover); }) == 1);
    for (const std::string& n : files)
      if (pc::StartsWith(n, leftover)) std::remove((dir + "/" + n).c_str());
  }
  CheckCommittedIntact(final_path);
  CHECK_FALSE(pc::fs::Exists(dir + "/fresh.h5"));
}

TEST_CASE("write errors (file size limit) surface as pc::Error, the committed file stays intact", "[store]") {
  std::string dir = pc::test::TempDir("store-full");
  std::string final_path = dir + "/results.h5";
  WriteCommitted(final_path);
  // A staged file is built in memory and written by perpcomp at Commit (libhdf5 never meets the
  // failing write, whose error paths crash it), so both fail there, naming the final path.
  SECTION("a large dataset fails at Commit") {
    FileSizeLimit limit(256 << 10);
    auto write = [&] {
      StagedWriter w = File::CreateStaged(final_path, "measure", true);
      w.root().WriteVector("values", std::vector<double>(1 << 20, 9.0));
      w.Commit();
    };
    CHECK_THROWS_WITH(write(), Contains("file size limit reached writing '" + final_path + "'") &&
                                   Contains("File too large") && Contains("the temporary file was removed"));
  }
  SECTION("many small groups fail at Commit") {
    FileSizeLimit limit(2 << 10);
    StagedWriter w = File::CreateStaged(final_path, "measure", true);
    for (int i = 0; i < 20; ++i) {
      Group g = w.root().CreateGroup("run" + std::to_string(i));
      g.SetAttr("recipe", std::string(100, 'x'));
      g.SetAttr("values", std::vector<double>(40, 1.0 * i));
    }
    CHECK_THROWS_WITH(w.Commit(), Contains("file size limit reached writing '" + final_path + "'") &&
                                      Contains("File too large") && Contains("nothing was changed at '" + final_path + "'"));
    CHECK_FALSE(w.committed());
  }
  CheckCommittedIntact(final_path);
  CHECK(FilesIn(dir) == std::vector<std::string>{"results.h5"});
}

TEST_CASE("CopyGroup gathers complete run files into a new staged results file", "[store]") {
  std::string dir = pc::test::TempDir("store-gather");
  auto write_run = [&](const std::string& name, double iso) {
    StagedWriter w = File::CreateStaged(dir + "/" + name + ".h5", "sweep-run", false);
    Group run = w.root().CreateGroup("run");
    run.SetAttr("recipe", name);
    run.CreateGroup("detail").WriteVector("per_token", std::vector<float>(1000, static_cast<float>(iso)));
    run.WriteTable("sites", Table()
                                .AddColumn("name", std::vector<std::string>{"a", "b"})
                                .AddColumn("iso", std::vector<double>{iso, iso + 1}));
    w.Commit();
  };
  write_run("rtn", 0.5);
  write_run("awq", 0.25);
  write_run("gptq", 0.125);

  auto gather = [&](const std::vector<std::string>& names, bool overwrite) {
    StagedWriter out = File::CreateStaged(dir + "/results.h5", "sweep-results", overwrite);
    Group runs = out.root().CreateGroup("runs");
    for (const std::string& name : names) {
      File in = File::OpenRead(dir + "/" + name + ".h5", "sweep-run");
      pc::store::CopyGroup(in.root(), "run", runs, name);
    }
    out.Commit();
  };
  gather({"rtn", "awq"}, false);
  gather({"rtn", "awq", "gptq"}, true);  // rebuilt from complete run files, never edited in place

  File f = File::OpenRead(dir + "/results.h5", "sweep-results");
  Group runs = f.root().OpenGroup("runs");
  CHECK(runs.List() == std::vector<std::string>{"rtn", "awq", "gptq"});
  CHECK(runs.OpenGroup("awq").GetAttr<std::string>("recipe") == "awq");
  CHECK(runs.OpenGroup("awq").ReadTable("sites").Get<double>("iso") == std::vector<double>{0.25, 1.25});
  CHECK(runs.ReadVector<float>("gptq/detail/per_token") == std::vector<float>(1000, 0.125f));
  CHECK(runs.OpenGroup("rtn").List() == std::vector<std::string>{"detail", "sites"});

  File in = File::OpenRead(dir + "/rtn.h5");
  StagedWriter out = File::CreateStaged(dir + "/other.h5", "sweep-results", false);
  pc::store::CopyGroup(in.root(), "run", out.root(), "rtn");
  CHECK_THROWS_WITH(pc::store::CopyGroup(in.root(), "run", out.root(), "rtn"),
                    Contains(dir + "/other.h5:/: cannot copy 'run' in: 'rtn' already exists"));
  CHECK_THROWS_WITH(pc::store::CopyGroup(in.root(), "nope", out.root(), "x"),
                    Contains(dir + "/rtn.h5:/: cannot copy 'nope': no such group (groups: run)"));
  CHECK_THROWS_WITH(pc::store::CopyGroup(out.root(), "rtn", in.root(), "x"),
                    Contains("the file is open for reading only"));
}

TEST_CASE("no HDF5 object stays open after its call: files, groups, datasets, attributes", "[store]") {
  std::string dir = pc::test::TempDir("store-ids");
  File::Create(dir + "/warm.h5", "probe").Close();
  // Open objects of every kind in every file (H5Inmembers refuses library id types, so
  // transient types, spaces and property lists rely on RAII by construction: detail::Hid).
  const unsigned kinds[] = {H5F_OBJ_FILE, H5F_OBJ_GROUP, H5F_OBJ_DATASET, H5F_OBJ_ATTR, H5F_OBJ_DATATYPE};
  auto counts = [&] {
    std::vector<ssize_t> n;
    for (unsigned k : kinds) n.push_back(H5Fget_obj_count(H5F_OBJ_ALL, k));
    return n;
  };
  // Not all zero when an earlier test in this process had a close fail on a write error
  // (HDF5 keeps such a file); CTest runs each test case alone.
  std::vector<ssize_t> before = counts();
  {
    StagedWriter w = File::CreateStaged(dir + "/a.h5", "probe", false);
    Group g = w.root().CreateGroup("g");
    g.SetAttr("s", "x");
    g.SetAttr("v", std::vector<std::string>{"a", "b"});
    g.SetAttr("b", true);
    g.WriteVector("d", std::vector<double>(100000, 1.0), pc::store::WriteOptions::Compressed());
    g.WriteVector("s", std::vector<std::string>{"a"});
    g.WriteTable("t", Table().AddColumn("x", std::vector<int32_t>{1, 2}));
    CHECK_THROWS(g.WriteVector("d", std::vector<double>{1}));
    CHECK_THROWS(g.GetAttr<int64_t>("s"));
    w.Commit();
    File f = File::OpenRead(dir + "/a.h5", "probe");
    Group r = f.root().OpenGroup("g");
    CHECK(r.GetAttr<std::vector<std::string>>("v").size() == 2);
    CHECK(r.ReadVector<double>("d").size() == 100000);
    CHECK(r.ReadVector<std::string>("s").size() == 1);
    CHECK(r.ReadTable("t").rows() == 2);
    CHECK(r.AttrNames().size() == 3);
    CHECK(r.ListGroups().size() == 1);
    CHECK_THROWS(r.ReadVector<float>("d"));
    CHECK_THROWS(File::OpenRead(dir + "/a.h5", "eval"));
    StagedWriter gather = File::CreateStaged(dir + "/b.h5", "probe", false);
    pc::store::CopyGroup(f.root(), "g", gather.root(), "copy");
    CHECK(counts()[0] == before[0] + 2);  // the two open files are counted
  }                                       // f closed, gather discarded
  CHECK(counts() == before);
}
