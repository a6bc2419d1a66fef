#pragma once
// splitmix64: the one 64-bit mixing generator the synthetic checkpoints, the fake backend and
// the drafter's seed derivation share, so a generated model or a derived seed never depends
// on which copy of the constants a file carried.
#include <cstdint>
#include <string_view>

namespace ringlm {

inline constexpr std::uint64_t kSplitmixGamma = 0x9e3779b97f4a7c15ull;

// The output function alone: a bijective mix of z.
inline std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One step: advances state by the golden-ratio gamma and returns the mixed value.
inline std::uint64_t splitmix64_next(std::uint64_t& state) { return splitmix64_mix(state += kSplitmixGamma); }

// An independent, reproducible stream per (seed, tensor name) for random test weights; `salt`
// keeps one generator's streams (text tower, vision, audio) apart from another's.
class NamedStream {
 public:
  NamedStream(std::uint64_t seed, std::uint64_t salt, std::string_view name) : s_(seed * kSplitmixGamma + salt) {
    for (unsigned char c : name) s_ = (s_ ^ c) * 0x100000001b3ull;
  }
  std::uint64_t next() { return splitmix64_next(s_); }
  // 24 random bits scaled into [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  std::uint64_t s_;
};

}  // namespace ringlm
