#!/usr/bin/env python3
"""llama-quantize's files on the Vulkan device (issue #31): tests/data/gguf/tiny-Q4_K_M.gguf
(Q4_K, Q6_K, Q8_0, Q5_0 and F16 matrices, a Q8_0 tied LM head) and tiny-IQ4_XS.gguf
(IQ4_XS, IQ4_NL, Q5_1, Q8_0) run with `--device vulkan --weights stored`, every matrix
uploaded as the file stores its blocks and dequantized in the shader. Compared per row
(48-token prefill, the 16-token window wrapping, then 8 decode steps) with float64 over the numpy-decoded weights
(tests/model/gguf_published_test.py's reference) and with the CPU's exact path
(`--activations f32 --weights stored`): cosine >= 0.9999 and the same argmax at every row.
Passes, saying so, where the machine has no Vulkan device."""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import gguf_published_test as pub  # noqa: E402
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_gguf_device")
DATA = os.environ.get("RINGLM_TEST_DATA_DIR", os.path.join(HERE, "..", "data"))
os.makedirs(TMP, exist_ok=True)


def main():
    devices = subprocess.run([RINGLM, "devices"], check=True, capture_output=True, text=True).stdout
    if not any(line.startswith("vulkan:0 ") for line in devices.splitlines()):
        print("SKIP: no Vulkan device on this machine")
        return
    ids = [2] + list(np.random.default_rng(5).integers(0, 768, size=48 + 8 - 1))
    failures = []
    for name in ("tiny-Q4_K_M.gguf", "tiny-IQ4_XS.gguf"):
        path = os.path.join(DATA, "gguf", name)
        c = pub.json.loads(subprocess.run([RINGLM, "inspect", path, "--config"], check=True, capture_output=True,
                                          text=True).stdout)
        c = c.get("text_config", c)
        W, types = pub.reference_weights(path)
        print(f"     {name}: tensor types {dict(sorted(types.items()))}")
        want = ref.forward((c, W), ids)
        gpu = logits_cli.run_logits(RINGLM, TMP, path, ids, 48, "--device", "vulkan", "--weights", "stored")
        cpu = logits_cli.run_logits(RINGLM, TMP, path, ids, 48, "--activations", "f32", "--weights", "stored")
        for label, other in (("float64", want), ("the CPU f32 path", cpu)):
            cos, agree = logits_cli.cosine_and_argmax(gpu, other)
            ok = agree.all() and cos.min() >= 0.9999
            print(f"{'ok  ' if ok else 'FAIL'} {name}: Vulkan vs {label}: argmax_agreement={agree.mean():.4f} "
                  f"min_cos={cos.min():.8f}")
            if not ok:
                failures.append(f"{name} vs {label}")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
