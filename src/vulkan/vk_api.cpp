#include "vulkan/vk_api.h"

#include <dlfcn.h>

#include <mutex>

namespace ringlm::vulkan {

#define RINGLM_VK_DEFINE(name) PFN_##name name = nullptr;
RINGLM_VK_INSTANCE_FUNCTIONS(RINGLM_VK_DEFINE)
#undef RINGLM_VK_DEFINE

namespace {

VkInstance create_instance(std::string& why) {
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "the Vulkan loader (libvulkan.so.1) is not installed";
    return VK_NULL_HANDLE;
  }
  auto get_proc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!get_proc) {
    why = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return VK_NULL_HANDLE;
  }
  auto create = reinterpret_cast<PFN_vkCreateInstance>(get_proc(VK_NULL_HANDLE, "vkCreateInstance"));
  if (!create) {
    why = "the Vulkan loader has no vkCreateInstance";
    return VK_NULL_HANDLE;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ringlm";
  app.apiVersion = VK_API_VERSION_1_1;  // the newest core features ringlm needs
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult r = create(&info, nullptr, &instance);
  if (r != VK_SUCCESS) {
    why = std::string("vkCreateInstance failed: ") + result_name(r) +
          (r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver is installed)" : "");
    return VK_NULL_HANDLE;
  }
  // Device-level functions through the instance: the loader's trampolines serve every device.
#define RINGLM_VK_LOAD(name)                                                     \
  name = reinterpret_cast<PFN_##name>(get_proc(instance, #name));                \
  if (!name) {                                                                   \
    why = "the Vulkan loader has no " #name;                                     \
    return VK_NULL_HANDLE;                                                       \
  }
  RINGLM_VK_INSTANCE_FUNCTIONS(RINGLM_VK_LOAD)
#undef RINGLM_VK_LOAD
  return instance;
}

}  // namespace

VkInstance shared_instance(std::string& why) {
  static std::once_flag once;
  static VkInstance instance = VK_NULL_HANDLE;
  static std::string reason;
  std::call_once(once, [] { instance = create_instance(reason); });
  why = reason;
  return instance;
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VK_ERROR (other)";
  }
}

}  // namespace ringlm::vulkan
