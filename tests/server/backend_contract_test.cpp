// The Backend contract checks (backend_contract.h) against the fake backend. The same checks
// are meant to run against the engine-backed Backend on the tiny model.
#include "backend_contract.h"

#include "server/fake_backend.h"

namespace ringlm::server::testing {
namespace {

TEST(BackendContract, FakeBackendMeetsIt) {
  FakeBackendOptions fo;
  fo.slots = 3;
  fo.token_delay = std::chrono::microseconds(0);
  FakeBackend backend(fo);
  check_backend_contract(backend);
  EXPECT_EQ(backend.cancellations(), 1);
}

TEST(BackendContract, UTF8CheckerCatchesSplitCharacters) {
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9 \xf0\x9f\x99\x82"));
  EXPECT_FALSE(valid_utf8("caf\xc3"));
  EXPECT_FALSE(valid_utf8("\x80"));
  EXPECT_FALSE(valid_utf8("\xf0\x9f\x99"));
}

}  // namespace
}  // namespace ringlm::server::testing
