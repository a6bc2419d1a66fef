#include "model/device_head.h"

#include <algorithm>
#include <bit>

#include "util/error.h"

namespace ringlm::model::detail {

DeviceHeadRows::DeviceHeadRows(const DeviceWeights& dw, const ModelConfig& cfg)
    : dw_(dw), dev_(*dw.device), hidden_(cfg.hidden_size), vocab_(cfg.vocab_size),
      softcap_(static_cast<float>(cfg.final_logit_softcapping)) {
  const std::uint64_t V = static_cast<std::uint64_t>(vocab_);
  try {
    in_ = dev_.create_buffer(4ull * static_cast<std::uint64_t>(hidden_), backend::Memory::host, "subset head input");
    ids_ = dev_.create_buffer(4 * (1 + V), backend::Memory::host, "subset head rows");
    out_ = dev_.create_buffer(4 * V, backend::Memory::host, "subset head logits");
  } catch (...) {
    for (backend::BufferId b : {in_, ids_, out_}) dev_.destroy_buffer(b);
    throw;
  }
  host_ids_.resize(static_cast<std::size_t>(1 + V));
}

DeviceHeadRows::~DeviceHeadRows() {
  for (backend::BufferId b : {in_, ids_, out_}) dev_.destroy_buffer(b);
}

int DeviceHeadRows::bucket(std::size_t n, int vocab) {
  const std::size_t b = std::bit_ceil(std::max<std::size_t>(n, 16));
  return static_cast<int>(std::min<std::size_t>(b, static_cast<std::size_t>(vocab)));
}

void DeviceHeadRows::compute(const float* h, std::span<const std::int32_t> ids, float* out) {
  for (std::int32_t id : ids)
    if (id < 0 || id >= vocab_) fail("LM head row ", id, " is outside the vocabulary (", vocab_, ")");
  if (ids.empty()) return;
  dev_.write(in_, 0, h, 4ull * static_cast<std::uint64_t>(hidden_));
  // More ids than the vocabulary (repeats) go in several steps of at most vocab each.
  for (std::size_t done = 0; done < ids.size();) {
    const std::size_t n = std::min(ids.size() - done, static_cast<std::size_t>(vocab_));
    const int cap = bucket(n, vocab_);
    host_ids_[0] = static_cast<std::int32_t>(n);
    std::copy_n(ids.data() + done, n, host_ids_.begin() + 1);
    dev_.write(ids_, 0, host_ids_.data(), 4 * (1 + n));
    try {
      dev_.begin_step();
      for (std::size_t i = 0; i < dw_.lm_head.parts.size(); ++i)
        dev_.matmul_rows(dw_.lm_head.parts[i], {in_, 0}, {ids_, 0}, cap, dw_.lm_head.first_row[i], {out_, 0});
      // Over the whole capacity (entries past n hold stale values), so the step stays the same.
      if (softcap_ > 0) dev_.soft_cap({out_, 0}, cap, softcap_);
      dev_.end_step();
    } catch (...) {
      dev_.abandon_step();
      throw;
    }
    dev_.read(out_, 0, out + done, 4 * n);
    done += n;
  }
}

}  // namespace ringlm::model::detail
