// core/threads.h — intra-op threads for LibTorch (it starts with 1 thread on this machine).
#pragma once

namespace pc {

int DefaultThreads();       // all cores
void SetThreads(int n);     // n <= 0: DefaultThreads()
int GetThreads();

}  // namespace pc
