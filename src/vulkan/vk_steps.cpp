// Steps: ops noted by dispatch() (vk_ops.cpp), then at end_step either the command buffer
// recorded earlier for the same ops, or a new one recorded now and kept (vulkan_device.h).
#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "vulkan/vulkan_device.h"

namespace ringlm::vulkan {

namespace {
// Distinct steps kept: prefill chunks of several sizes, decode at B = 1 and in batches.
constexpr std::size_t kMaxRecordings = 24;
constexpr std::uint64_t kHashSeed = 0xcbf29ce484222325ull;
}  // namespace

backend::StepStats VulkanDevice::step_stats() const {
  backend::StepStats s = stats_;
  s.kept = recordings_.size();
  return s;
}

void VulkanDevice::set_step_reuse(bool on) {
  if (recording_) fail_as(ErrorKind::internal, "Vulkan device: set_step_reuse() inside a step");
  reuse_ = on;
  if (!on)
    while (!recordings_.empty()) drop_recording(recordings_.size() - 1);
}

void VulkanDevice::drop_recording(std::size_t i) {
  Recording& r = recordings_[i];
  if (r.cmd) vkFreeCommandBuffers(device_, command_pool_, 1, &r.cmd);
  if (r.pool) vkDestroyDescriptorPool(device_, r.pool, nullptr);
  recordings_.erase(recordings_.begin() + static_cast<std::ptrdiff_t>(i));
}

VulkanDevice::Recording VulkanDevice::record(const std::vector<Op>& ops, std::uint64_t hash) {
  Recording r;
  r.ops = ops;
  r.hash = hash;
  const auto n = static_cast<std::uint32_t>(ops.size());
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n * 7};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = n;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &size;
  check(vkCreateDescriptorPool(device_, &dp, nullptr, &r.pool), "vkCreateDescriptorPool");
  try {
    std::vector<VkDescriptorSetLayout> layouts(n);
    for (std::uint32_t i = 0; i < n; ++i) layouts[i] = pipelines_[ops[i].shader].set_layout;
    std::vector<VkDescriptorSet> sets(n);
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = r.pool;
    ai.descriptorSetCount = n;
    ai.pSetLayouts = layouts.data();
    check(vkAllocateDescriptorSets(device_, &ai, sets.data()), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(static_cast<std::size_t>(n) * 7);
    std::vector<VkWriteDescriptorSet> writes;
    writes.reserve(infos.size());
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t b = 0; b < ops[i].n_bufs; ++b) {
        VkDescriptorBufferInfo& info = infos[i * 7 + b];
        info = {buffers_[ops[i].bufs[b] - 1].buffer, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstSet = sets[i];
        w.dstBinding = b;
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = &info;
        writes.push_back(w);
      }
    vkUpdateDescriptorSets(device_, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);

    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = command_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device_, &alloc, &r.cmd), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(r.cmd, &begin), "vkBeginCommandBuffer");
    // The next op may read what this one wrote (or overwrite what it read).
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    for (std::uint32_t i = 0; i < n; ++i) {
      const Op& op = ops[i];
      const Pipeline& p = pipelines_[op.shader];
      vkCmdBindPipeline(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      vkCmdBindDescriptorSets(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &sets[i], 0, nullptr);
      vkCmdPushConstants(r.cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, op.push_bytes, op.push);
      vkCmdDispatch(r.cmd, op.gx, op.gy, 1);
      vkCmdPipelineBarrier(r.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                           &barrier, 0, nullptr, 0, nullptr);
    }
    check(vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer");
  } catch (...) {
    if (r.cmd) vkFreeCommandBuffers(device_, command_pool_, 1, &r.cmd);
    vkDestroyDescriptorPool(device_, r.pool, nullptr);
    throw;
  }
  return r;
}

void VulkanDevice::abandon_step() {
  ops_.clear();
  recording_ = false;
  free_retired();
}

void VulkanDevice::free_retired() {
  for (backend::BufferId b : retired_) destroy_buffer(b);
  retired_.clear();
}

void VulkanDevice::begin_step() {
  abandon_step();  // a step that threw before end_step and was not abandoned
  ops_hash_ = kHashSeed;
  recording_ = true;
}

void VulkanDevice::end_step() {
  if (!recording_) fail_as(ErrorKind::internal, "Vulkan device: end_step() without begin_step()");
  recording_ = false;
  if (ops_.empty()) return free_retired();
  ++stats_.steps;
  std::size_t found = recordings_.size();
  for (std::size_t i = 0; i < recordings_.size() && found == recordings_.size(); ++i) {
    const Recording& r = recordings_[i];
    if (r.hash == ops_hash_ && r.ops.size() == ops_.size() &&
        std::memcmp(r.ops.data(), ops_.data(), ops_.size() * sizeof(Op)) == 0)
      found = i;
  }
  if (found < recordings_.size()) {
    ++stats_.replayed;
  } else {
    if (reuse_ && recordings_.size() >= kMaxRecordings) {
      std::size_t lru = 0;
      for (std::size_t i = 1; i < recordings_.size(); ++i)
        if (recordings_[i].last_used < recordings_[lru].last_used) lru = i;
      drop_recording(lru);
    }
    recordings_.push_back(record(ops_, ops_hash_));
    found = recordings_.size() - 1;
    ++stats_.recorded;
  }
  Recording& r = recordings_[found];
  r.last_used = stats_.steps;
  ops_.clear();
  submit_and_wait(r.cmd, "vkQueueSubmit (step)");
  if (!reuse_) drop_recording(found);
  free_retired();
}

}  // namespace ringlm::vulkan
