// train/corpus_rng.h — the corpus generator's random numbers, identical on every platform.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but the std:: distributions
// (uniform_int_distribution, bernoulli_distribution, ...) are not: libstdc++, libc++ and MSVC give
// different values for the same engine state. So the engine is the only std:: part; every draw is
// computed here from its raw 64-bit outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace pc::corpus {

// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Independent random streams of one --seed: train, valid, and one per pair condition.
enum class Stream : uint64_t { kTrain = 1, kValid = 2, kPairs0 = 10, kPairs1 = 11, kPairs2 = 12 };

// The 64-bit seed of one stream: SplitMix64(SplitMix64(seed) ^ stream).
inline uint64_t StreamSeed(uint64_t seed, Stream stream) {
  return SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(stream));
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t Next() { return engine_(); }

  // Uniform in [0, n) for n >= 1, without modulo bias: draws above the largest multiple of n
  // are rejected and redrawn.
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // multiple of n (or UINT64_MAX when n divides 2^64-1)
    uint64_t x;
    do {
      x = engine_();
    } while (x >= limit);
    return x % n;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  bool Bernoulli(double p) { return Uniform() < p; }

  // Index i in [0, n) with probability w[i] / sum(w); weights >= 0 with a positive sum. The sum and
  // the cumulative walk run in index order, so the result is the same wherever IEEE doubles are.
  size_t Categorical(const double* w, size_t n) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += w[i];
    const double r = Uniform() * total;
    double cum = 0;
    size_t last = 0;
    for (size_t i = 0; i < n; ++i) {
      if (w[i] <= 0) continue;
      cum += w[i];
      last = i;
      if (r < cum) return i;
    }
    return last;  // r rounded up to the total
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace pc::corpus
