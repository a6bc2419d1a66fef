// The ops of backend::Device recorded as compute dispatches (shaders/*.comp). Each op checks
// its operands' ranges against the buffers, so a wrong size is an error, never a read past
// the end of device memory.
#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "vulkan/vulkan_device.h"

namespace ringlm::vulkan {

using backend::Ref;

namespace {
constexpr std::uint32_t kGroup = 256;  // the local_size_x of every shader but matmul_tiled (64)

std::uint32_t u32(std::uint64_t v, const char* what) {
  if (v > UINT32_MAX) fail_as(ErrorKind::resource_limit, "Vulkan backend: ", what, " (", v, ") exceeds 32 bits");
  return static_cast<std::uint32_t>(v);
}
}  // namespace

void VulkanDevice::check_range(Ref r, std::uint64_t words, const char* op, const char* operand) const {
  const Buffer& b = buffer(r.buf, op);
  if (r.word + words > b.bytes / 4)
    fail_as(ErrorKind::internal, "Vulkan device: ", op, " reads or writes ", operand, " words [", r.word, ", ",
            r.word + words, ") past ", b.what, " (", b.bytes / 4, " words)");
}

void VulkanDevice::dispatch(Shader s, const backend::BufferId* bufs, std::uint32_t n_bufs, const void* push,
                            std::uint32_t push_bytes, std::uint32_t gx, std::uint32_t gy, const char* op) {
  if (!recording_) fail_as(ErrorKind::internal, "Vulkan device: ", op, " outside a step");
  if (gx == 0 || gy == 0) return;
  if (gx > max_groups_ || gy > max_groups_)
    fail_as(ErrorKind::resource_limit, "Vulkan device ", info_.index, " (", info_.name, "): ", op, " needs ", gx,
            " x ", gy, " workgroups, over the device's limit of ", max_groups_);
  Op o;
  if (push_bytes > sizeof o.push || n_bufs > 7)
    fail_as(ErrorKind::internal, "Vulkan device: ", op, " has ", push_bytes, " bytes of parameters");
  o.shader = static_cast<std::uint32_t>(s);
  o.n_bufs = n_bufs;
  o.gx = gx;
  o.gy = gy;
  o.push_bytes = push_bytes;
  for (std::uint32_t i = 0; i < n_bufs; ++i) {
    (void)buffer(bufs[i], op);  // throws for a buffer that is not there
    o.bufs[i] = bufs[i];
  }
  std::memcpy(o.push, push, push_bytes);
  // FNV-1a over the op's bytes: end_step looks the step up by this before comparing it whole.
  const auto* bytes = reinterpret_cast<const unsigned char*>(&o);
  for (std::size_t i = 0; i < sizeof o; ++i) ops_hash_ = (ops_hash_ ^ bytes[i]) * 0x100000001b3ull;
  ops_.push_back(o);
}

namespace {
// The ggml block layouts matmul_ggml.comp reads: its kind number, values and bytes per block.
struct GgmlFormat {
  std::uint32_t kind, elems, bytes;
};
bool ggml_format(backend::WeightLayout l, GgmlFormat& f) {
  using L = backend::WeightLayout;
  switch (l) {
    case L::q8_0: f = {0, 32, 34}; return true;
    case L::q4_1: f = {1, 32, 20}; return true;
    case L::q5_0: f = {2, 32, 22}; return true;
    case L::q5_1: f = {3, 32, 24}; return true;
    case L::q4_k: f = {4, 256, 144}; return true;
    case L::q5_k: f = {5, 256, 176}; return true;
    case L::q6_k: f = {6, 256, 210}; return true;
    case L::iq4_nl: f = {7, 32, 18}; return true;
    case L::iq4_xs: f = {8, 256, 136}; return true;
    default: return false;
  }
}
}  // namespace

void VulkanDevice::matmul(const backend::Weight& w, Ref in, std::span<const int> groups, Ref out,
                          std::int64_t out_stride) {
  std::int64_t n_rows = 0;
  for (const int g : groups) {
    if (g <= 0) fail_as(ErrorKind::internal, "Vulkan backend: a matmul row group of ", g, " rows");
    n_rows += g;
  }
  if (n_rows == 0) return;
  if (n_rows > (1 << 30)) fail_as(ErrorKind::internal, "Vulkan backend: a matmul over ", n_rows, " rows");
  // Only a q4p16 matrix on the float32 path has two shaders; every other one runs all rows
  // in one dispatch (its shader sums each row alike wherever the row sits).
  const bool two_shaders = w.layout == backend::WeightLayout::q4p16 && tiled_min_rows_ > 0 &&
                           !(w.int8_activations && int8_);
  if (!two_shaders) return matmul_op(w, in, static_cast<int>(n_rows), out, out_stride, {}, 0, 0, false);
  // The tiled shader for groups of >= tiled_min_rows_ rows, the row shader for the others:
  // each run of consecutive groups on one side is one dispatch. Each shader computes a row
  // from that row alone (the tiled one wherever the row sits in its tiles), so a row's bits
  // depend on its group's size only.
  const std::uint64_t cols = static_cast<std::uint64_t>(w.cols), stride = static_cast<std::uint64_t>(out_stride);
  std::uint64_t start = 0;
  for (std::size_t i = 0; i < groups.size();) {
    const bool tiled = groups[i] >= tiled_min_rows_;
    int n = 0;
    for (; i < groups.size() && (groups[i] >= tiled_min_rows_) == tiled; ++i) n += groups[i];
    matmul_op(w, in.at(start * cols), n, out.at(start * stride), out_stride, {}, 0, 0, tiled);
    start += static_cast<std::uint64_t>(n);
  }
}

void VulkanDevice::matmul_rows(const backend::Weight& w, Ref in, Ref ids, int max_ids, std::int64_t row_base,
                               Ref out) {
  if (max_ids <= 0) return;
  if (!ids.buf || row_base < 0)
    fail_as(ErrorKind::internal, "Vulkan backend: matmul_rows without a row list or with row base ", row_base);
  matmul_op(w, in, 1, out, w.rows, ids, max_ids, row_base, false);
}

void VulkanDevice::matmul_op(const backend::Weight& w, Ref in, int n_rows, Ref out, std::int64_t out_stride, Ref ids,
                             int max_ids, std::int64_t row_base, bool tiled) {
  const std::uint64_t rows = static_cast<std::uint64_t>(w.rows), cols = static_cast<std::uint64_t>(w.cols);
  GgmlFormat g{};
  const bool ggml = ggml_format(w.layout, g);
  std::uint64_t weight_words = 0;
  std::uint32_t kind = 0;
  switch (w.layout) {
    case backend::WeightLayout::f32: weight_words = rows * cols; kind = 0; break;
    case backend::WeightLayout::f16: weight_words = rows * cols / 2; kind = 1; break;
    case backend::WeightLayout::bf16: weight_words = rows * cols / 2; kind = 2; break;
    case backend::WeightLayout::q4p16: weight_words = (rows + 15) / 16 * (cols / 32) * 72; kind = 3; break;
    default: weight_words = (rows * (cols / std::max(g.elems, 1u)) * g.bytes + 3) / 4; kind = g.kind; break;
  }
  const bool bad_cols = ggml ? cols % g.elems != 0 : (kind != 0 && cols % 2 != 0) || (kind == 3 && cols % 32 != 0);
  if (rows == 0 || cols == 0 || bad_cols)
    fail_as(ErrorKind::unsupported, "Vulkan backend: a ", backend::weight_layout_name(w.layout), " matrix of ", rows,
            " x ", cols, " is not supported");
  if (out_stride < w.rows)
    fail_as(ErrorKind::internal, "Vulkan backend: matmul output stride ", out_stride, " under ", w.rows, " rows");
  const std::uint64_t stride = static_cast<std::uint64_t>(out_stride);
  const bool listed = ids.buf != 0;
  check_range({w.buf, 0}, weight_words, "matmul", "the weight");
  check_range(in, cols * n_rows, "matmul", "the input");
  if (listed) {
    check_range(ids, 1 + static_cast<std::uint64_t>(max_ids), "matmul_rows", "the row list");
    check_range(out, static_cast<std::uint64_t>(max_ids), "matmul_rows", "the output");
  } else {
    check_range(out, stride * (n_rows - 1) + rows, "matmul", "the output");
  }
  struct {
    std::uint32_t kind, rows, cols, x_off, y_off, w_off, y_stride, row_bytes, ids_off, row_base, ids_max;
  } push{kind, u32(rows, "matmul rows"), u32(cols, "matmul cols"), u32(in.word, "offset"), u32(out.word, "offset"), 0,
         u32(stride, "matmul output stride"), ggml ? u32(cols / g.elems * g.bytes, "row bytes") : 0,
         listed ? u32(ids.word, "offset") : 0xFFFFFFFFu, u32(static_cast<std::uint64_t>(row_base), "row base"),
         static_cast<std::uint32_t>(max_ids)};
  if (!listed && w.int8_activations && int8_ &&
      (w.layout == backend::WeightLayout::q4p16 || w.layout == backend::WeightLayout::q8_0))
    return matmul_int8(w, in, n_rows, out, stride);
  if (!listed && tiled && w.layout == backend::WeightLayout::q4p16 && tiled_min_rows_ > 0)
    return matmul_tiled(w, in, n_rows, out, stride);
  // Binding 3 is the row list; without one any buffer fills it (the shader does not read it).
  const backend::BufferId bufs[] = {w.buf, in.buf, out.buf, listed ? ids.buf : in.buf};
  // Workgroups cover 8 (ggml) or 16 rows, or as many list entries.
  const std::uint64_t per_group = ggml ? 8 : 16, units = listed ? static_cast<std::uint64_t>(max_ids) : rows;
  const Shader s = ggml ? static_cast<Shader>(static_cast<int>(Shader::matmul_ggml) + static_cast<int>(kind))
                        : Shader::matmul;
  dispatch(s, bufs, 4, &push, sizeof push, u32((units + per_group - 1) / per_group, "row groups"),
           static_cast<std::uint32_t>(n_rows), listed ? "matmul_rows" : "matmul");
}

void VulkanDevice::matmul_tiled(const backend::Weight& w, Ref in, int n_rows, Ref out, std::uint64_t stride) {
  // Ranges were checked by matmul_op. Workgroups: 64 weight rows (4 q4p16 groups) x 32 input rows.
  struct {
    std::uint32_t rows, cols, x_off, y_off, y_stride, n_in;
  } push{u32(static_cast<std::uint64_t>(w.rows), "matmul rows"), u32(static_cast<std::uint64_t>(w.cols), "matmul cols"),
         u32(in.word, "offset"), u32(out.word, "offset"), u32(stride, "matmul output stride"),
         static_cast<std::uint32_t>(n_rows)};
  const backend::BufferId bufs[] = {w.buf, in.buf, out.buf};
  dispatch(fp16_ ? Shader::matmul_tiled_f16 : Shader::matmul_tiled, bufs, 3, &push, sizeof push,
           u32((static_cast<std::uint64_t>(w.rows) + 63) / 64, "row tiles"),
           static_cast<std::uint32_t>((n_rows + 31) / 32), "matmul (tiled)");
}

void VulkanDevice::matmul_int8(const backend::Weight& w, Ref in, int n_rows, Ref out, std::uint64_t stride) {
  const std::uint64_t blocks = static_cast<std::uint64_t>(n_rows) * static_cast<std::uint64_t>(w.cols / 32);
  const std::uint64_t need = 4 * 9 * blocks;  // 8 words of codes and a scale per block
  if (!q8_scratch_ || buffer(q8_scratch_, "matmul").bytes < need) {
    // Grown inside a step: the old buffer may be bound by this step's ops, so it is freed after.
    if (q8_scratch_) retired_.push_back(q8_scratch_);
    q8_scratch_ = 0;
    q8_scratch_ = create_buffer(std::max<std::uint64_t>(need, 1 << 20), backend::Memory::device,
                                "int8 activations");
  }
  struct {
    std::uint32_t blocks, x_off, q_off;
  } qpush{u32(blocks, "activation blocks"), u32(in.word, "offset"), 0};
  const backend::BufferId qbufs[] = {in.buf, q8_scratch_};
  dispatch(Shader::quantize_q8, qbufs, 2, &qpush, sizeof qpush, u32((blocks + kGroup - 1) / kGroup, "blocks"), 1,
           "matmul (int8 activations)");
  const bool q8 = w.layout == backend::WeightLayout::q8_0;
  struct {
    std::uint32_t rows, cols, q_off, y_off, y_stride, row_bytes;
  } push{u32(static_cast<std::uint64_t>(w.rows), "matmul rows"), u32(static_cast<std::uint64_t>(w.cols), "matmul cols"),
         0, u32(out.word, "offset"), u32(stride, "matmul output stride"),
         q8 ? u32(static_cast<std::uint64_t>(w.cols) / 32 * 34, "row bytes") : 0};
  const backend::BufferId bufs[] = {w.buf, q8_scratch_, out.buf};
  dispatch(q8 ? Shader::matmul_q8_q8_0 : Shader::matmul_q8, bufs, 3, &push, sizeof push,
           u32((static_cast<std::uint64_t>(w.rows) + 15) / 16, "row groups"), static_cast<std::uint32_t>(n_rows),
           "matmul (int8)");
}

void VulkanDevice::rms_norm(Ref x, Ref weight, int n, int count, float eps, Ref y) {
  if (count <= 0) return;
  check_range(x, static_cast<std::uint64_t>(n) * count, "rms_norm", "x");
  check_range(y, static_cast<std::uint64_t>(n) * count, "rms_norm", "y");
  if (weight.buf) check_range(weight, static_cast<std::uint64_t>(n), "rms_norm", "the weight");
  struct {
    std::uint32_t n, has_weight;
    float eps;
    std::uint32_t x_off, w_off, y_off, count;
  } push{static_cast<std::uint32_t>(n), weight.buf ? 1u : 0u, eps, u32(x.word, "offset"), u32(weight.word, "offset"),
         u32(y.word, "offset"), static_cast<std::uint32_t>(count)};
  const backend::BufferId bufs[] = {x.buf, weight.buf ? weight.buf : x.buf, y.buf};
  const std::uint32_t gx = std::min<std::uint32_t>(count, 65535), gy = (count + 65534) / 65535;
  dispatch(Shader::rms_norm, bufs, 3, &push, sizeof push, gx, gy, "rms_norm");
}

void VulkanDevice::rope(Ref x, int d, int count, int per_row, Ref cos_sin) {
  if (count <= 0) return;
  check_range(x, static_cast<std::uint64_t>(d) * count, "rope", "x");
  check_range(cos_sin, static_cast<std::uint64_t>(d) * ((count + per_row - 1) / per_row), "rope", "the angles");
  struct {
    std::uint32_t d, per_row, x_off, cs_off, count;
  } push{static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(per_row), u32(x.word, "offset"),
         u32(cos_sin.word, "offset"), static_cast<std::uint32_t>(count)};
  const backend::BufferId bufs[] = {x.buf, cos_sin.buf};
  const std::uint32_t gx = std::min<std::uint32_t>(count, 65535), gy = (count + 65534) / 65535;
  dispatch(Shader::rope, bufs, 2, &push, sizeof push, gx, gy, "rope");
}

void VulkanDevice::elementwise(std::uint32_t op, Ref y, Ref x, Ref z, std::uint64_t n, float s, std::uint32_t width,
                               std::uint32_t stride, const char* name) {
  if (n == 0) return;
  struct {
    std::uint32_t op, n;
    float s;
    std::uint32_t y_off, x_off, z_off, width, stride;
  } push{op, u32(n, "element count"), s, u32(y.word, "offset"), u32(x.word, "offset"), u32(z.word, "offset"),
         width, stride};
  const backend::BufferId bufs[] = {y.buf, x.buf ? x.buf : y.buf, z.buf ? z.buf : y.buf};
  const std::uint64_t groups = std::min<std::uint64_t>((n + kGroup - 1) / kGroup, std::min(max_groups_, 4096u));
  dispatch(Shader::elementwise, bufs, 3, &push, sizeof push, static_cast<std::uint32_t>(groups), 1, name);
}

void VulkanDevice::add(Ref y, Ref x, std::int64_t n) {
  check_range(y, n, "add", "y");
  check_range(x, n, "add", "x");
  elementwise(0, y, x, {}, n, 0.0f, 1, 1, "add");
}

void VulkanDevice::scale(Ref y, std::int64_t n, float s) {
  check_range(y, n, "scale", "y");
  elementwise(1, y, {}, {}, n, s, 1, 1, "scale");
}

void VulkanDevice::soft_cap(Ref x, std::int64_t n, float cap) {
  check_range(x, n, "soft_cap", "x");
  elementwise(2, x, {}, {}, n, cap, 1, 1, "soft_cap");
}

void VulkanDevice::copy(Ref src, Ref dst, std::int64_t n) {
  check_range(src, n, "copy", "the source");
  check_range(dst, n, "copy", "the destination");
  elementwise(3, dst, src, {}, n, 0.0f, 1, 1, "copy");
}

void VulkanDevice::gelu_mul(Ref gate, Ref up, int width, int rows, int up_stride, Ref out) {
  if (rows <= 0 || width <= 0) return;
  const std::uint64_t n = static_cast<std::uint64_t>(width) * rows;
  check_range(gate, n, "gelu_mul", "the gate");
  check_range(out, n, "gelu_mul", "the output");
  check_range(up, static_cast<std::uint64_t>(up_stride) * (rows - 1) + width, "gelu_mul", "up");
  elementwise(4, out, up, gate, n, 0.0f, static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(up_stride),
              "gelu_mul");
}

void VulkanDevice::kv_store(const backend::KvLayer& kv, Ref k, Ref v, Ref slots, Ref positions, int n) {
  if (n <= 0) return;
  const std::uint64_t row = static_cast<std::uint64_t>(kv.n_kv_heads) * kv.head_dim;
  if (row % 2 != 0) fail_as(ErrorKind::unsupported, "Vulkan backend: a KV row of ", row, " values (odd) is not supported");
  check_range(k, row * n, "kv_store", "K");
  check_range(v, row * n, "kv_store", "V");
  check_range(slots, n, "kv_store", "the slots");
  check_range(positions, n, "kv_store", "the positions");
  check_range({kv.k, 0}, row / 2 * kv.n_slots, "kv_store", "the K cache");
  check_range({kv.v, 0}, row / 2 * kv.n_slots, "kv_store", "the V cache");
  check_range({kv.pos, 0}, kv.n_slots, "kv_store", "the positions cache");
  if (slots.buf != positions.buf)
    fail_as(ErrorKind::internal, "Vulkan backend: kv_store wants the slots and positions in one buffer");
  struct {
    std::uint32_t row_floats, k_off, v_off, slots_off, positions_off, n;
  } push{u32(row, "row"), u32(k.word, "offset"), u32(v.word, "offset"), u32(slots.word, "offset"),
         u32(positions.word, "offset"), static_cast<std::uint32_t>(n)};
  const backend::BufferId bufs[] = {k.buf, v.buf, kv.k, kv.v, kv.pos, slots.buf};
  dispatch(Shader::kv_store, bufs, 6, &push, sizeof push, static_cast<std::uint32_t>(n), 1, "kv_store");
}

void VulkanDevice::attend(Ref q, int n_tokens, Ref q_pos, int n_heads, const backend::KvLayer& kv, int n_scan,
                          int window, float scale, Ref out, std::int64_t n_scan_word) {
  if (n_tokens <= 0) return;
  const int d = kv.head_dim;
  if (d % 2 != 0 || d > 512 || kv.n_kv_heads <= 0 || n_heads % kv.n_kv_heads != 0)
    fail_as(ErrorKind::unsupported, "Vulkan backend: attention with head_dim ", d, ", ", n_heads, " heads over ",
            kv.n_kv_heads, " KV heads is not supported (head_dim even and <= 512, heads a multiple of KV heads)");
  if (n_scan < 0 || n_scan > kv.n_slots)
    fail_as(ErrorKind::internal, "Vulkan backend: attend over ", n_scan, " of ", kv.n_slots, " slots");
  const std::uint64_t qwords = static_cast<std::uint64_t>(n_tokens) * n_heads * d;
  check_range(q, qwords, "attend", "Q");
  check_range(out, qwords, "attend", "the output");
  check_range(q_pos, n_tokens, "attend", "the query positions");
  check_range({kv.k, 0}, static_cast<std::uint64_t>(kv.n_slots) * kv.n_kv_heads * d / 2, "attend", "the K cache");
  check_range({kv.v, 0}, static_cast<std::uint64_t>(kv.n_slots) * kv.n_kv_heads * d / 2, "attend", "the V cache");
  check_range({kv.pos, 0}, kv.n_slots, "attend", "the positions cache");
  if (n_scan_word >= 0) check_range({q_pos.buf, static_cast<std::uint64_t>(n_scan_word)}, 1, "attend", "the scan bound");
  struct {
    std::uint32_t n_heads, n_kv_heads, head_dim, n_scan;
    std::int32_t window;
    float scale;
    std::uint32_t q_off, qpos_off, out_off;
    std::int32_t scan_word;
  } push{static_cast<std::uint32_t>(n_heads), static_cast<std::uint32_t>(kv.n_kv_heads), static_cast<std::uint32_t>(d),
         static_cast<std::uint32_t>(n_scan), window, scale, u32(q.word, "offset"), u32(q_pos.word, "offset"),
         u32(out.word, "offset"),
         n_scan_word >= 0 ? static_cast<std::int32_t>(u32(static_cast<std::uint64_t>(n_scan_word), "offset")) : -1};
  const backend::BufferId bufs[] = {q.buf, kv.k, kv.v, kv.pos, q_pos.buf, out.buf};
  dispatch(Shader::attend, bufs, 6, &push, sizeof push, static_cast<std::uint32_t>(n_heads),
           static_cast<std::uint32_t>(n_tokens), "attend");
}

}  // namespace ringlm::vulkan
