// Generation speed of the synthetic agreement grammar: sentences and MB per second for the train
// stream (docs/CORPUS.md, "Speed"). Usage: pc_corpus_bench [SENTENCES] (default 200000).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "train/corpus_generator.h"
#include "train/corpus_rng.h"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: pc_corpus_bench [SENTENCES > 0]\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  pc::corpus::Generator gen(pc::corpus::StreamSeed(0, pc::corpus::Stream::kTrain));
  pc::corpus::Sentence s;
  size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    gen.Next(&s);
    bytes += pc::corpus::Render(s).size();
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("| sentences | bytes | seconds | sentences/s | MB/s |\n|---:|---:|---:|---:|---:|\n");
  std::printf("| %d | %zu | %.3f | %.0f | %.1f |\n", n, bytes, sec, n / sec, bytes / sec / 1e6);
  return 0;
}
