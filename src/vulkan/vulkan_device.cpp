#include "vulkan/vulkan_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "vulkan/shaders.h"

namespace ringlm::vulkan {

namespace {
constexpr std::uint32_t kMaxBindings = 7;
constexpr std::uint64_t kStagingBytes = 64ull << 20;
// matmul_tiled.glsl's shared tiles with float32 elements: codes 32 x 64, inputs 32 x 33, 64 scales.
constexpr std::uint32_t kTiledSharedBytes = 4 * (32 * 64 + 32 * 33 + 64);

// An environment switch read when a device opens: its whole-number value, or `dflt` when unset;
// anything else is an error naming the variable.
int env_count(const char* name, int dflt, int max, const char* meaning) {
  const char* e = std::getenv(name);
  if (!e || !*e) return dflt;
  char* end = nullptr;
  const long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 0 || v > max || !(*e >= '0' && *e <= '9'))
    fail_as(ErrorKind::invalid_argument, name, "=", e, ": want a whole number from 0 to ", max, " (", meaning, ")");
  return static_cast<int>(v);
}
}  // namespace

const ShaderBinary& shader_binary(std::string_view name) {
  for (std::size_t i = 0; i < kShaderCount; ++i)
    if (name == kShaders[i].name) return kShaders[i];
  fail_as(ErrorKind::internal, "the build embedded no shader named ", name);
}

void VulkanDevice::check(VkResult r, const char* call) const {
  if (r == VK_SUCCESS) return;
  const ErrorKind kind = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                             ? ErrorKind::resource_limit
                             : ErrorKind::unsupported;
  fail_as(kind, "Vulkan device ", info_.index, " (", info_.name, "): ", call, " failed: ", result_name(r),
          r == VK_ERROR_DEVICE_LOST ? " (the device was lost)" : "");
}

VulkanDevice::VulkanDevice(VkPhysicalDevice phys, backend::DeviceInfo info) : phys_(phys), info_(std::move(info)) {
  vkGetPhysicalDeviceMemoryProperties(phys_, &mem_props_);
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(phys_, &props);
  max_buffer_range_ = props.limits.maxStorageBufferRange;
  max_groups_ = std::min(props.limits.maxComputeWorkGroupCount[0], props.limits.maxComputeWorkGroupCount[1]);
  if (props.limits.maxComputeWorkGroupInvocations < 256 || props.limits.maxComputeSharedMemorySize < 4096)
    fail_unsupported("Vulkan device ", info_.index, " (", info_.name,
                     "): compute workgroups of 256 invocations and 4 KiB of shared memory are needed");
  // RINGLM_VULKAN_STEP_REUSE=0: record every step afresh (an A/B switch for measurements).
  if (const char* e = std::getenv("RINGLM_VULKAN_STEP_REUSE"); e && std::strcmp(e, "0") == 0) reuse_ = false;
  int8_ = info_.int8_dot_product;
  if (const char* e = std::getenv("RINGLM_VULKAN_INT8"); e && std::strcmp(e, "0") == 0) int8_ = false;
  // The tiled q4p16 matmul for many input rows, and its binary16 tiles (opt-in).
  const int tiled_rows = env_count("RINGLM_VULKAN_TILED_MIN_ROWS", kTiledMinRows, 1 << 20,
                                   "the fewest rows of one sequence a q4_0 matmul runs tiled; 0: never");
  const bool want_fp16 = env_count("RINGLM_VULKAN_FP16", 0, 1, "1: binary16 tiles in the tiled matmul") == 1;
  tiled_ok_ = props.limits.maxComputeSharedMemorySize >= kTiledSharedBytes;
  try {
    create_device();
    create_pipelines();
    set_tiled_min_rows(tiled_rows);
    set_fp16(want_fp16);
  } catch (...) {
    release();  // a constructor that throws runs no destructor
    throw;
  }
}

VulkanDevice::~VulkanDevice() { release(); }

void VulkanDevice::release() {
  if (!device_) return;
  vkDeviceWaitIdle(device_);
  for (Buffer& b : buffers_) {
    if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
  }
  buffers_.clear();
  while (!recordings_.empty()) drop_recording(recordings_.size() - 1);
  for (Pipeline& p : pipelines_) {
    if (p.pipeline) vkDestroyPipeline(device_, p.pipeline, nullptr);
    if (p.layout) vkDestroyPipelineLayout(device_, p.layout, nullptr);
    if (p.set_layout) vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    if (p.module) vkDestroyShaderModule(device_, p.module, nullptr);
    p = {};
  }
  if (fence_) vkDestroyFence(device_, fence_, nullptr);
  if (command_pool_) vkDestroyCommandPool(device_, command_pool_, nullptr);
  vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
}

void VulkanDevice::create_device() {
  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, families.data());
  bool found = false;
  for (std::uint32_t i = 0; i < n && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queue_family_ = i;
      found = true;
    }
  if (!found) fail_unsupported("Vulkan device ", info_.index, " (", info_.name, ") has no compute queue");
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  // The int8 dot products of matmul_q8.comp, where the device has them (devices.cpp checked).
  const char* exts[2];
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  if (info_.int8_dot_product) {
    dot.shaderIntegerDotProduct = VK_TRUE;
    dot.pNext = const_cast<void*>(info.pNext);
    info.pNext = &dot;
    exts[info.enabledExtensionCount++] = "VK_KHR_shader_integer_dot_product";
  }
  // shaderFloat16 for matmul_tiled_f16.comp, where the device has it. The instance asks for
  // Vulkan 1.1, so the feature comes through VK_KHR_shader_float16_int8, which must be listed.
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  std::uint32_t n_ext = 0;
  vkEnumerateDeviceExtensionProperties(phys_, nullptr, &n_ext, nullptr);
  std::vector<VkExtensionProperties> have(n_ext);
  vkEnumerateDeviceExtensionProperties(phys_, nullptr, &n_ext, have.data());
  fp16_ok_ = info_.fp16_arithmetic && std::any_of(have.begin(), have.end(), [](const VkExtensionProperties& e) {
               return std::strcmp(e.extensionName, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) == 0;
             });
  if (fp16_ok_) {
    f16.shaderFloat16 = VK_TRUE;
    f16.pNext = const_cast<void*>(info.pNext);
    info.pNext = &f16;
    exts[info.enabledExtensionCount++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
  }
  info.ppEnabledExtensionNames = exts;
  check(vkCreateDevice(phys_, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = queue_family_;
  check(vkCreateCommandPool(device_, &pool, nullptr, &command_pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = command_pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &alloc, &copy_cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(device_, &fence, nullptr, &fence_), "vkCreateFence");

  ops_.reserve(4096);
}

void VulkanDevice::create_pipeline(Shader s, std::string_view name, std::uint32_t bindings, const std::uint32_t* spec) {
  Pipeline& p = pipelines_[static_cast<int>(s)];
  const ShaderBinary& bin = shader_binary(name);
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = bin.bytes;
  sm.pCode = reinterpret_cast<const std::uint32_t*>(bin.spirv);
  check(vkCreateShaderModule(device_, &sm, nullptr, &p.module), "vkCreateShaderModule");
  VkDescriptorSetLayoutBinding b[kMaxBindings]{};
  for (std::uint32_t i = 0; i < bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dsl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dsl.bindingCount = bindings;
  dsl.pBindings = b;
  check(vkCreateDescriptorSetLayout(device_, &dsl, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(device_, &pl, nullptr, &p.layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cp.stage.module = p.module;
  cp.stage.pName = "main";
  const VkSpecializationMapEntry entry{0, 0, 4};
  const VkSpecializationInfo si{1, &entry, 4, spec};
  if (spec) cp.stage.pSpecializationInfo = &si;
  cp.layout = p.layout;
  check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cp, nullptr, &p.pipeline), "vkCreateComputePipelines");
  p.bindings = bindings;
}

void VulkanDevice::create_pipelines() {
  create_pipeline(Shader::matmul, "matmul", 4);
  for (std::uint32_t k = 0; k < kGgmlKinds; ++k)
    create_pipeline(static_cast<Shader>(static_cast<int>(Shader::matmul_ggml) + static_cast<int>(k)), "matmul_ggml", 4, &k);
  create_pipeline(Shader::rms_norm, "rms_norm", 3);
  create_pipeline(Shader::rope, "rope", 2);
  create_pipeline(Shader::elementwise, "elementwise", 3);
  create_pipeline(Shader::kv_store, "kv_store", 6);
  create_pipeline(Shader::attend, "attend", 6);
  if (tiled_ok_) create_pipeline(Shader::matmul_tiled, "matmul_tiled", 3);
  if (tiled_ok_ && fp16_ok_) create_pipeline(Shader::matmul_tiled_f16, "matmul_tiled_f16", 3);
  if (info_.int8_dot_product) {
    const std::uint32_t q4 = 0, q8 = 1;
    create_pipeline(Shader::quantize_q8, "quantize_q8", 2);
    create_pipeline(Shader::matmul_q8, "matmul_q8", 3, &q4);
    create_pipeline(Shader::matmul_q8_q8_0, "matmul_q8", 3, &q8);
  }
}

std::uint32_t VulkanDevice::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags want,
                                        VkMemoryPropertyFlags avoid) const {
  for (std::uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mem_props_.memoryTypes[i].propertyFlags;
    if ((type_bits & (1u << i)) && (f & want) == want && !(f & avoid)) return i;
  }
  return UINT32_MAX;
}

backend::BufferId VulkanDevice::create_buffer(std::uint64_t bytes, backend::Memory memory, const std::string& what) {
  if (bytes == 0) bytes = 4;
  bytes = (bytes + 3) / 4 * 4;
  if (bytes > max_buffer_range_)
    fail_as(ErrorKind::resource_limit, "Vulkan device ", info_.index, " (", info_.name, "): ", what, " needs ",
            bytes, " bytes in one storage buffer, over the device's maxStorageBufferRange of ", max_buffer_range_);
  Buffer b;
  b.bytes = bytes;
  b.what = what;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bi, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  constexpr VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  std::uint32_t type = UINT32_MAX;
  if (memory == backend::Memory::host) {
    type = memory_type(req.memoryTypeBits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
    if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, host, 0);
  } else {
    type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, 0, 0);
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  VkResult r = type == UINT32_MAX ? VK_ERROR_FEATURE_NOT_PRESENT : vkAllocateMemory(device_, &ai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    fail_as(ErrorKind::resource_limit, "Vulkan device ", info_.index, " (", info_.name, "): cannot allocate ",
            bytes, " bytes for ", what, ": ", result_name(r));
  }
  check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
  const VkMemoryPropertyFlags flags = mem_props_.memoryTypes[type].propertyFlags;
  if ((flags & host) == host) check(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
  buffers_.push_back(std::move(b));
  return static_cast<backend::BufferId>(buffers_.size());
}

const VulkanDevice::Buffer& VulkanDevice::buffer(backend::BufferId id, const char* op) const {
  if (id == 0 || id > buffers_.size() || !buffers_[id - 1].buffer)
    fail_as(ErrorKind::internal, "Vulkan device ", info_.index, ": ", op, " names no buffer (id ", id, ")");
  return buffers_[id - 1];
}

std::uint64_t VulkanDevice::buffer_bytes(backend::BufferId id) const { return buffer(id, "buffer_bytes").bytes; }

void VulkanDevice::destroy_buffer(backend::BufferId id) {
  if (id == 0) return;
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: destroy_buffer() inside a step");
  Buffer& b = const_cast<Buffer&>(buffer(id, "destroy_buffer"));
  for (std::size_t i = recordings_.size(); i-- > 0;)  // a kept step that binds it can never run again
    for (const Op& op : recordings_[i].ops)
      if (std::find(op.bufs, op.bufs + op.n_bufs, id) != op.bufs + op.n_bufs) {
        drop_recording(i);
        break;
      }
  if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
  b = Buffer{};
  b.what = "a destroyed buffer";
}

void VulkanDevice::submit_and_wait(VkCommandBuffer cmd, const char* what) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  check(vkQueueSubmit(queue_, 1, &si, fence_), what);
  check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void VulkanDevice::staged_copy(VkBuffer src, VkBuffer dst, std::uint64_t src_offset, std::uint64_t dst_offset,
                               std::uint64_t bytes) {
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(copy_cmd_, &begin), "vkBeginCommandBuffer");
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(copy_cmd_, src, dst, 1, &region);
  check(vkEndCommandBuffer(copy_cmd_), "vkEndCommandBuffer");
  submit_and_wait(copy_cmd_, "vkQueueSubmit (buffer copy)");
}

void VulkanDevice::write(backend::BufferId id, std::uint64_t off, const void* src, std::uint64_t bytes) {
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: write() inside a step");
  const Buffer& b = buffer(id, "write");
  if (off > b.bytes || bytes > b.bytes - off)
    fail_as(ErrorKind::internal, "Vulkan device: write of ", bytes, " bytes at ", off, " past ", b.what, " (",
            b.bytes, " bytes)");
  if (b.mapped) {
    std::memcpy(static_cast<char*>(b.mapped) + off, src, bytes);
    return;
  }
  const backend::BufferId staging = create_buffer(std::min(bytes, kStagingBytes), backend::Memory::host, "staging");
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kStagingBytes);
    std::memcpy(buffers_[staging - 1].mapped, static_cast<const char*>(src) + done, n);
    staged_copy(buffers_[staging - 1].buffer, buffers_[id - 1].buffer, 0, off + done, n);
    done += n;
  }
  // The staging buffer is the newest: release it now instead of keeping it for the device's life.
  vkDestroyBuffer(device_, buffers_.back().buffer, nullptr);
  vkFreeMemory(device_, buffers_.back().memory, nullptr);
  buffers_.pop_back();
}

void VulkanDevice::read(backend::BufferId id, std::uint64_t off, void* dst, std::uint64_t bytes) {
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: read() inside a step");
  const Buffer& b = buffer(id, "read");
  if (off > b.bytes || bytes > b.bytes - off)
    fail_as(ErrorKind::internal, "Vulkan device: read of ", bytes, " bytes at ", off, " past ", b.what, " (",
            b.bytes, " bytes)");
  if (b.mapped) {
    std::memcpy(dst, static_cast<const char*>(b.mapped) + off, bytes);
    return;
  }
  const backend::BufferId staging = create_buffer(std::min(bytes, kStagingBytes), backend::Memory::host, "staging");
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kStagingBytes);
    staged_copy(buffers_[id - 1].buffer, buffers_[staging - 1].buffer, off + done, 0, n);
    std::memcpy(static_cast<char*>(dst) + done, buffers_[staging - 1].mapped, n);
    done += n;
  }
  vkDestroyBuffer(device_, buffers_.back().buffer, nullptr);
  vkFreeMemory(device_, buffers_.back().memory, nullptr);
  buffers_.pop_back();
}

void VulkanDevice::fill_words(backend::BufferId id, std::uint32_t value) {
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: fill_words() inside a step");
  const Buffer& b = buffer(id, "fill_words");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(copy_cmd_, &begin), "vkBeginCommandBuffer");
  vkCmdFillBuffer(copy_cmd_, b.buffer, 0, VK_WHOLE_SIZE, value);
  check(vkEndCommandBuffer(copy_cmd_), "vkEndCommandBuffer");
  submit_and_wait(copy_cmd_, "vkQueueSubmit (buffer fill)");
}

void VulkanDevice::copy_buffers(const backend::BufferCopy* copies, std::size_t n) {
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: copy_buffers() inside a step");
  for (std::size_t i = 0; i < n; ++i) {
    const backend::BufferCopy& c = copies[i];
    const Buffer& s = buffer(c.src, "copy_buffers");
    const Buffer& d = buffer(c.dst, "copy_buffers");
    if (c.src_byte > s.bytes || c.bytes > s.bytes - c.src_byte || c.dst_byte > d.bytes ||
        c.bytes > d.bytes - c.dst_byte || (c.bytes | c.src_byte | c.dst_byte) % 4 != 0)
      fail_as(ErrorKind::internal, "Vulkan device: a copy of ", c.bytes, " bytes from ", s.what, " at ", c.src_byte,
              " to ", d.what, " at ", c.dst_byte, " is outside the buffers or not in whole words");
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(copy_cmd_, &begin), "vkBeginCommandBuffer");
  for (std::size_t i = 0; i < n; ++i) {
    const backend::BufferCopy& c = copies[i];
    if (c.bytes == 0) continue;
    const VkBufferCopy region{c.src_byte, c.dst_byte, c.bytes};
    vkCmdCopyBuffer(copy_cmd_, buffers_[c.src - 1].buffer, buffers_[c.dst - 1].buffer, 1, &region);
    // A later copy may read what this one wrote.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(copy_cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                         nullptr, 0, nullptr);
  }
  check(vkEndCommandBuffer(copy_cmd_), "vkEndCommandBuffer");
  submit_and_wait(copy_cmd_, "vkQueueSubmit (buffer copies)");
}

}  // namespace ringlm::vulkan
