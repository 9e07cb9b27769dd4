// core/threads.h — intra-op threads for LibTorch (it starts with 1 thread on this machine).
#pragma once

namespace pc {

int DefaultThreads();       // all cores available to the process (core/cores.h AvailableCores)
void SetThreads(int n);     // n <= 0: DefaultThreads(); capped at DefaultThreads()
int GetThreads();

}  // namespace pc
