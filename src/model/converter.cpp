#include "model/converter.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_matmul.h"
#include "kernels/thread_pool.h"
#include "model/config.h"
#include "model/packed_format.h"
#include "model/tensor_manifest.h"
#include "model/weights.h"
#include "util/error.h"
#include "util/progress.h"

namespace ringlm::model {

namespace fs = std::filesystem;

namespace {

// Rows quantized per chunk: a multiple of 16 (whole q4p16 groups) so each chunk is one
// contiguous stretch of the packed matrix.
constexpr std::size_t kChunkRows = 2048;

// A file written under a temporary name and renamed over `path` by commit(); removed if
// never committed (an exception on the way out leaves no partial file behind).
class AtomicFile {
 public:
  explicit AtomicFile(fs::path path) : path_(std::move(path)), tmp_(path_.string() + ".tmp-convert") {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) fail_io(tmp_.string(), ": cannot create: ", std::strerror(errno));
  }
  ~AtomicFile() {
    if (f_) {
      std::fclose(f_);
      std::error_code ec;
      fs::remove(tmp_, ec);
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* p, std::size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail_io(tmp_.string(), ": write failed at byte ", written_, ": ", std::strerror(errno));
    written_ += n;
  }
  void pad_to(std::uint64_t offset) {
    static const char zeros[64] = {};
    if (offset < written_) fail_internal(tmp_.string(), ": internal error: offset ", offset, " already passed (", written_, ")");
    while (written_ < offset) write(zeros, static_cast<std::size_t>(std::min<std::uint64_t>(64, offset - written_)));
  }
  std::uint64_t written() const { return written_; }

  void commit() {
    if (std::fflush(f_) != 0) fail_io(tmp_.string(), ": write failed: ", std::strerror(errno));
#if defined(__unix__)
    if (::fsync(fileno(f_)) != 0) fail_io(tmp_.string(), ": fsync failed: ", std::strerror(errno));
#endif
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail_io(tmp_.string(), ": close failed: ", std::strerror(errno));
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec) fail_io(path_.string(), ": cannot rename from ", tmp_.string(), ": ", ec.message());
  }

 private:
  fs::path path_, tmp_;
  std::FILE* f_ = nullptr;
  std::uint64_t written_ = 0;
};

// Source rows [r0, r1) were read; drop their pages from our resident set (file-backed pages
// stay in the page cache, so this costs nothing if they are read again). Without it the
// whole 4.7 GB bf16 per-layer table of E2B would count as resident by the end.
void release_rows(const kernels::WeightMatrix& w, std::int64_t r0, std::int64_t r1) {
#if defined(__linux__)
  const std::size_t esize = w.dtype == io::DType::F32 ? 4 : 2;
  const std::size_t row = static_cast<std::size_t>(w.cols) * esize;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(w.data) + static_cast<std::size_t>(r0) * row;
  const auto begin = (first + page - 1) / page * page;
  const auto end = (first + static_cast<std::size_t>(r1 - r0) * row) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
  (void)w, (void)r0, (void)r1;
#endif
}

void check_float_source(const kernels::WeightMatrix& w, const std::string& name) {
  if (w.dtype != io::DType::F32 && w.dtype != io::DType::F16 && w.dtype != io::DType::BF16)
    fail_unsupported("convert: tensor ", name, ": source dtype ", io::dtype_name(w.dtype), " (expected F32, F16 or BF16)");
}

// Rows [0, w.rows) in q4p16, a chunk of whole 16-row groups at a time; each row's factor
// (q4_lattice.h) into *factors, written as the tensor's row_factors right after it.
void write_q4p16(AtomicFile& out, const kernels::WeightMatrix& w, std::vector<float>* factors,
                 kernels::Q4LatticeStats* stats) {
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  factors->assign(rows, 1.0f);
  std::vector<std::uint8_t> buf;
  std::vector<kernels::Q4LatticeStats> part(kernels::default_thread_pool().size() + 1);
  for (std::size_t r0 = 0; r0 < rows; r0 += kChunkRows) {
    const std::size_t n = std::min(kChunkRows, rows - r0);
    const std::size_t bytes = kernels::q4_packed_bytes(n, cols);
    buf.assign(bytes, 0);  // padding rows of the last group stay zero
    kernels::default_thread_pool().parallel_for(n, [&](std::size_t a, std::size_t b, std::size_t p) {
      std::vector<float> row(cols);
      std::vector<kernels::BlockQ4_0> blocks(cols / kernels::kQBlock);
      for (std::size_t i = a; i < b; ++i) {
        kernels::load_row_f32(w, static_cast<std::int64_t>(r0 + i), row.data());
        (*factors)[r0 + i] =
            kernels::quantize_row_q4_0_lattice(row.data(), w.dtype, blocks.data(), cols, true, &part[p]);
        kernels::q4_pack_row(blocks.data(), i, n, cols, buf.data());
      }
    });
    out.write(buf.data(), bytes);
    release_rows(w, static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r0 + n));
  }
  for (const auto& s : part) stats->add(s);
}

// Rows as float32, a chunk at a time.
void write_f32_rows(AtomicFile& out, const kernels::WeightMatrix& w) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  std::vector<float> buf;
  for (std::int64_t r0 = 0; r0 < w.rows; r0 += kChunkRows) {
    const std::int64_t n = std::min<std::int64_t>(kChunkRows, w.rows - r0);
    buf.resize(static_cast<std::size_t>(n) * cols);
    for (std::int64_t i = 0; i < n; ++i) kernels::load_row_f32(w, r0 + i, buf.data() + i * cols);
    out.write(buf.data(), buf.size() * 4);
    release_rows(w, r0, r0 + n);
  }
}

// Symmetric per-row int8 (kernels::quantize_row_i8): codes streamed to `codes`, the row
// scales (4 bytes a row: small) written to `scales` at the end.
void write_i8_table(AtomicFile& codes, AtomicFile& scales, const kernels::WeightMatrix& w, const std::string& what) {
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  ProgressStage progress("convert: " + what, rows, "rows");
  std::vector<float> row_scale(rows);
  std::vector<std::int8_t> buf;
  for (std::size_t r0 = 0; r0 < rows; r0 += kChunkRows) {
    const std::size_t n = std::min(kChunkRows, rows - r0);
    buf.resize(n * cols);
    kernels::default_thread_pool().parallel_for(n, [&](std::size_t a, std::size_t b, std::size_t) {
      std::vector<float> row(cols);
      for (std::size_t i = a; i < b; ++i) {
        kernels::load_row_f32(w, static_cast<std::int64_t>(r0 + i), row.data());
        row_scale[r0 + i] = kernels::quantize_row_i8(row.data(), buf.data() + i * cols, cols);
      }
    });
    codes.write(buf.data(), buf.size());
    release_rows(w, static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r0 + n));
    progress.add(n);
  }
  scales.write(row_scale.data(), rows * 4);
}

void copy_file_atomic(const fs::path& from, const fs::path& to) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (!in) fail_io(from.string(), ": cannot open: ", std::strerror(errno));
  AtomicFile out(to);
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) out.write(buf, n);
  const bool bad = std::ferror(in);
  std::fclose(in);
  if (bad) fail_io(from.string(), ": read error");
  out.commit();
}

void check_size(const fs::path& p, std::uint64_t want) {
  const auto got = fs::file_size(p);
  if (got != want) fail_internal(p.string(), ": internal error: wrote ", got, " bytes, planned ", want);
}

}  // namespace

ConvertResult convert_to_packed_dir(const fs::path& hf_dir, const fs::path& out_dir) {
  std::error_code ec;
  if (fs::exists(out_dir, ec) && fs::equivalent(hf_dir, out_dir, ec))
    fail("convert: the output directory ", out_dir.string(), " is the checkpoint directory");
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    fail(out_dir.string(), ": exists and is not a directory");
  const ModelConfig config = load_model_config(hf_dir);
  if (config.ple_dim <= 0) fail_unsupported(hf_dir.string(), "/config.json: convert needs per-layer embeddings (hidden_size_per_layer_input > 0)");
  const auto source = io::open_safetensors_dir(hf_dir);
  const ModelWeights w = bind_weights(*source, config);  // every tensor present, shapes checked
  fs::create_directories(out_dir / kSidecarDir, ec);
  if (ec) fail_io(out_dir.string(), ": cannot create: ", ec.message());
  // A previous conversion stops being loadable first, so an interrupted run never pairs an
  // old weights.rlpk with a half-rewritten sidecar.
  fs::remove(out_dir / kPackedFile, ec);

  ConvertResult result;
  for (const char* name : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                           "chat_template.jinja", "special_tokens_map.json"}) {
    if (!fs::is_regular_file(hf_dir / name, ec)) continue;
    copy_file_atomic(hf_dir / name, out_dir / name);
    result.copied.push_back(name);
  }

  // The sidecar, in the model card's layout.
  const fs::path side = out_dir / kSidecarDir;
  for (auto table : {&ModelWeights::embed_tokens, &ModelWeights::embed_tokens_ple, &ModelWeights::ple_model_projection})
    check_float_source(w.*table, tensor_name(table));
  {
    AtomicFile codes(side / "embed_per_layer.i8"), scales(side / "embed_per_layer.scale.f32");
    write_i8_table(codes, scales, w.embed_tokens_ple, std::string(kSidecarDir) + "/embed_per_layer.i8");
    codes.commit();
    scales.commit();
  }
  {
    AtomicFile codes(side / "embed_tokens.i8"), scales(side / "embed_tokens.scale.f32");
    write_i8_table(codes, scales, w.embed_tokens, std::string(kSidecarDir) + "/embed_tokens.i8");
    codes.commit();
    scales.commit();
  }
  {
    AtomicFile proj(side / "proj.f32");
    write_f32_rows(proj, w.ple_model_projection);
    proj.commit();
    AtomicFile norm(side / "proj_norm.f32");
    norm.write(w.ple_projection_norm.data(), w.ple_projection_norm.size() * 4);
    norm.commit();
    const std::string meta = sidecar_meta_json(config);
    AtomicFile m(side / "meta.json");
    m.write(meta.data(), meta.size());
    m.commit();
  }
  for (const SidecarFile& s : plan_sidecar(config)) {
    check_size(side / s.name, s.bytes);
    result.sidecar_bytes += s.bytes;
  }

  // weights.rlpk, last: its presence is what marks the directory as converted.
  const PackedPlan plan = plan_packed(config);
  const fs::path pack_path = out_dir / kPackedFile;
  {
    AtomicFile out(pack_path);
    char header[kPackedHeaderBytes] = {};
    std::memcpy(header, kPackedMagic, 8);
    std::memcpy(header + 8, &kPackedVersion, 4);
    const std::uint64_t index_len = plan.index_json.size();
    std::memcpy(header + 16, &index_len, 8);
    out.write(header, sizeof header);
    out.write(plan.index_json.data(), plan.index_json.size());
    ProgressStage progress("convert: " + std::string(kPackedFile), plan.file_bytes, "bytes");
    std::uint64_t reported = 0;
    std::vector<float> factors;  // of the last q4p16 tensor, written as the next tensor
    for (const PackedTensor& t : plan.tensors) {
      out.pad_to(t.offset);
      if (t.row_factors) {
        if (static_cast<std::int64_t>(factors.size()) != t.shape[0])
          fail_internal("convert: tensor ", t.name, ": no row factors from the matrix before it");
        out.write(factors.data(), factors.size() * 4);
        result.row_factor_bytes += t.bytes;
        factors.clear();
        progress.add(out.written() - reported);
        reported = out.written();
        continue;
      }
      // The member each planned tensor binds to (tensor_manifest.h); the head is the
      // embedding when tied (bind_weights), so it gets its own q4_0 copy here.
      const ManifestTensor mt{t.entry, t.layer, t.name, t.shape, true};
      if (t.shape.size() == 2) {
        const kernels::WeightMatrix& m = *matrix_of(w, mt);
        check_float_source(m, t.name);
        if (m.rows != t.shape[0] || m.cols != t.shape[1]) fail_internal("convert: tensor ", t.name, ": shape does not match the plan");
        if (t.dtype == io::DType::Q4_0) {
          write_q4p16(out, m, &factors, &result.q4);
          ++result.q4_matrices;
        } else {
          write_f32_rows(out, m);
          ++result.f32_matrices;
        }
      } else {
        const std::vector<float>* vp = vector_of(w, mt);
        const std::vector<float> v = vp ? *vp : std::vector<float>{*scalar_of(w, mt)};
        if (static_cast<std::int64_t>(v.size()) != t.shape[0]) fail_internal("convert: tensor ", t.name, ": size does not match the plan");
        out.write(v.data(), v.size() * 4);
      }
      if (out.written() != t.offset + t.bytes)
        fail_internal(pack_path.string(), ": internal error: tensor ", t.name, " ends at ", out.written(), ", planned ",
             t.offset + t.bytes);
      progress.add(out.written() - reported);
      reported = out.written();
    }
    out.commit();
  }
  check_size(pack_path, plan.file_bytes);
  result.packed_bytes = plan.file_bytes;
  {
    // What the q4_0 rule found (informational: `ringlm inspect` prints it).
    nlohmann::ordered_json q;
    q["q4_0_rule"] = kQ4RuleLattice;
    q["blocks"] = result.q4.blocks;
    q["lattice_blocks"] = result.q4.lattice;
    q["exact_blocks"] = result.q4.exact;
    q["rows_with_factor"] = result.q4.rows_scaled;
    q["row_factor_bytes"] = result.row_factor_bytes;
    const std::string text = q.dump(1) + "\n";
    AtomicFile f(out_dir / kQuantizationFile);
    f.write(text.data(), text.size());
    f.commit();
  }
  return result;
}

}  // namespace ringlm::model
