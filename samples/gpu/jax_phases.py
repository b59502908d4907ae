# SPDX-License-Identifier: MIT
"""A JAX program whose peak falls while XLA compiles (issue 33 item 9), run by
run_xla_phases_validation.sh under `cumemtrace run`:

  train_step (jax.profiler.TraceAnnotation, an NVTX range in TSL's domain)
      holds a 256 MiB array, then calls a jitted function for the first time
      (XLA compiles jit_step: its ranges XlaCompileBackend, XlaEmitLlvmIr,
      XlaCompileGpuAsm, ... inside train_step) and runs it; then 5 more
      steps, each under its own train_step range, with no compilation.

Writes --json FILE: the JAX version and the device."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w).sum(axis=0)

    keep = []
    for i in range(6):
        with jax.profiler.TraceAnnotation("train_step"):
            x = jnp.ones((8192, 8192), dtype=jnp.float32)  # 256 MiB
            w = jnp.ones((8192, 1024), dtype=jnp.float32)
            y = step(x, w)
            y.block_until_ready()
            keep.append(y)
    with open(args.json, "w") as f:
        json.dump({"jax": jax.__version__, "device": str(jax.devices()[0])}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
