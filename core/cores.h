// core/cores.h — how many cores this process may use, and --threads checked against them
// (LibTorch-free, so pc_reports and the sanitizer build use the same rule).
#pragma once

#include <string>

namespace pc {

// Cores this process may run on: its CPU affinity mask (sched_getaffinity, which honours
// taskset, cgroup cpusets and Slurm's binding), else std::thread::hardware_concurrency(), at least 1.
int AvailableCores();

// The thread count for a `--threads N` request (`what` names the option in messages):
// N = 0 means all available cores; N < 0 is refused; N above AvailableCores() is capped at it
// with a warning (more threads than cores only adds contention; 100000 used to stall the machine).
int CheckedThreads(int requested, const std::string& what = "--threads");

}  // namespace pc
