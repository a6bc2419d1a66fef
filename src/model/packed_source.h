// Reads a packed model directory (packed_format.h, docs/convert.md) as an io::TensorSource:
// weights.rlpk and the sidecar's int8 tables are memory-mapped, never copied, so opening is
// a few header reads and a table's rows become resident only when a token uses them.
//
// Tensors presented: every entry of weights.rlpk (Q4_0 entries with TensorView::packed set),
// plus embed_tokens.weight [V, D] and embed_tokens_per_layer.weight [Vp, L*ld] as I8 views
// of the sidecar with TensorView::row_scales pointing into the mapped .scale.f32 files. A
// q4p16 entry's NAME.row_factors become its row_scales when any differs from 1.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "io/tensor.h"
#include "model/config.h"

namespace ringlm::model {

// Throws ringlm::Error naming the file and the tensor, field or byte range at fault for a bad
// magic or version, a malformed index, a tensor range outside the file, misaligned or
// overlapping, a byte count that does not match its dtype and shape, or a sidecar file
// whose size or meta.json disagrees with `config`.
std::unique_ptr<io::TensorSource> open_packed_dir(const std::filesystem::path& dir, const ModelConfig& config);

// The index's "q4_0_rule" (packed_format.h): kQ4RuleGgml for a version 1 file, which has none.
std::string packed_q4_rule(const std::filesystem::path& dir);

}  // namespace ringlm::model
