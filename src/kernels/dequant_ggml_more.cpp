// Scalar dequantization of the ggml block formats ringlm reads from GGUF files but has no
// fast kernel for (Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS; layouts in dequant_blocks.h).
// Matrices of these types run on the float path (rows decoded here, float32 activations);
// docs/gguf.md lists which type runs where. Each value is computed with the operations, in
// the order, of ggml's own reference decoder (a scale product, then at most one multiply and
// one subtraction), so results are bit-identical to it.
#include <cstring>

#include "kernels/dequant_ggml.h"
#include "util/float16.h"

// No fused multiply-add: each product and difference rounds on its own, as ggml's decoder's
// (and the numpy restatement in tests/io/gguf_py.py) do, on every target (aarch64 GCC would
// contract a * b - c otherwise).
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace ringlm::kernels {

namespace {

// The 5-bit code of value i (0..31) of a Q5_0 / Q5_1 block.
int q5_code(const std::uint8_t* qs, const std::uint8_t* qh_bytes, int i) {
  std::uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  const int low = i < 16 ? (qs[i] & 0x0f) : (qs[i - 16] >> 4);
  return low | static_cast<int>(((qh >> i) & 1u) << 4);
}

// Q3_K's 16 6-bit scales from its 12 packed bytes: the low four bits of scale j are the low
// (j < 8) or high (j >= 8) nibble of byte j % 8; the high two bits are bits 2*(j/4)..+1 of
// byte 8 + j % 4.
void q3k_scales(const std::uint8_t* p, int* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (p[j] & 0x0f) : (p[j - 8] >> 4);
    const int high = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = low | (high << 4);
  }
}

}  // namespace

void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = fp16_to_f32(src[b].d);
    for (int i = 0; i < kQK; ++i) dst[i] = static_cast<float>(q5_code(src[b].qs, src[b].qh, i) - 16) * d;
  }
}

void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = fp16_to_f32(src[b].d), m = fp16_to_f32(src[b].m);
    for (int i = 0; i < kQK; ++i) dst[i] = static_cast<float>(q5_code(src[b].qs, src[b].qh, i)) * d + m;
  }
}

// Q2_K: qs is two runs of 32 bytes; within run h (values 128h ..), bits 2s..2s+1 of byte l
// hold value 128h + 32s + l; value v uses scale byte v / 16.
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b, dst += kQKK) {
    const float d = fp16_to_f32(src[b].d), dmin = fp16_to_f32(src[b].dmin);
    for (int v = 0; v < kQKK; ++v) {
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      const int q = (src[b].qs[32 * h + l] >> (2 * s)) & 3;
      const std::uint8_t sc = src[b].scales[v / 16];
      const float dl = d * static_cast<float>(sc & 0x0f), ml = dmin * static_cast<float>(sc >> 4);
      dst[v] = dl * static_cast<float>(q) - ml;
    }
  }
}

// Q3_K: the two low bits of value v as in Q2_K; its high bit is bit (v / 32) of hmask[v % 32];
// a clear high bit subtracts 4. Scale j = v / 16, offset by -32.
void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b, dst += kQKK) {
    const float d = fp16_to_f32(src[b].d);
    int scales[16];
    q3k_scales(src[b].scales, scales);
    for (int v = 0; v < kQKK; ++v) {
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      const int low = (src[b].qs[32 * h + l] >> (2 * s)) & 3;
      const int q = low - (((src[b].hmask[l] >> (v / 32)) & 1) ? 0 : 4);
      const float dl = d * static_cast<float>(scales[v / 16] - 32);
      dst[v] = dl * static_cast<float>(q);
    }
  }
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = fp16_to_f32(src[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4nlValues[src[b].qs[j] & 0x0f]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4nlValues[src[b].qs[j] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    for (int ib = 0; ib < kQKK / 32; ++ib, dst += 32) {
      const int ls = ((src[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((src[b].scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const std::uint8_t* qs = src[b].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0x0f]);
        dst[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace ringlm::kernels
