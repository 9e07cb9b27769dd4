// tests/fuzz/replay_main.cc — runs a fuzz target's LLVMFuzzerTestOneInput on every file of the
// folders given (the seed corpus, hostile inputs, and regressions of past findings), without
// libFuzzer: CTest runs it in every build, so the sanitizer build (build-asan) replays them too.
// A crash, a sanitizer report or an unexpected exception (fuzz_util.h aborts) fails the test.
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::string> files;
    if (DIR* dir = opendir(argv[i])) {
      while (dirent* e = readdir(dir)) {
        if (e->d_name[0] != '.') files.push_back(std::string(argv[i]) + "/" + e->d_name);
      }
      closedir(dir);
    } else {
      files.push_back(argv[i]);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "replay: cannot read '%s'\n", f.c_str());
        return 2;
      }
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++count;
    }
  }
  std::printf("replay: %zu inputs, no crash\n", count);
  return count > 0 ? 0 : 2;
}
