# SPDX-License-Identifier: MIT
"""A small suite on the simulated device for the pytest plugin
(tests/e2e/test_pytest_plugin.py): each test's name says what the plugin
must conclude; the lines marked `# @name` are the lines it must name."""
import pytest
from gpu_sim import Buffer, MiB

kept = []
cache = {}


@pytest.fixture(scope="module")
def model():
    return Buffer(64 * MiB)  # @model


@pytest.fixture
def batch():
    return Buffer(4 * MiB)  # @batch


def test_clean_uses_the_module_fixture(model, batch):
    scratch = Buffer(16 * MiB)
    del scratch


def test_leaks_into_a_module_list():
    kept.append(Buffer(32 * MiB))  # @leak


def test_leaks_twice_from_one_line():
    for _ in range(2):
        kept.append(Buffer(3 * MiB))  # @leak_twice


@pytest.mark.limit_gpu_memory("20 MiB")
def test_over_its_limit():
    a = Buffer(16 * MiB)
    b = Buffer(8 * MiB)
    del a, b


@pytest.mark.limit_gpu_memory("24 MiB")
def test_at_its_limit():
    a = Buffer(16 * MiB)
    b = Buffer(8 * MiB)
    del a, b


@pytest.mark.no_gpu_leak_check
def test_leak_not_checked():
    kept.append(Buffer(1 * MiB))


@pytest.mark.gpu_leaks(warmups=1)
def test_cache_filled_by_the_warmup():
    if "table" not in cache:
        cache["table"] = Buffer(2 * MiB)  # @cache
    scratch = Buffer(1 * MiB)
    del scratch


def test_cache_without_warmup():
    if "other" not in cache:
        cache["other"] = Buffer(5 * MiB)  # @cache_other


def test_fails_on_its_own():
    kept.append(Buffer(7 * MiB))
    assert False, "the test's own failure"


@pytest.mark.xfail(reason="expected", strict=True)
def test_xfails():
    kept.append(Buffer(6 * MiB))
    assert False
