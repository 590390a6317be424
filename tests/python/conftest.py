import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _kernel_variants():
    """The kernel variants this CPU runs (ops/cpu.h), best last."""
    import tensorvm

    return tensorvm._C.cpu_info()["variants_supported"]


def pytest_generate_tests(metafunc):
    # A module that uses the `kernel_variant` fixture (pytestmark usefixtures) runs each of
    # its tests once per variant this CPU supports, so every path is checked here, not
    # only the one the machine would pick.
    if "kernel_variant" in metafunc.fixturenames:
        metafunc.parametrize("kernel_variant", _kernel_variants(), indirect=True)


@pytest.fixture
def kernel_variant(request):
    import tensorvm

    before = tensorvm._C.cpu_info()["active"]
    tensorvm._C.set_kernel_variant(request.param)
    yield request.param
    tensorvm._C.set_kernel_variant(before)
