// Reliability, round two (docs/RELIABILITY.md "Hostile use of the commands"): each case of the
// hostile pass is reproduced through the perpcomp binary (or the LibTorch-free function that
// holds the rule) and must end with a clear error or warning, never a hang, a crash, or data loss.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/cores.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "metrics/pairs_file.h"
#include "store/untrusted.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;
using pc::test::RunResult;

namespace {

namespace stdfs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// A copy of the fixture's model folder, to damage.
std::string CopyModel(const pc::test::SweepFixture& f, const std::string& name) {
  const std::string dir = f.dir + "/" + name;
  stdfs::copy(f.model, dir, stdfs::copy_options::recursive);
  return dir;
}

// Replaces `path` with a FIFO that nobody writes to: reading it would block forever.
void MakeFifo(const std::string& path) {
  stdfs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
}

// perpcomp under `timeout` so that a hang fails the test (exit 124) instead of stalling it.
RunResult RunBounded(const std::string& args, int seconds = 60) {
  return pc::test::Run("timeout " + std::to_string(seconds) + " " + Q(pc::test::PerpcompBin()) + " " + args);
}

std::string PairLine(const std::string& good, const std::string& bad) {
  return "{\"sentence_good\": \"" + good + "\", \"sentence_bad\": \"" + bad + "\"}\n";
}

}  // namespace

// ---- item 3: --threads is checked once and capped at the cores ----

TEST_CASE("threads option: 0 means all cores, a negative count is refused, more than the cores is capped",
          "[tools][reliability]") {
  const int cores = pc::AvailableCores();
  REQUIRE(cores >= 1);
  CHECK(pc::CheckedThreads(0) == cores);
  CHECK(pc::CheckedThreads(1) == 1);
  CHECK(pc::CheckedThreads(cores) == cores);
  CHECK(pc::CheckedThreads(100000) == cores);
  CHECK_THROWS_WITH(pc::CheckedThreads(-3), Contains("--threads: expected 0 (all cores) or a positive number of threads, got -3"));
}

TEST_CASE("threads option 100000 through the CLI: a warning and the cores, not 100000 threads", "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("threads");
  const int cores = pc::AvailableCores();
  RunResult r = RunBounded("info --model " + Q(f.model) + " --threads 100000");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("--threads 100000 exceeds the " + std::to_string(cores) +
                             " cores available to this process; using " + std::to_string(cores)));
  r = RunBounded("info --model " + Q(f.model) + " --threads -2");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--threads: expected 0 (all cores) or a positive number of threads, got -2"));
  // rank's bootstrap workers get the checked count too (the message prints it).
  r = RunBounded("rank --list-predictors --threads 100000");
  CHECK_THAT(r.err, Contains("using " + std::to_string(cores)));
}

// ---- item 5: a FIFO in place of an input is refused, not read ----

TEST_CASE("a FIFO as model.safetensors, config.json, tokenizer.json or a results file is refused at once",
          "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("fifo");
  for (const std::string name : {"model.safetensors", "config.json"}) {
    const std::string dir = CopyModel(f, "fifo-" + name);
    MakeFifo(dir + "/" + name);
    RunResult r = RunBounded("info --model " + Q(dir), 30);
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == 1);  // 124 would be the hang
    CHECK_THAT(r.err, Contains(name + "' is a FIFO, expected a regular file"));
  }
  {
    const std::string dir = CopyModel(f, "fifo-tokenizer");
    MakeFifo(dir + "/tokenizer.json");
    RunResult r = RunBounded("generate --model " + Q(dir) + " --max-new-tokens 1", 30);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("tokenizer.json' is a FIFO, expected a regular file"));
  }
  {
    const std::string fifo = f.dir + "/results.h5";
    MakeFifo(fifo);
    RunResult r = RunBounded("rank " + Q(fifo) + " --out " + Q(f.dir + "/report"), 30);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("results.h5' is a FIFO, expected a regular file"));
    const std::string text_fifo = f.dir + "/text-fifo.txt";
    MakeFifo(text_fifo);
    r = RunBounded("eval --model " + Q(f.model) + " --text " + Q(text_fifo), 30);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("text-fifo.txt' is a FIFO, expected a regular file"));
  }
  CHECK_THROWS_WITH(pc::fs::ReadFile(f.dir), Contains("' is a folder, expected a regular file"));
}

// ---- item 12: an output is never an input, --overwrite replaces only the same kind ----

TEST_CASE("an output may never be an input, and --overwrite replaces only an output of the same kind",
          "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("data-loss");
  // Every check happens before the input is read, so a placeholder results file will do.
  const std::string results = pc::test::WriteTextFile(f.dir, "r.h5", "not read: refused before");
  const std::string digest = pc::Sha256File(results);

  RunResult r = RunBounded("rank " + Q(results) + " --out " + Q(results) + " --overwrite");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--out '" + results + "' is a file, but this output is a folder; --overwrite replaces "
                             "only an output of the same kind"));
  CHECK(pc::Sha256File(results) == digest);

  // The same folder by another spelling: compress --out equal to --model.
  const std::string model = CopyModel(f, "model");
  const std::string weights = pc::Sha256File(model + "/model.safetensors");
  r = RunBounded("compress --model " + Q(model) + " --recipe rtn-w4g128 --calib " + Q(f.text) + " --out " +
                 Q(f.dir + "/./model/") + " --overwrite --threads 1");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is the input --model '" + model + "'; an output may never be an input of the same command"));
  CHECK(pc::Sha256File(model + "/model.safetensors") == weights);
  // A symlink to the model folder is the same inode.
  stdfs::create_directory_symlink(model, f.dir + "/alias");
  r = RunBounded("compress --model " + Q(model) + " --recipe rtn-w4g128 --calib " + Q(f.text) + " --out " +
                 Q(f.dir + "/alias") + " --overwrite --threads 1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("an output may never be an input"));
  // A folder holding the input.
  r = RunBounded("compress --model " + Q(model) + " --recipe rtn-w4g128 --calib " + Q(f.text) + " --out " +
                 Q(f.dir) + " --overwrite --threads 1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("contains the input --model"));
  CHECK(pc::Sha256File(model + "/model.safetensors") == weights);

  // A folder output never replaces a regular file, a file output never replaces a folder.
  const std::string plain = pc::test::WriteTextFile(f.dir, "notes.txt", "keep me");
  r = RunBounded("compress --model " + Q(model) + " --recipe rtn-w4g128 --calib " + Q(f.text) + " --out " + Q(plain) +
                 " --overwrite --threads 1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is a file, but this output is a folder"));
  CHECK(pc::fs::ReadFile(plain) == "keep me");
  r = RunBounded("merge " + Q(results) + " --out " + Q(model) + " --overwrite");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is a folder, but this output is a file"));
  CHECK(pc::Sha256File(model + "/model.safetensors") == weights);
  // merge into one of its inputs.
  r = RunBounded("merge " + Q(results) + " " + Q(plain) + " --out " + Q(results) + " --overwrite");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is the input results file"));
  CHECK(pc::Sha256File(results) == digest);
  // eval --out equal to its --text.
  r = RunBounded("eval --model " + Q(model) + " --text " + Q(f.text) + " --out " + Q(f.text) + " --overwrite");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is the input --text"));
}

// ---- items 8 and 4, and the same pair file twice ----

TEST_CASE("minimal pairs: empty sentences, sentences longer than the context, a file given twice",
          "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("pairs");
  CHECK_THROWS_WITH(pc::ParseMinimalPairs(PairLine("The dog runs.", "The dog run.") + PairLine("", "The dogs runs."),
                                          "p.jsonl"),
                    Contains("p.jsonl line 2: 'sentence_good' is empty; a minimal pair needs two non-empty sentences"));
  CHECK_THROWS_WITH(pc::ParseMinimalPairs(PairLine("The dog runs.", "  "), "p.jsonl"),
                    Contains("p.jsonl line 1: 'sentence_bad' is empty"));

  const std::string empty = pc::test::WriteTextFile(f.dir, "empty.jsonl", PairLine("The dog runs.", "The dog run.") +
                                                                                PairLine("", "The dog run."));
  RunResult r = RunBounded("eval --model " + Q(f.model) + " --pairs " + Q(empty) + " --threads 1");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("empty.jsonl line 2: 'sentence_good' is empty"));

  // stories260K's context is 512 tokens (the fallback model's 64): 3000 words exceed both.
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "dog ";
  const std::string long_pairs = pc::test::WriteTextFile(
      f.dir, "long.jsonl", PairLine("The dog runs.", "The dog run.") + PairLine("The " + words + "runs.", "The dog run."));
  r = RunBounded("eval --model " + Q(f.model) + " --pairs " + Q(long_pairs) + " --threads 1");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("long line 2: sentence_good gives ") &&
                        Contains("tokens with the start token, more than the model's context of"));

  r = RunBounded("eval --model " + Q(f.model) + " --pairs " + Q(f.pairs) + " --pairs " + Q(f.dir + "/./pairs.jsonl") +
                 " --threads 1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is given twice") && Contains("its pairs would count twice"));
  CHECK_THROWS_WITH(pc::ResolvePairSpecs({f.pairs, f.dir}, ""), Contains("is given twice"));
}

TEST_CASE("calib-seed option below -1 is refused", "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("seed");
  RunResult r = RunBounded("compress --model " + Q(f.model) + " --recipe rtn-w4g128 --calib " + Q(f.text) +
                           " --calib-seed -2 --out " + Q(f.dir + "/out") + " --threads 1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--calib-seed must be a seed >= 0 (or -1: the recipe's default), got -2"));
  CHECK_FALSE(pc::fs::Exists(f.dir + "/out"));
}

// ---- item 2: a malformed .h5 that crashes libhdf5 is contained ----

TEST_CASE("the hostile HDF5 corpus: rank and merge end with 'is damaged', never a crash", "[tools][reliability]") {
  const std::string corpus = pc::test::SourceDir() + "/tests/fuzz/libhdf5-crashes";
  const std::string dir = pc::test::TempDir("h5-corpus");
  int files = 0;
  for (const auto& e : stdfs::directory_iterator(corpus)) {
    if (e.path().extension() != ".h5") continue;
    ++files;
    const std::string path = e.path().string();
    for (const std::string verb : {"rank", "merge"}) {
      RunResult r = RunBounded(verb + " " + Q(path) + " --out " + Q(dir + "/" + verb + "-" + std::to_string(files)), 200);
      INFO(verb << " " << path << ": " << r.err);
      CHECK(r.exit_code == 1);  // 139 was SIGSEGV inside libhdf5 (H5Literate)
      CHECK_THAT(r.err, Contains(e.path().filename().string()));
    }
  }
  CHECK(files == 2);
  // The input that crashes libhdf5 itself is a 'measure' file: appending a run to it lists its runs
  // (H5Literate), which segfaulted (exit 139); now the child's signal becomes the message.
  const std::string segv = corpus + "/h5literate-segv.h5";
  auto f = pc::test::MakeSweepFixture("h5-corpus-append");
  const std::string copy = f.dir + "/seg.h5";
  stdfs::copy_file(segv, copy);
  const std::string digest = pc::Sha256File(copy);
  RunResult r = RunBounded("measure --reference " + Q(f.model) + " --compressed " + Q(f.model) + " --text " + Q(f.text) +
                           " --seq-len 32 --max-windows 2 --no-cache --threads 1 --append --out " + Q(copy), 200);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("the file '" + copy + "' is damaged: reading it crashes libhdf5 (Segmentation fault)"));
  CHECK(pc::Sha256File(copy) == digest);
  CHECK(pc::test::Temporaries(f.dir).empty());
  CHECK_THROWS_WITH(pc::store::CheckNotDamaged(segv),
                    Contains("the file '" + segv + "' is damaged: reading it crashes libhdf5 (Segmentation fault)"));
}

// ---- item 7: the reference cache is keyed by content and every window is checksummed ----

TEST_CASE("reference cache: replaced weights with a restored mtime miss, a damaged logits.bin is rebuilt",
          "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("cache-content");
  const std::string ref = CopyModel(f, "ref");
  const std::string model = CopyModel(f, "model");
  const std::string eval = "eval --model " + Q(model) + " --reference " + Q(ref) + " --text " + Q(f.text) +
                           " --seq-len 32 --max-windows 6 --threads 1 --json --cache " + Q(f.cache);
  auto kl = [](const RunResult& r) {
    const size_t at = r.out.find("\"kl_mean\":");
    REQUIRE(at != std::string::npos);
    return std::stod(r.out.substr(at + 10));
  };
  RunResult first = RunBounded(eval);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.err, Contains("reference cache miss"));
  CHECK(std::fabs(kl(first)) < 1e-9);  // the same weights

  // Same-size replaced weights with the old mtime: hashed again (ctime, sampled bytes), a miss.
  const std::string weights = ref + "/model.safetensors";
  struct stat before {};
  REQUIRE(::stat(weights.c_str(), &before) == 0);
  {
    std::fstream io(weights, std::ios::in | std::ios::out | std::ios::binary);
    const int64_t size = pc::fs::FileSize(weights);
    io.seekp(size - 4096);
    const float big = 0.75f;
    for (int i = 0; i < 1024; ++i) io.write(reinterpret_cast<const char*>(&big), 4);
  }
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, weights.c_str(), times, 0) == 0);
  RunResult replaced = RunBounded(eval);
  INFO(replaced.err);
  REQUIRE(replaced.exit_code == 0);
  CHECK_THAT(replaced.err, Contains("reference cache miss"));
  RunResult live = RunBounded("eval --model " + Q(model) + " --reference " + Q(ref) + " --text " + Q(f.text) +
                              " --seq-len 32 --max-windows 6 --threads 1 --json --no-cache");
  REQUIRE(live.exit_code == 0);
  CHECK(kl(replaced) == kl(live));
  CHECK(kl(replaced) > 0);

  // A damaged logits.bin: found by its checksums, rebuilt, the same numbers as without the cache.
  std::string logits;  // the entry of the replaced reference: the newest
  for (const auto& e : stdfs::recursive_directory_iterator(f.cache)) {
    if (e.path().filename() != "logits.bin") continue;
    if (logits.empty() || stdfs::last_write_time(e.path()) > stdfs::last_write_time(logits)) logits = e.path().string();
  }
  REQUIRE(!logits.empty());
  {
    std::fstream io(logits, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(pc::fs::FileSize(logits) / 2);
    const float wrong = 3.0f;
    io.write(reinterpret_cast<const char*>(&wrong), 4);
  }
  RunResult damaged = RunBounded(eval);
  INFO(damaged.err);
  REQUIRE(damaged.exit_code == 0);
  CHECK_THAT(damaged.err, Contains("logits.bin' is damaged (window") && Contains("fails its checksum); rebuilding it"));
  CHECK(kl(damaged) == kl(live));
}

// ---- item 11: a forward that overflows stops compress at the first block, naming it ----

TEST_CASE("compress stops at the first block whose outputs are not finite", "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("overflow");
  const std::string model = CopyModel(f, "overflow");
  // Block 0's gate and up projections get weights ±1e20: their product overflows float32, while
  // the weights themselves stay finite (the loader accepts them) and quantize to finite values.
  const std::string path = model + "/model.safetensors";
  std::string bytes = pc::fs::ReadFile(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[i]);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  int patched = 0;
  for (const char* name : {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"}) {
    REQUIRE(header.contains(name));
    REQUIRE(header[name]["dtype"] == "F32");
    const uint64_t begin = header[name]["data_offsets"][0], end = header[name]["data_offsets"][1];
    for (uint64_t at = begin, k = 0; at < end; at += 4, ++k) {
      const float v = (k % 2 == 0) ? 1e20f : -1e20f;
      std::memcpy(&bytes[8 + n + at], &v, 4);
    }
    ++patched;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  REQUIRE(patched == 2);
  const std::string recipe = pc::test::WriteTextFile(
      f.dir, "rtn32.yaml", "name: rtn32\nmethod: rtn\nparams:\n  bits: 4\n  group_size: 32\n");
  RunResult r = RunBounded("compress --model " + Q(model) + " --recipe " + Q(recipe) + " --calib " + Q(f.text) +
                           " --calib-samples 4 --calib-seq-len 32 --threads 1 --out " + Q(f.dir + "/out"));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("the outputs of block 0 ('model.layers.0') are not finite on the calibration windows"));
  CHECK_FALSE(pc::fs::Exists(f.dir + "/out"));
}

// ---- "accepted but should not be" ----

TEST_CASE("an N:M pattern wider than a layer, config.json bias flags against the tensors, another tokenizer, "
          "generate past the context", "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("accepted");
  const std::string recipe = pc::test::WriteTextFile(
      f.dir, "wide.yaml", "name: wide\nmethod: magnitude\nparams:\n  sparsity: 0.5\n  pattern: \"4096:8192\"\n");
  RunResult r = RunBounded("compress --model " + Q(f.model) + " --recipe " + Q(recipe) + " --dry-run");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("pattern '4096:8192' prunes windows of 8192 consecutive input weights, but '") &&
                        Contains("it would prune nothing"));

  const std::string biased = CopyModel(f, "biased");
  nlohmann::json config = nlohmann::json::parse(pc::fs::ReadFile(biased + "/config.json"));
  config["attention_bias"] = true;  // but the checkpoint has no q/k/v/o biases
  std::ofstream(biased + "/config.json", std::ios::trunc) << config.dump(2);
  r = RunBounded("info --model " + Q(biased));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("config.json says attention_bias true but the checkpoint has no '") &&
                        Contains("q_proj.bias'"));

  // A reference whose tokenizer gives other ids (the vocabulary rotated), the same vocabulary size.
  const std::string other = CopyModel(f, "other-tokenizer");
  nlohmann::json tok = nlohmann::json::parse(pc::fs::ReadFile(other + "/tokenizer.json"));
  REQUIRE(tok["model"]["vocab"].is_object());
  std::vector<std::string> names;
  std::vector<int64_t> ids;
  for (auto& [k, v] : tok["model"]["vocab"].items()) {
    if (k.size() > 1 && k[0] == '<') continue;  // specials and byte tokens keep their ids
    names.push_back(k);
    ids.push_back(v.get<int64_t>());
  }
  REQUIRE(names.size() > 2);
  for (size_t i = 0; i < names.size(); ++i) tok["model"]["vocab"][names[i]] = ids[(i + 1) % ids.size()];
  std::ofstream(other + "/tokenizer.json", std::ios::trunc) << tok.dump();
  r = RunBounded("eval --model " + Q(f.model) + " --reference " + Q(other) + " --text " + Q(f.text) +
                 " --seq-len 32 --max-windows 2 --threads 1 --no-cache");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("have different tokenizers") && Contains("would compare different tokens"));

  // generate past a RoPE model's context: a warning.
  const nlohmann::json model_config = nlohmann::json::parse(pc::fs::ReadFile(f.model + "/config.json"));
  const int64_t context = model_config["max_position_embeddings"];
  r = RunBounded("generate --model " + Q(f.model) + " --temperature 0 --threads 1 --max-new-tokens " +
                 std::to_string(context + 8));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("run past the model's context of " + std::to_string(context)));
}

// ---- item 6: an address-space limit too small for OpenBLAS's buffers is an error, not a spin ----

TEST_CASE("under ulimit -v, compress ends with an out-of-memory error instead of spinning in OpenBLAS",
          "[tools][reliability]") {
  auto f = pc::test::MakeSweepFixture("ulimit-v");
  // 1 GB: the shared libraries and OpenBLAS's own start take about 700 MB of it, so the buffers of
  // 2 more threads do not fit; OpenBLAS would retry their allocation forever (the timeout's 124).
  // (At 700 MB OpenBLAS already spins in its library constructor, before main: docs/RELIABILITY.md.)
  RunResult r = pc::test::Run("ulimit -v 1000000; exec timeout 120 " + Q(pc::test::PerpcompBin()) + " compress --model " +
                              Q(f.model) + " --recipe rtn-w4g128 --calib " + Q(f.text) + " --threads 2 --out " +
                              Q(f.dir + "/out"));
  INFO(r.err);
  PC_SKIP_IF(r.err.find("error while loading shared libraries") != std::string::npos,
             "perpcomp's libraries alone exceed 1 GB of address space here");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("out of memory at startup: the address-space limit (ulimit -v) of") &&
                        Contains("OpenBLAS takes 128 MiB per thread"));
  CHECK_FALSE(pc::fs::Exists(f.dir + "/out"));
}

TEST_CASE("under any ulimit -v from 700 MB to 1.4 GB, perpcomp starts or ends at once with an error, never spins",
          "[tools][reliability]") {
  // Below about 900 MB OpenBLAS's library constructor (one 128 MiB buffer per core, before main)
  // and LibTorch's thread pools (pthreadpool_create waits forever on a thread it could not
  // create) used to spin or abort; the check in the executable's preinit array now refuses first
  // (core/threads.cc). Above it PrepareBlas's check takes over. Every limit gives exit 0 or 1.
  int refused_before_main = 0;
  for (long kb = 700000; kb <= 1400000; kb += 50000) {
    RunResult r = pc::test::Run("ulimit -v " + std::to_string(kb) + "; exec timeout 60 " + Q(pc::test::PerpcompBin()) +
                                " version");
    INFO("ulimit -v " << kb << ": " << r.err);
    if (r.err.find("error while loading shared libraries") != std::string::npos) continue;  // the loader's own error
    CHECK((r.exit_code == 0 || r.exit_code == 1));
    if (r.exit_code == 1) {
      CHECK_THAT(r.err, Contains("out of memory at startup: the address-space limit (ulimit -v) of"));
      if (r.err.find("per core when it loads") != std::string::npos) ++refused_before_main;
    }
  }
  CHECK(refused_before_main > 0);  // the preinit check ran at the low limits
}
