#include "vulkan/devices.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "vulkan/vulkan_device.h"

namespace ringlm::vulkan {

namespace {

std::string version_text(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

bool has_extension(VkPhysicalDevice phys, const char* name) {
  std::uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

backend::DeviceInfo describe(VkPhysicalDevice phys, int index) {
  backend::DeviceInfo info;
  info.index = index;
  info.api = "vulkan";
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  const bool has_driver_props = has_extension(phys, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  props.pNext = &subgroup;
  if (has_driver_props) subgroup.pNext = &driver;
  vkGetPhysicalDeviceProperties2(phys, &props);
  info.name = props.properties.deviceName;
  info.type = type_name(props.properties.deviceType);
  info.api_version = version_text(props.properties.apiVersion);
  info.driver = has_driver_props ? std::string(driver.driverName) + " " + driver.driverInfo
                                 : "driver version " + std::to_string(props.properties.driverVersion);
  info.subgroup_size = subgroup.subgroupSize;

  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &storage16;
  const bool has_f16_ext = has_extension(phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) ||
                           VK_API_VERSION_MINOR(props.properties.apiVersion) >= 2;
  if (has_f16_ext) storage16.pNext = &f16;
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  const bool has_dot_ext = has_extension(phys, "VK_KHR_shader_integer_dot_product");
  if (has_dot_ext) f16.pNext = &dot;
  vkGetPhysicalDeviceFeatures2(phys, &features);
  info.fp16_arithmetic = has_f16_ext && f16.shaderFloat16;
  info.storage_16bit = storage16.storageBuffer16BitAccess;
  // The extension and its feature (f16.pNext is only read when has_f16_ext).
  info.int8_dot_product = has_dot_ext && has_f16_ext && dot.shaderIntegerDotProduct;

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(phys, &mem);
  for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.memory_bytes = std::max<std::uint64_t>(info.memory_bytes, mem.memoryHeaps[h].size);
  return info;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  std::uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(instance, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPhysicalDevice> out(n);
  if (vkEnumeratePhysicalDevices(instance, &n, out.data()) != VK_SUCCESS) return {};
  out.resize(n);
  return out;
}

}  // namespace

std::vector<backend::DeviceInfo> list_devices(std::string& why) {
  VkInstance instance = shared_instance(why);
  if (!instance) return {};
  std::vector<backend::DeviceInfo> out;
  const auto phys = physical_devices(instance);
  for (std::size_t i = 0; i < phys.size(); ++i) out.push_back(describe(phys[i], static_cast<int>(i)));
  if (out.empty()) why = "the Vulkan loader reports no devices";
  return out;
}

std::unique_ptr<backend::Device> open_device(int index) {
  std::string why;
  VkInstance instance = shared_instance(why);
  if (!instance) fail_as(ErrorKind::unsupported, "--device vulkan:", index, ": ", why);
  const auto phys = physical_devices(instance);
  if (index < 0 || static_cast<std::size_t>(index) >= phys.size())
    fail_as(ErrorKind::invalid_argument, "--device vulkan:", index, ": there are ", phys.size(),
            " Vulkan devices (`ringlm devices` lists them)");
  return std::make_unique<VulkanDevice>(phys[index], describe(phys[index], index));
}

}  // namespace ringlm::vulkan
