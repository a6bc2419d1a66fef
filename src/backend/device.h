// The compute-device seam below the decoder's forward pass (docs/backends.md).
//
// A Device owns buffers (weights, KV caches, activations) and records the decoder's ops
// into one step: begin_step(), ops in order, end_step() (runs them all, then returns). An
// op reads and writes device buffers only; the host moves data with write() / read()
// outside a step (inputs of the next step, logits of the last one). Ops see the results of
// the ops recorded before them in the same step.
//
// Offsets are counted in 4-byte words (one float, one int32, two halves), so every op can
// address any row of a buffer without the device's binding alignment rules leaking here.
// Every size is checked by the implementation; a failure (out of device memory, a lost
// device, a feature the device lacks) throws ringlm::Error naming the device and what was
// missing or asked for. A step that threw is abandoned: nothing of it is visible.
//
// Implementations: src/vulkan (Vulkan compute). The CPU kernels (src/kernels) are the
// reference and keep their own forward pass for now; docs/backends.md has the plan.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace ringlm::backend {

// What a device says about itself (`ringlm devices`).
struct DeviceInfo {
  int index = 0;             // the N of --device vulkan:N
  std::string api;           // "vulkan"
  std::string name;          // as the driver reports it
  std::string type;          // "discrete GPU", "integrated GPU", "CPU", ...
  std::string driver;        // driver name and version
  std::string api_version;   // e.g. "1.3.230"
  std::uint64_t memory_bytes = 0;  // largest device-local heap
  bool fp16_arithmetic = false;    // shaderFloat16
  bool int8_dot_product = false;   // VK_KHR_shader_integer_dot_product with shaderIntegerDotProduct
  bool storage_16bit = false;      // 16-bit storage buffers
  std::uint32_t subgroup_size = 0;
};

// A device buffer. 0 is "no buffer" (an optional operand left out).
using BufferId = std::uint32_t;

// Where a buffer lives: device memory (weights, KV, activations; write/read are staged
// copies) or host-visible memory the host writes before a step and reads after it (a
// step's token inputs, the logits).
enum class Memory { device, host };

// A position inside a buffer, in 4-byte words.
struct Ref {
  BufferId buf = 0;
  std::uint64_t word = 0;
  Ref at(std::uint64_t words) const { return {buf, word + words}; }
};

// A weight matrix [rows, cols] in a device buffer, in one of the layouts the matmul reads.
// q4p16 is kernels/q4_packed.h's layout byte for byte (uploaded as the model maps it); the
// ggml block types (q8_0 ... iq4_xs) are rows of blocks exactly as a GGUF file stores them
// (kernels/dequant_blocks.h), rows laid end to end with no padding.
enum class WeightLayout { f32, f16, bf16, q4p16, q8_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, iq4_nl, iq4_xs };
const char* weight_layout_name(WeightLayout l);
struct Weight {
  BufferId buf = 0;
  WeightLayout layout = WeightLayout::f32;
  std::int64_t rows = 0, cols = 0;
  // q4p16 / q8_0: quantize the input to int8 per 32-value block and use the device's int8 dot
  // products where it has them (VulkanDevice: VK_KHR_shader_integer_dot_product; elsewhere the
  // float32 matmul runs). The error bound is in docs/backends.md. matmul_rows ignores it.
  bool int8_activations = false;
};

// One KV cache layer on the device: K and V as binary16, [slot][kv_head][head_dim] (two
// halves per word), and the absolute position each slot holds (int32, -1: empty).
struct KvLayer {
  BufferId k = 0, v = 0, pos = 0;
  int n_slots = 0, n_kv_heads = 0, head_dim = 0;
};

// One buffer-to-buffer copy (bytes, multiples of 4), outside a step: KV prefix copies
// between sessions and snapshots stay on the device.
struct BufferCopy {
  BufferId src = 0, dst = 0;
  std::uint64_t src_byte = 0, dst_byte = 0, bytes = 0;
};

// What end_step did so far: steps run, and of them those that reused a recorded step.
struct StepStats {
  std::uint64_t steps = 0, replayed = 0, recorded = 0;
  std::uint64_t kept = 0;  // recorded steps held now
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  // Memory. create_buffer throws ringlm::Error naming the device, `what` and the size when
  // the device cannot hold it. A buffer lives until destroy_buffer or the device's end.
  virtual BufferId create_buffer(std::uint64_t bytes, Memory memory, const std::string& what) = 0;
  virtual std::uint64_t buffer_bytes(BufferId buf) const = 0;
  // The largest buffer create_buffer accepts (Vulkan: maxStorageBufferRange, one binding).
  // Larger weights are split by rows over several buffers (model/device_weights.h).
  virtual std::uint64_t max_buffer_bytes() const = 0;
  // Frees a buffer (outside a step); its id is not reused. 0 is ignored.
  virtual void destroy_buffer(BufferId buf) = 0;
  // Host <-> buffer, outside a step (throws inside one).
  virtual void write(BufferId buf, std::uint64_t byte_offset, const void* src, std::uint64_t bytes) = 0;
  virtual void read(BufferId buf, std::uint64_t byte_offset, void* dst, std::uint64_t bytes) = 0;
  virtual void fill_words(BufferId buf, std::uint32_t value) = 0;  // every word of the buffer
  // Runs the copies in order (one submission) and waits; every range is checked first.
  virtual void copy_buffers(const BufferCopy* copies, std::size_t n) = 0;

  // Step recording.
  virtual void begin_step() = 0;
  // Runs the recorded ops and waits for them. A device may keep what it recorded for a step
  // and run it again when a later step records the same ops with the same operands (Vulkan:
  // one command buffer per distinct step, replayed), so values that change from step to step
  // belong in buffers, not in op parameters.
  virtual void end_step() = 0;
  virtual void abandon_step() = 0;  // drops what was recorded (an op threw); no-op outside a step
  virtual StepStats step_stats() const = 0;
  // false: every step is recorded afresh and dropped after it ran (tests compare the two).
  virtual void set_step_reuse(bool on) = 0;

  // ---- ops (recorded into the current step) ----
  // out[t * out_stride + r] = sum_c in[t][c] * W[r][c] (float32 accumulation), t < n_rows;
  // `in` has row stride w.cols. out_stride >= w.rows (a row range of a wider output: the
  // parts of a split matrix); the four-operand form writes rows of w.rows.
  // The rows come in consecutive groups of groups[i] >= 1 rows (n_rows is their sum): one
  // group per sequence of a batched step. A device may choose its kernel, and so the order
  // of a row's float32 sums, by the size of the row's own group, never by the other groups
  // or the step's total: a row's value depends only on its input and its group's size, so a
  // sequence batched with others keeps the bits of the same rows run alone (VulkanDevice:
  // a group of >= tiled_min_rows() rows runs the tiled q4_0 matmul; docs/backends.md).
  virtual void matmul(const Weight& w, Ref in, std::span<const int> groups, Ref out, std::int64_t out_stride) = 0;
  // One group of n_rows rows (one sequence's chunk, or rows whose bits need match nothing else).
  void matmul(const Weight& w, Ref in, int n_rows, Ref out, std::int64_t out_stride) {
    if (n_rows > 0) matmul(w, in, std::span<const int>(&n_rows, 1), out, out_stride);
  }
  void matmul(const Weight& w, Ref in, int n_rows, Ref out) { matmul(w, in, n_rows, out, w.rows); }
  // The same product over a list of rows of one input vector (the subset LM head of guided
  // decoding): `ids` holds int32 words, the count n first, then n row numbers of the whole
  // matrix, of which `w` holds rows [row_base, row_base + w.rows) (one part of a split
  // matrix). For i < min(n, max_ids) whose row falls in this part, out[i] = that row's
  // value, bit-identical to the same row of matmul() over the same input; other entries of
  // out are left as they are. The count lives in the buffer so that a recorded step replays
  // for any count up to max_ids.
  virtual void matmul_rows(const Weight& w, Ref in, Ref ids, int max_ids, std::int64_t row_base, Ref out) = 0;
  // count vectors of n floats: y = x / sqrt(mean(x^2) + eps) * (weight ? weight : 1). y may be x.
  virtual void rms_norm(Ref x, Ref weight, int n, int count, float eps, Ref y) = 0;
  // NeoX rotation of count head vectors of d floats in place; vector i uses the angles
  // cos_sin[(i / per_row) * d ...] ([d/2] cos then [d/2] sin, kernels::rope_angles).
  virtual void rope(Ref x, int d, int count, int per_row, Ref cos_sin) = 0;
  // out[t][i] = gelu_tanh(gate[t][i]) * up[t * up_stride + i], i < width, t < rows;
  // gate and out have row stride width (out may be gate).
  virtual void gelu_mul(Ref gate, Ref up, int width, int rows, int up_stride, Ref out) = 0;
  virtual void add(Ref y, Ref x, std::int64_t n) = 0;        // y += x
  virtual void scale(Ref y, std::int64_t n, float s) = 0;    // y *= s
  virtual void soft_cap(Ref x, std::int64_t n, float cap) = 0;  // x = cap * tanh(x / cap)
  virtual void copy(Ref src, Ref dst, std::int64_t n) = 0;   // n words
  // Stores n rows of K and V (n_kv_heads * head_dim floats each) into the slots slots[i]
  // (int32) as binary16 (nearest, saturated at +-65504, as kernels::kv_store_f16), and
  // sets pos[slots[i]] = positions[i] (int32).
  virtual void kv_store(const KvLayer& kv, Ref k, Ref v, Ref slots, Ref positions, int n) = 0;
  // Attention of n_tokens query tokens (q, out: [token][n_heads][head_dim]) at positions
  // q_pos[t] (int32) over slots [0, n_scan) of kv, as kernels::attend: slot s counts when
  // 0 <= pos[s] <= q_pos and, when window > 0, q_pos - pos[s] < window; query head h reads
  // KV head h / (n_heads / n_kv_heads); no visible slot gives zeros.
  // n_scan_word >= 0: the slots scanned are min(n_scan, the int32 at word n_scan_word of
  // q_pos's buffer), a bound the host writes with the step's inputs, so that a recorded
  // step stays the same while a full cache grows (Vulkan replays it; see end_step).
  virtual void attend(Ref q, int n_tokens, Ref q_pos, int n_heads, const KvLayer& kv, int n_scan, int window,
                      float scale, Ref out, std::int64_t n_scan_word) = 0;
  void attend(Ref q, int n_tokens, Ref q_pos, int n_heads, const KvLayer& kv, int n_scan, int window, float scale,
              Ref out) {
    attend(q, n_tokens, q_pos, n_heads, kv, n_scan, window, scale, out, -1);
  }
};

}  // namespace ringlm::backend
