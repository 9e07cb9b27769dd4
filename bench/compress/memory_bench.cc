// bench/compress/memory_bench.cc — the peak-memory estimate of --max-memory
// (pipeline/memory_estimate.h) against the measured peak RSS of `perpcomp compress`, `eval` and
// `measure` run as child processes (wait4 rusage ru_maxrss), on random Pythia-shaped models
// streamed from disk. Prints a table (estimate, measured, ratio); see docs/PERFORMANCE.md
// "Memory estimate". The estimate must be an upper bound within about 1.5x.
//
//   build/bench/compress/memory_bench [--perpcomp BIN] [--layers 4] [--methods rtn,awq,gptq,wanda]
//       [--windows 16,32] [--seq 512] [--models 160m,70m] [--threads 1] [--dir D] [--no-eval]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/model/bench_util.h"
#include "core/blas.h"
#include "core/fs.h"
#include "core/strings.h"
#include "model/config.h"
#include "pipeline/compress_run.h"
#include "pipeline/memory_estimate.h"

namespace {

struct Shape {
  std::string name;
  int64_t hidden, heads;
};

// Runs argv (stdout/stderr to `log`), returns (exit status, peak RSS in bytes).
std::pair<int, double> RunMeasured(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ru.ru_maxrss * 1024.0};
}

// Long lines of simple words, no blank lines: one document longer than any window (random
// windowing) and lines shorter than a window (AWQ windowing).
std::string Text(size_t bytes) {
  static const char* words[] = {"the", "little", "dog", "saw", "a", "big", "red", "ball", "in", "park", "and",
                                "her", "friend", "liked", "green", "boxes", "after", "lunch", "by", "river"};
  std::string t;
  uint64_t s = 7;
  while (t.size() < bytes) {
    for (int w = 0; w < 24; ++w) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      t += words[(s >> 33) % 20];
      t += ' ';
    }
    t += ".\n";
  }
  return t;
}

std::string Arg(int argc, char** argv, const char* name, const std::string& def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  namespace r = pc::pipeline;
  const std::string bin = Arg(argc, argv, "--perpcomp", PC_PERPCOMP_BIN);
  const int64_t layers = std::atoll(Arg(argc, argv, "--layers", "4").c_str());
  const std::string threads = Arg(argc, argv, "--threads", "1");
  const int64_t seq = std::atoll(Arg(argc, argv, "--seq", "512").c_str());
  const std::vector<std::string> methods = pc::Split(Arg(argc, argv, "--methods", "rtn,awq,gptq,wanda"), ',');
  const std::vector<std::string> windows = pc::Split(Arg(argc, argv, "--windows", "16,32"), ',');
  const std::vector<std::string> models = pc::Split(Arg(argc, argv, "--models", "160m,70m"), ',');
  bool eval = true;
  for (int i = 1; i < argc; ++i) eval = eval && std::strcmp(argv[i], "--no-eval") != 0;
  const std::string dir = Arg(argc, argv, "--dir", "/tmp/perpcomp-memory-bench");
  pc::fs::MakeDirs(dir);

  // A byte-level-ish tokenizer: a tiny model trained for one step gives tokenizer.json (300 ids).
  const std::string text = pc::fs::Join(dir, "text.txt");
  pc::fs::WriteFileAtomic(text, Text(400 << 10));
  const std::string tok = pc::fs::Join(dir, "tok");
  if (!pc::fs::Exists(pc::fs::Join(tok, "tokenizer.json"))) {
    auto [rc, rss] = RunMeasured({bin, "train", "--threads", "1", "--arch", "llama", "--layers", "1", "--hidden", "16",
                                  "--heads", "1", "--context", "32", "--steps", "1", "--warmup", "1", "--batch", "1",
                                  "--vocab-size", "300", "--text", text, "--out", tok, "-q"},
                                 pc::fs::Join(dir, "train.log"));
    if (rc != 0) {
      std::fprintf(stderr, "training the tokenizer failed (see %s/train.log)\n", dir.c_str());
      return 1;
    }
  }

  std::printf("| command | model | method | N x L | estimate | measured peak RSS | estimate / measured |\n");
  std::printf("|---|---|---|---|---:|---:|---:|\n");
  double worst_low = 1e9, worst_high = 0;
  auto row = [&](const std::string& cmd, const std::string& model, const std::string& method, const std::string& nl,
                 const r::MemoryEstimate& e, int rc, double measured) {
    const double ratio = e.Total() / measured;
    worst_low = std::min(worst_low, ratio);
    worst_high = std::max(worst_high, ratio);
    std::printf("| %s | %s | %s | %s | %s | %s | %.2f%s |\n", cmd.c_str(), model.c_str(), method.c_str(), nl.c_str(),
                pc::HumanBytes(e.Total()).c_str(), pc::HumanBytes(measured).c_str(), ratio,
                rc != 0 ? " (failed)" : "");
    std::fflush(stdout);
  };

  for (const std::string& m : models) {
    const Shape s = m == "70m" ? Shape{"pythia-70m-shaped", 512, 8} : Shape{"pythia-160m-shaped", 768, 12};
    const std::string mdir = pc::fs::Join(dir, s.name + "-" + std::to_string(layers));
    if (!pc::fs::Exists(pc::fs::Join(mdir, "config.json"))) {
      pc::bench::WriteRandomPythia(mdir, s.hidden, layers, s.heads, 50304);
      for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
        const std::string src = pc::fs::Join(tok, f);
        if (pc::fs::Exists(src)) pc::fs::WriteFileAtomic(pc::fs::Join(mdir, f), pc::fs::ReadFile(src));
      }
    }
    const pc::ModelConfig config = pc::LoadModelConfig(mdir);
    const std::string label = s.name + " (" + std::to_string(layers) + " layers)";
    std::string compressed;
    for (const std::string& method : methods) {
      const std::string recipe_name = method == "wanda" ? "wanda-50" : method + "-w4g128";
      const pc::recipes::RecipeSpec recipe = r::LoadRecipe(recipe_name);
      for (const std::string& n : windows) {
        const std::string out = pc::fs::Join(dir, s.name + "-" + recipe_name + "-" + n);
        const r::MemoryEstimate e =
            r::EstimateCompress(config, r::CompressMemoryFor(config, recipe, std::atoll(n.c_str()), seq, text));
        auto [rc, rss] = RunMeasured({bin, "compress", "--threads", threads, "--model", mdir, "--recipe", recipe_name,
                                      "--calib", text, "--calib-samples", n, "--calib-seq-len", std::to_string(seq),
                                      "--out", out, "--overwrite", "-q"},
                                     out + ".log");
        row("compress", label, recipe_name, n + " x " + std::to_string(seq), e, rc, rss);
        if (rc == 0 && method == "rtn") compressed = out;
      }
    }
    if (!eval) continue;
    r::EvalMemoryOptions eo;
    eo.windows = 8;
    eo.seq_len = seq;
    eo.disk_bytes = r::DiskWeightBytes(config);
    eo.text_bytes = pc::fs::FileSize(text);
    {
      auto [rc, rss] = RunMeasured({bin, "eval", "--threads", threads, "--model", mdir, "--text", text, "--seq-len",
                                    std::to_string(seq), "--max-windows", "8", "-q"},
                                   pc::fs::Join(dir, "eval.log"));
      row("eval", label, "-", "8 x " + std::to_string(seq), r::EstimateEval(config, eo), rc, rss);
    }
    if (!compressed.empty()) {
      auto [rc, rss] = RunMeasured({bin, "measure", "--threads", threads, "--reference", mdir, "--compressed",
                                    compressed, "--text", text, "--seq-len", std::to_string(seq), "--max-windows", "8",
                                    "--no-cache", "--out", pc::fs::Join(dir, "measure.h5"), "--overwrite", "-q"},
                                   pc::fs::Join(dir, "measure.log"));
      row("measure", label, "rtn-w4g128", "8 x " + std::to_string(seq), r::EstimateMeasure(config, eo), rc, rss);
    }
  }
  std::printf("\nestimate / measured: %.2f .. %.2f (an upper bound within 1.5x: 1.00 .. 1.50)\n", worst_low,
              worst_high);
  return 0;
}
