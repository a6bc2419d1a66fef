// Whether this test binary is built with AddressSanitizer (scripts/test-sanitizers.sh: -O0 under
// ASan + UBSan), for the few tests whose bounds (time, resident memory) depend on the build.
// Shared by every test area; it includes nothing of src/.
#pragma once

namespace ringlm::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// A megabyte of adversarial JSON: the linear parser takes ~0.2 s in release and several times
// that at -O0 under ASan; the quadratic one took 80 s in release (issue #28). The bound
// separates the two in both builds. Measured as the thread's CPU time (cpu_time.h), so time
// spent waiting for a core on a loaded host does not count.
inline constexpr double kParseBoundSeconds = kAddressSanitizer ? 20.0 : 2.0;

}  // namespace ringlm::testing
