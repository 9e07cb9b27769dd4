#include "tests/test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <sstream>

namespace pc::test {
namespace stdfs = std::filesystem;

std::string SourceDir() {
  const char* s = std::getenv("PERPCOMP_SOURCE_DIR");
  if (s != nullptr && *s) return s;
  return PC_SOURCE_DIR;
}

std::string BuildDir() {
  const char* s = std::getenv("PERPCOMP_BUILD_DIR");
  if (s != nullptr && *s) return s;
  return PC_BUILD_DIR;
}

std::string SharedData() {
  const char* env = std::getenv("PERPCOMP_SHARED");
  std::string base = (env != nullptr && *env) ? std::string(env) : SourceDir() + "/../shared";
  std::string data = base + "/data";
  std::error_code ec;
  return stdfs::is_directory(data, ec) ? data : "";
}

std::string SharedPath(const std::string& relative) {
  std::string d = SharedData();
  return d.empty() ? "" : d + "/" + relative;
}

std::string TempDir(const std::string& name) {
  static std::atomic<int> counter{0};
  std::string dir = BuildDir() + "/test-tmp/" + name + "-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter++);
  stdfs::remove_all(dir);
  stdfs::create_directories(dir);
  return dir;
}

std::string PerpcompBin() { return BuildDir() + "/tools/perpcomp"; }

RunResult Run(const std::string& command_line) {
  std::string out_file = TempDir("run") + "/out";
  std::string err_file = out_file + ".err";
  std::string cmd = "(" + command_line + ") >'" + out_file + "' 2>'" + err_file + "' </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  r.out = slurp(out_file);
  r.err = slurp(err_file);
  return r;
}

RunResult RunPerpcomp(const std::string& args) { return Run("'" + PerpcompBin() + "' " + args); }

std::string ConvertedStories() {
  static std::mutex mutex;
  static std::string dir;
  std::lock_guard<std::mutex> lock(mutex);
  if (!dir.empty() || SharedData().empty()) return dir;
  const std::string out = TempDir("stories260K") + "/stories";
  RunResult r = RunPerpcomp("convert --from llama2c --weights '" + SharedPath("models/stories260K/stories260K.bin") +
                            "' --tokenizer '" + SharedPath("models/stories260K/tok512.bin") + "' --out '" + out + "' -q");
  if (r.exit_code != 0) throw std::runtime_error("converting stories260K failed: " + r.err);
  dir = out;
  return dir;
}

RunResult RunWithFileLimit(const std::string& command_line, uint64_t max_file_bytes) {
  const std::string dir = TempDir("fsize-run");
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("RunWithFileLimit: fork");
    std::abort();
  }
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{static_cast<rlim_t>(max_file_bytes), static_cast<rlim_t>(max_file_bytes)};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    ::execl("/bin/sh", "sh", "-c", command_line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream fo(out, std::ios::binary), fe(err, std::ios::binary);
  std::stringstream so, se;
  so << fo.rdbuf();
  se << fe.rdbuf();
  r.out = so.str();
  r.err = se.str();
  return r;
}

bool HavePythonTorch() {
  static int have = -1;
  if (have < 0) have = Run("/usr/bin/python3 -c 'import torch, numpy'").exit_code == 0 ? 1 : 0;
  return have == 1;
}

std::string RefEnv() {
  const char* env = std::getenv("PERPCOMP_REFENV");
  if (env != nullptr && *env) return env;
  std::ifstream configured(BuildDir() + "/pc_refenv.txt");  // the CMake cache variable PC_REFENV
  std::string path;
  if (configured && std::getline(configured, path) && !path.empty()) return path;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string cache = (xdg != nullptr && *xdg) ? std::string(xdg) : std::string(home ? home : "") + "/.cache";
  return cache + "/perpcomp/refenv";
}

std::string RefPython() {
  // tools/setup-reference.sh writes the stamp last, after the imports were checked.
  std::string env = RefEnv();
  std::error_code ec;
  if (!stdfs::exists(env + "/bin/python", ec) || !stdfs::exists(env + "/.perpcomp-requirements.sha256", ec)) return "";
  return env + "/bin/python";
}

RunResult RunRefPython(const std::string& script, const std::string& args) {
  std::string py = RefPython();
  if (py.empty()) return RunResult{127, "", "the reference environment " + RefEnv() + " is not set up"};
  // No model hub: everything the references load is a local folder.
  return Run("HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 '" + py + "' '" + SourceDir() + "/" +
             script + "' " + args);
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

void ExitSkipped(const std::string& reason) {
  const char* ctest = std::getenv("PERPCOMP_CTEST");
  if (ctest == nullptr || std::string(ctest) != "1") return;
  std::fprintf(stdout, "SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(kSkipExitCode);  // no static destructors: Catch2's session is mid-test
}

}  // namespace pc::test
