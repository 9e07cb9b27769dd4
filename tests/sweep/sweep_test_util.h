// Helpers for the sweep tests: a tiny model (stories260K converted when ../shared is present,
// otherwise a 2-layer llama trained for two steps), generated calibration/evaluation text and
// minimal pairs, sweep files, results comparison, and processes killed at a chosen moment.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace pc::test {

struct SweepFixture {
  std::string dir;    // this test's folder
  std::string model;  // the reference model folder
  std::string text;   // calibration and evaluation text (short lines)
  std::string pairs;  // a minimal-pairs .jsonl
  std::string cache;  // the reference cache
  int max_windows = 12, calib_samples = 8;

  // "--model .. --sweep .. --calib .. --eval .. --pairs .. --out .. --cache .. --threads 1 ..."
  std::string Args(const std::string& sweep, const std::string& out) const;
};

// A 2-layer llama (hidden 32, context 64, BPE vocabulary 300) trained for two steps on the
// generated text, in <dir>/tiny.
std::string TrainTinyModel(const std::string& dir);

// A fresh folder with the inputs; the model is made once per process.
SweepFixture MakeSweepFixture(const std::string& name);

// Writes `yaml` to <dir>/<name> and returns the path.
std::string WriteTextFile(const std::string& dir, const std::string& name, const std::string& text);

// The three-run sweep the end-to-end tests use (rtn, awq, wanda).
std::string ThreeRunSweep(const std::string& dir);

// Every number of two sweep-results files agrees (same runs in the same order, the same
// recipes, downstream scores, pair accuracies and site/weight tables; timings may differ).
void CheckSameResults(const std::string& a, const std::string& b);

// Names of the runs of a sweep-results file, in file order.
std::vector<std::string> ResultRuns(const std::string& results);

// Files and folders under `dir` (recursive) whose name contains ".tmp-".
std::vector<std::string> Temporaries(const std::string& dir);

// Starts `command_line` (through /bin/sh), polls `ready` every 2 ms and sends SIGKILL to the
// process as soon as it returns true. Returns true when the kill happened, false when the
// process ended first (or `timeout_s` passed; the process is then killed too).
bool KillWhen(const std::string& command_line, const std::function<bool()>& ready, double timeout_s = 120);

}  // namespace pc::test
