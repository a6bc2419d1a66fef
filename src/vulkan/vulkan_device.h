// backend::Device over one Vulkan physical device (internal to src/vulkan; devices.h opens it).
//
// A step is one command buffer: every op binds its pipeline, a descriptor set of whole
// buffers (offsets travel in push constants, so no binding-alignment rule applies), pushes
// its parameters and dispatches, followed by a compute-to-compute memory barrier; end_step()
// submits it and waits on a fence. Ops are first noted on the host (pipeline, buffers,
// push constants, groups); end_step() looks the step up among the command buffers it
// recorded before (a hash, then a full compare) and submits the one that matches, so a
// decode step of a shape seen before is replayed without recording or descriptor updates.
// A step seen for the first time is recorded into its own command buffer and descriptor
// pool and kept (the least recently used of kMaxRecordings is dropped; destroying a buffer
// drops the recordings that bind it). Buffers of Memory::host, and device buffers when the
// device-local memory is also host-visible (integrated GPUs, lavapipe), are mapped and
// written directly; otherwise write()/read() go through a staging buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/device.h"
#include "vulkan/vk_api.h"

namespace ringlm::vulkan {

// matmul_ggml + k: the ggml block matmul specialized for block type k (vk_ops.cpp).
// matmul_q8 / matmul_q8_q8_0: the int8 dot-product matmul of q4p16 / Q8_0 weights.
// matmul_tiled / matmul_tiled_f16: the q4p16 matmul over many input rows (float32 / binary16 tiles).
constexpr int kGgmlKinds = 9;
enum class Shader {
  matmul, rms_norm, rope, elementwise, kv_store, attend, quantize_q8, matmul_q8, matmul_q8_q8_0, matmul_tiled,
  matmul_tiled_f16, matmul_ggml,
  count = matmul_ggml + kGgmlKinds
};

class VulkanDevice final : public backend::Device {
 public:
  VulkanDevice(VkPhysicalDevice phys, backend::DeviceInfo info);
  ~VulkanDevice() override;
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const backend::DeviceInfo& info() const override { return info_; }
  backend::BufferId create_buffer(std::uint64_t bytes, backend::Memory memory, const std::string& what) override;
  std::uint64_t buffer_bytes(backend::BufferId buf) const override;
  std::uint64_t max_buffer_bytes() const override { return max_buffer_range_; }
  void destroy_buffer(backend::BufferId buf) override;
  void write(backend::BufferId buf, std::uint64_t byte_offset, const void* src, std::uint64_t bytes) override;
  void read(backend::BufferId buf, std::uint64_t byte_offset, void* dst, std::uint64_t bytes) override;
  void fill_words(backend::BufferId buf, std::uint32_t value) override;
  void copy_buffers(const backend::BufferCopy* copies, std::size_t n) override;
  void begin_step() override;
  void end_step() override;
  void abandon_step() override;
  backend::StepStats step_stats() const override;
  void set_step_reuse(bool on) override;
  // The int8 dot-product path of Weight::int8_activations: on where the device has it, unless
  // RINGLM_VULKAN_INT8=0; set_int8_dot(false) forces the float32 shader (tests, A/B runs).
  bool int8_dot() const { return int8_; }
  void set_int8_dot(bool on) { int8_ = on && info_.int8_dot_product; }
  // The tiled q4p16 matmul (shaders/matmul_tiled.glsl) runs the rows of a matmul's row groups
  // (one per sequence of a step) of at least this many rows (RINGLM_VULKAN_TILED_MIN_ROWS,
  // default kTiledMinRows; 0: never), where the device has the shared memory for it; smaller
  // groups (a decode row, a short chunk) run matmul.comp, whatever else the step holds.
  static constexpr int kTiledMinRows = 8;
  int tiled_min_rows() const { return tiled_min_rows_; }
  void set_tiled_min_rows(int n) { tiled_min_rows_ = tiled_ok_ && n > 0 ? n : 0; }
  // Binary16 tiles in the tiled matmul (RINGLM_VULKAN_FP16=1; off by default): only where the
  // device has shaderFloat16 (enabled at device creation); elsewhere the float32 tiles.
  bool fp16() const { return fp16_; }
  void set_fp16(bool on) { fp16_ = on && fp16_ok_; }

  using backend::Device::matmul;
  void matmul(const backend::Weight& w, backend::Ref in, std::span<const int> groups, backend::Ref out,
              std::int64_t out_stride) override;
  void matmul_rows(const backend::Weight& w, backend::Ref in, backend::Ref ids, int max_ids, std::int64_t row_base,
                   backend::Ref out) override;
  void rms_norm(backend::Ref x, backend::Ref weight, int n, int count, float eps, backend::Ref y) override;
  void rope(backend::Ref x, int d, int count, int per_row, backend::Ref cos_sin) override;
  void gelu_mul(backend::Ref gate, backend::Ref up, int width, int rows, int up_stride, backend::Ref out) override;
  void add(backend::Ref y, backend::Ref x, std::int64_t n) override;
  void scale(backend::Ref y, std::int64_t n, float s) override;
  void soft_cap(backend::Ref x, std::int64_t n, float cap) override;
  void copy(backend::Ref src, backend::Ref dst, std::int64_t n) override;
  void kv_store(const backend::KvLayer& kv, backend::Ref k, backend::Ref v, backend::Ref slots,
                backend::Ref positions, int n) override;
  using backend::Device::attend;
  void attend(backend::Ref q, int n_tokens, backend::Ref q_pos, int n_heads, const backend::KvLayer& kv, int n_scan,
              int window, float scale, backend::Ref out, std::int64_t n_scan_word) override;

 private:
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    std::uint64_t bytes = 0;
    void* mapped = nullptr;  // host-visible memory, mapped for the buffer's life
    std::string what;
  };
  struct Pipeline {
    VkShaderModule module = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    std::uint32_t bindings = 0;
  };

  // One dispatch as noted by dispatch(): compared byte for byte (value-initialized, no padding).
  struct Op {
    std::uint32_t shader = 0, n_bufs = 0, gx = 0, gy = 0, push_bytes = 0;
    backend::BufferId bufs[7] = {};
    std::uint32_t push[12] = {};
  };
  struct Recording {
    std::vector<Op> ops;
    std::uint64_t hash = 0, last_used = 0;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
  };

  void create_device();
  Recording record(const std::vector<Op>& ops, std::uint64_t hash);  // a new command buffer for ops
  void drop_recording(std::size_t i);
  void free_retired();  // the outgrown scratch buffers (outside a step)
  void release();  // every Vulkan object, in reverse order
  void create_pipelines();
  void create_pipeline(Shader s, std::string_view name, std::uint32_t bindings, const std::uint32_t* spec = nullptr);
  std::uint32_t memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const;
  const Buffer& buffer(backend::BufferId id, const char* op) const;
  void check_range(backend::Ref r, std::uint64_t words, const char* op, const char* operand) const;
  void staged_copy(VkBuffer src, VkBuffer dst, std::uint64_t src_offset, std::uint64_t dst_offset,
                   std::uint64_t bytes);
  void submit_and_wait(VkCommandBuffer cmd, const char* what);
  void check(VkResult r, const char* call) const;
  // Records one dispatch of `s` over whole buffers `bufs` (one per binding).
  void dispatch(Shader s, const backend::BufferId* bufs, std::uint32_t n_bufs, const void* push,
                std::uint32_t push_bytes, std::uint32_t gx, std::uint32_t gy, const char* op);
  // matmul and matmul_rows: n_rows input rows, or (ids.buf != 0) a row list of max_ids entries;
  // tiled: run a q4p16 matrix's rows tiled (rows of groups of >= tiled_min_rows_).
  void matmul_op(const backend::Weight& w, backend::Ref in, int n_rows, backend::Ref out, std::int64_t out_stride,
                 backend::Ref ids, int max_ids, std::int64_t row_base, bool tiled);
  // The tiled path of matmul_op (q4p16, groups of >= tiled_min_rows_ rows).
  void matmul_tiled(const backend::Weight& w, backend::Ref in, int n_rows, backend::Ref out, std::uint64_t stride);
  // The int8 path of matmul_op: quantize the input rows, then the dot-product matmul.
  void matmul_int8(const backend::Weight& w, backend::Ref in, int n_rows, backend::Ref out, std::uint64_t stride);
  void elementwise(std::uint32_t op, backend::Ref y, backend::Ref x, backend::Ref z, std::uint64_t n, float s,
                   std::uint32_t width, std::uint32_t stride, const char* name);

  VkPhysicalDevice phys_;
  backend::DeviceInfo info_;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  std::uint64_t max_buffer_range_ = 0;
  std::uint32_t max_groups_ = 65535;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer copy_cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<Op> ops_;       // the step being noted (capacity kept between steps)
  std::uint64_t ops_hash_ = 0;
  std::vector<Recording> recordings_;
  bool reuse_ = true;
  backend::StepStats stats_;
  Pipeline pipelines_[static_cast<int>(Shader::count)];
  std::vector<Buffer> buffers_;  // BufferId i is buffers_[i - 1]
  bool recording_ = false;
  bool int8_ = false;
  bool tiled_ok_ = false;  // the device has the tiled shader's shared memory
  int tiled_min_rows_ = 0;
  bool fp16_ok_ = false;   // shaderFloat16 enabled on the device
  bool fp16_ = false;
  backend::BufferId q8_scratch_ = 0;          // quantized activations of the int8 path (grown)
  std::vector<backend::BufferId> retired_;    // outgrown scratch, freed after the step
};

}  // namespace ringlm::vulkan
