#include "tests/sweep/sweep_test_util.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "store/file.h"

namespace pc::test {

namespace stdfs = std::filesystem;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// ~400 short English lines (deterministic): calibration needs lines of at most L tokens (AWQ
// windowing) and documents longer than L (random windowing) alike; the text is one file.
std::string GeneratedText() {
  static const char* subjects[] = {"the little dog", "a happy girl", "the old man", "my friend Tom", "the red bird",
                                   "a small cat",    "the tall boy", "her mother"};
  static const char* verbs[] = {"saw", "liked", "found", "helped", "looked at", "played with", "wanted", "carried"};
  static const char* objects[] = {"a big ball", "the blue car", "a funny hat", "the green box", "some sweet cake",
                                  "a long stick"};
  static const char* endings[] = {"in the park.", "at home.", "after lunch.", "by the river.", "on a sunny day.",
                                  "before bed."};
  std::string text;
  uint64_t s = 12345;
  auto next = [&](int n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((s >> 33) % static_cast<uint64_t>(n));
  };
  for (int line = 0; line < 400; ++line) {
    std::string sentence = std::string(subjects[next(8)]) + " " + verbs[next(8)] + " " + objects[next(6)] + " " +
                           endings[next(6)];
    sentence[0] = static_cast<char>(std::toupper(sentence[0]));
    text += sentence;
    text += (line % 8 == 7) ? "\n\n" : "\n";
  }
  return text;
}

std::string GeneratedPairs() {
  static const char* nouns[][2] = {{"dog", "dogs"}, {"girl", "girls"}, {"cat", "cats"}, {"bird", "birds"},
                                   {"boy", "boys"}, {"man", "men"},     {"tree", "trees"}, {"car", "cars"}};
  static const char* verbs[][2] = {{"runs", "run"}, {"is", "are"}, {"was", "were"}, {"plays", "play"}};
  std::string out;
  int id = 0;
  for (const auto& n : nouns) {
    for (int v = 0; v < 2; ++v) {
      const auto& verb = verbs[(id + v) % 4];
      std::string good = "The " + std::string(n[0]) + " " + verb[0] + " in the park.";
      std::string bad = "The " + std::string(n[0]) + " " + verb[1] + " in the park.";
      out += "{\"sentence_good\": \"" + good + "\", \"sentence_bad\": \"" + bad +
             "\", \"linguistics_term\": \"subject_verb_agreement\", \"UID\": \"sva_test\", \"pairID\": \"" +
             std::to_string(id++) + "\"}\n";
    }
  }
  return out;
}

std::string MakeModel() {
  static std::once_flag once;
  static std::string model;
  std::call_once(once, [] {
    model = ConvertedStories();
    if (model.empty()) model = TrainTinyModel(TempDir("sweep-model"));  // no shared data
  });
  return model;
}

}  // namespace

std::string TrainTinyModel(const std::string& dir) {
  const std::string text = WriteTextFile(dir, "train.txt", GeneratedText());
  const std::string model = dir + "/tiny";
  RunResult r = RunPerpcomp("train --threads 1 --arch llama --layers 2 --hidden 32 --heads 2 --context 64 --steps 2 "
                            "--warmup 1 --batch 2 --vocab-size 300 --text " + Q(text) + " --out " + Q(model) + " -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return model;
}

std::string WriteTextFile(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

SweepFixture MakeSweepFixture(const std::string& name) {
  SweepFixture f;
  f.model = MakeModel();
  f.dir = TempDir("sweep-" + name);
  f.text = WriteTextFile(f.dir, "text.txt", GeneratedText());
  f.pairs = WriteTextFile(f.dir, "pairs.jsonl", GeneratedPairs());
  f.cache = f.dir + "/cache";
  return f;
}

std::string SweepFixture::Args(const std::string& sweep, const std::string& out) const {
  return "--threads 1 --model " + Q(model) + " --sweep " + Q(sweep) + " --calib " + Q(text) +
         " --calib-samples " + std::to_string(calib_samples) + " --calib-seq-len 32 --eval " + Q(text) +
         " --seq-len 32 --max-windows " + std::to_string(max_windows) + " --pairs " +
         Q(pairs) + " --cache " + Q(cache) + " --out " + Q(out);
}

std::string ThreeRunSweep(const std::string& dir) {
  return WriteTextFile(dir, "three.yaml",
                       "name: three\n"
                       "runs:\n"
                       "  - recipe: rtn-w4g128\n"
                       "    name: rtn-w4g32\n"
                       "    params: {group_size: 32}\n"
                       "  - recipe: awq-w4g128\n"
                       "    name: awq-w4g32\n"
                       "    params: {group_size: 32, n_grid: 10}\n"
                       "  - recipe: wanda-50\n");
}

std::vector<std::string> ResultRuns(const std::string& results) {
  store::File f = store::File::OpenRead(results, store::kind::kSweepResults);
  return f.root().OpenGroup("runs").ListGroups();
}

namespace {

void CheckSameAttrs(const store::Group& a, const store::Group& b, const std::vector<std::string>& skip) {
  auto names = a.AttrNames(store::Order::kName);
  CHECK(names == b.AttrNames(store::Order::kName));
  for (const auto& n : names) {
    if (std::find(skip.begin(), skip.end(), n) != skip.end()) continue;
    INFO(a.Where() << " attribute " << n);
    switch (a.AttrType(n)) {
      case store::DType::kString:
        CHECK(a.GetAttr<std::string>(n) == b.GetAttr<std::string>(n));
        break;
      case store::DType::kFloat64:
      case store::DType::kFloat32: {
        double x = a.GetAttr<double>(n), y = b.GetAttr<double>(n);
        CHECK(((x == y) || (x != x && y != y)));
        break;
      }
      case store::DType::kBool:
        CHECK(a.GetAttr<bool>(n) == b.GetAttr<bool>(n));
        break;
      default:
        CHECK(a.GetAttr<int64_t>(n) == b.GetAttr<int64_t>(n));
    }
  }
}

void CheckSameTable(const store::Group& a, const store::Group& b, const std::string& name) {
  store::Table x = a.ReadTable(name), y = b.ReadTable(name);
  REQUIRE(x.column_names() == y.column_names());
  for (const auto& c : x.column_names()) {
    INFO(a.Where() << "/" << name << " column " << c);
    if (x.type(c) == store::DType::kFloat64) {
      const auto& u = x.Get<double>(c);
      const auto& v = y.Get<double>(c);
      REQUIRE(u.size() == v.size());
      for (size_t i = 0; i < u.size(); ++i) CHECK(((u[i] == v[i]) || (u[i] != u[i] && v[i] != v[i])));
    } else if (x.type(c) == store::DType::kString) {
      CHECK(x.Get<std::string>(c) == y.Get<std::string>(c));
    } else if (x.type(c) == store::DType::kInt64) {
      CHECK(x.Get<int64_t>(c) == y.Get<int64_t>(c));
    }
  }
}

}  // namespace

void CheckSameResults(const std::string& a, const std::string& b) {
  INFO("comparing " << a << " with " << b);
  store::File fa = store::File::OpenRead(a, store::kind::kSweepResults);
  store::File fb = store::File::OpenRead(b, store::kind::kSweepResults);
  CheckSameAttrs(fa.root(), fb.root(), {"created_at", "created_by"});
  CheckSameAttrs(fa.root().OpenGroup("reference"), fb.root().OpenGroup("reference"), {});
  const std::vector<std::string> runs = ResultRuns(a);
  REQUIRE(runs == ResultRuns(b));
  // Timings, the cache's use and the compression record (it holds the compression's seconds)
  // may differ between two runs of the same recipe; every number measured may not.
  const std::vector<std::string> varying = {"seconds", "seconds_compress", "seconds_measure", "seconds_eval",
                                            "cache_hit", "cache_entry", "compression"};
  for (const auto& name : runs) {
    store::Group ra = fa.root().OpenGroup("runs/" + name), rb = fb.root().OpenGroup("runs/" + name);
    CheckSameAttrs(ra, rb, varying);
    CheckSameAttrs(ra.OpenGroup("downstream"), rb.OpenGroup("downstream"), {});
    CheckSameTable(ra, rb, "sites");
    CheckSameTable(ra, rb, "weights");
    if (ra.IsGroup("pairs")) {
      CheckSameAttrs(ra.OpenGroup("pairs"), rb.OpenGroup("pairs"), {});
      CheckSameTable(ra.OpenGroup("pairs"), rb.OpenGroup("pairs"), "files");
      CheckSameTable(ra.OpenGroup("pairs"), rb.OpenGroup("pairs"), "items");
    }
    CHECK(ra.OpenGroup("compress").ListGroups() == rb.OpenGroup("compress").ListGroups());
  }
}

std::vector<std::string> Temporaries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = stdfs::recursive_directory_iterator(dir, ec); it != stdfs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().find(".tmp-") != std::string::npos) out.push_back(it->path().string());
  }
  return out;
}

bool KillWhen(const std::string& command_line, const std::function<bool()>& ready, double timeout_s) {
  const std::string log = TempDir("kill-when") + "/log";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const std::string cmd = "exec " + command_line;
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      WARN("the process ended before the kill: " << text);
      return false;
    }
    if (ready()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      WARN("timed out waiting for the moment to kill");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace pc::test
