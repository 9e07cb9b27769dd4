// pc_tokenizer_bench [shared-data-dir] — tokenizer speed on WikiText-2 test (1.3 MB).
//
// Prints one table: encode time (best of 3), MB/s and tokens for the GPT-NeoX tokenizer.json, the
// Llama tokenizer.model read natively (its tokenizer.json form, our BPE engine: what perpcomp uses)
// and through libsentencepiece (pc_tokenizer_spm, for comparison only; it cannot be loaded beside
// LibTorch), then byte-level BPE training to 4096 tokens on WikiText-2 test + tiny shakespeare, then
// the huge inputs of tests/tokenizer/bpe_test.cc "huge inputs do not hang" (a 1 MB word, 1 MB of spaces,
// 200,000 mixed letters) with the GPT-NeoX tokenizer (that test no longer asserts on time).
// The shared data: the argument, else $PERPCOMP_SHARED/data, else <source>/../shared/data.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bench/cpu_model.h"
#include "core/blas.h"
#include "core/fs.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/libsentencepiece.h"
#include "model/tokenizer/tokenizer.h"

namespace {

double Seconds(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Row(const std::string& name, const std::string& what, double bytes, double seconds, long tokens) {
  std::printf("| %-40s | %-22s | %8.3f | %8.2f | %9ld |\n", name.c_str(), what.c_str(), seconds,
              bytes / 1e6 / seconds, tokens);
}

void BenchEncode(const std::string& name, const pc::Tokenizer& tok, const std::string& text) {
  double best = 1e30;
  long tokens = 0;
  for (int rep = 0; rep < 3; ++rep) {
    best = std::min(best, Seconds([&] { tokens = static_cast<long>(tok.Encode(text).size()); }));
  }
  Row(name, "encode wiki.test.raw", static_cast<double>(text.size()), best, tokens);
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  std::string data;
  if (argc > 1) {
    data = argv[1];
  } else if (const char* env = std::getenv("PERPCOMP_SHARED"); env != nullptr && *env) {
    data = std::string(env) + "/data";
  } else {
    data = std::string(PC_SOURCE_DIR) + "/../shared/data";
  }
  std::string wiki_path = data + "/text/wikitext-2/wiki.test.raw.txt";
  if (!pc::fs::Exists(wiki_path)) {
    std::fprintf(stderr, "pc_tokenizer_bench: '%s' not found; pass the shared data folder as the argument\n",
                 wiki_path.c_str());
    return 2;
  }
  std::string wiki = pc::fs::ReadFile(wiki_path);

  pc::bench::PrintCpu();
  std::printf("| %-40s | %-22s | %8s | %8s | %9s |\n", "tokenizer", "work", "seconds", "MB/s", "tokens");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(42, '-').c_str(), std::string(24, '-').c_str(),
              std::string(10, '-').c_str(), std::string(10, '-').c_str(), std::string(11, '-').c_str());
  std::unique_ptr<pc::Tokenizer> neox;
  double load = Seconds([&] { neox = pc::LoadTokenizer(data + "/tokenizers/gpt-neox-20b/tokenizer.json"); });
  Row("gpt-neox-20b tokenizer.json", "load", 2467981.0, load, neox->vocab_size());
  BenchEncode("gpt-neox-20b tokenizer.json", *neox, wiki);
  std::string mixed;
  for (int i = 0; i < 200000; ++i) mixed += static_cast<char>('a' + (i * 7919) % 26);
  const std::pair<const char*, std::string> huge[] = {
      {"1 MB word: encode+decode", std::string(1 << 20, 'x')},
      {"1 MB spaces: encode+decode", std::string(1 << 20, ' ')},
      {"200k mixed: encode+decode", mixed}};
  for (const auto& [what, text] : huge) {
    long tokens = 0;
    double s = Seconds([&, &text = text] {
      auto ids = neox->Encode(text);
      tokens = static_cast<long>(ids.size());
      if (neox->Decode(ids) != text) std::fprintf(stderr, "round trip failed: %s\n", what);
    });
    Row("gpt-neox-20b tokenizer.json", what, static_cast<double>(text.size()), s, tokens);
  }

  const std::string llama_model = data + "/tokenizers/llama-spm/tokenizer.model";
  std::unique_ptr<pc::Tokenizer> llama;
  load = Seconds([&] { llama = pc::LoadTokenizer(llama_model); });
  Row("llama tokenizer.model (native)", "read + convert + load", 499723.0, load, llama->vocab_size());
  BenchEncode("llama tokenizer.model (native)", *llama, wiki);
  std::unique_ptr<pc::Tokenizer> llama_sp;
  load = Seconds([&] { llama_sp = pc::LoadSentencePieceModel(llama_model); });
  Row("llama tokenizer.model (libsentencepiece)", "load", 499723.0, load, llama_sp->vocab_size());
  BenchEncode("llama tokenizer.model (libsentencepiece)", *llama_sp, wiki);

  std::string corpus = wiki;
  std::string shakespeare = data + "/text/tinyshakespeare/input.txt";
  if (pc::fs::Exists(shakespeare)) corpus += "\n\n" + pc::fs::ReadFile(shakespeare);
  pc::BpeTrainerOptions options;
  options.vocab_size = 4096;
  pc::BpeTrainResult result;
  double train = Seconds([&] {
    pc::ByteLevelBpeTrainer trainer(options);
    trainer.AddText(corpus);
    result = trainer.Train();
  });
  Row("byte-level BPE trainer, vocab 4096", "train", static_cast<double>(corpus.size()), train, result.merges);
  BenchEncode("the trained 4096-token tokenizer", *result.tokenizer, wiki);
  std::printf("(trainer: %ld words, %ld unique, %d merges%s; 'tokens' of the training rows = merges)\n",
              static_cast<long>(result.words), static_cast<long>(result.unique_words), result.merges,
              result.stopped_early ? ", stopped early" : "");
  return 0;
}
