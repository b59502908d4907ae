# SPDX-License-Identifier: MIT
"""PyTorch tests for the pytest plugin on a real GPU
(samples/gpu/run_pytest_validation.sh, docs/python.md). Each name says what
`pytest --cumemtrace` must conclude; the lines marked `# @name` are the
lines it must name."""
import functools

import pytest
import torch

MiB = 1 << 20
_kept = []  # a module-level list: what a test puts here outlives it


@pytest.fixture(scope="module")
def encoder():
    """A module-scoped model: charged to this fixture's setup, never to the
    first test that uses it."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()  # @encoder


def test_keeps_a_tensor_in_a_module_list():
    x = torch.randn(1024, 1024, device="cuda")
    _kept.append(x * 2)  # @kept: 4 MiB that outlive the test


def test_trains_a_small_model_and_frees_it():
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(10):
        x = torch.randn(256, 512, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    assert torch.isfinite(loss).item()
    del model, opt, x, loss


def test_inference_with_the_module_fixture(encoder):
    with torch.no_grad():
        y = encoder(torch.randn(64, 1024, device="cuda"))
    assert y.shape == (64, 1024)


@pytest.mark.limit_gpu_memory("64 MiB")
def test_over_its_budget():
    big = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")  # @big: 256 MiB against 64 MiB
    big.fill_(1)
    del big


@pytest.mark.limit_gpu_memory("64 MiB")
def test_within_its_budget():
    small = torch.empty(16 * MiB, dtype=torch.uint8, device="cuda")
    small.fill_(1)
    del small


@functools.lru_cache(maxsize=None)
def lookup_table():
    return torch.arange(1 << 20, device="cuda", dtype=torch.float32)  # @table: a cache filled once


@pytest.mark.gpu_leaks(warmups=1)
def test_cache_filled_on_first_call():
    assert lookup_table().sum().item() > 0
