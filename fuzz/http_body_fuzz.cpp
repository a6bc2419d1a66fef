// libFuzzer target for the HTTP request body parser: any body must either parse into a chat
// and/or completion request or raise server::ApiError (an HTTP 4xx with an OpenAI error body).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/api_error.h"
#include "server/request.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json j;  // what the server parses bodies into (keys in order)
  try {
    j = server::parse_body(body);
  } catch (const server::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
    return 0;
  }
  try { (void)server::parse_chat_request(j); } catch (const server::ApiError&) {} catch (const Error&) {}
  try { (void)server::parse_completion_request(j); } catch (const server::ApiError&) {} catch (const Error&) {}
  return 0;
}
