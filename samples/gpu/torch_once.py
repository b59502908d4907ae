# SPDX-License-Identifier: MIT
"""Evidence for the default suppressions and the caching-allocator advice
(docs/check.md): PyTorch running one matmul (cuBLAS), one linear layer with
bias (cuBLASLt) and one convolution (cuDNN), then dropping every tensor it
made. Run it with and without PYTORCH_NO_CUDA_MEMORY_CACHING=1: what is
still allocated at exit is the caching allocator's cache, PyTorch's own
one-time workspaces, or the libraries'."""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        print("torch_once: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    c = a @ b  # cuBLAS
    lin = torch.nn.Linear(1024, 512).to(dev)
    d = lin(a)  # cuBLASLt (bias epilogue)
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).to(dev)
    x = torch.randn(8, 16, 64, 64, device=dev)
    y = conv(x)  # cuDNN
    torch.cuda.synchronize()
    print(f"torch_once: {c.sum().item():.1f} {d.sum().item():.1f} {y.sum().item():.1f}")
    del a, b, c, d, x, y, lin, conv
    torch.cuda.synchronize()
    print(f"torch_once: allocated {torch.cuda.memory_allocated()} B, reserved {torch.cuda.memory_reserved()} B "
          "after dropping every tensor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
