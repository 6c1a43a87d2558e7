"""Every argument error of every op raised on CUDA tensors, in one process: each must raise a
RuntimeError (never crash). Run by scripts/gpu_check.sh before the test suite, so that a crash
gets a native backtrace."""
import sys

import torch

sys.path.insert(0, "tests")
import conftest  # noqa: E402,F401
import test_augment  # noqa: E402
import test_color  # noqa: E402
import test_filter  # noqa: E402
import test_geometry  # noqa: E402

assert torch.cuda.is_available()
test_geometry.test_errors_name_the_op_and_argument("cuda")
test_geometry.test_device_mismatch_errors()
test_geometry.test_empty_batch("cuda")
test_color.test_errors_name_the_op_and_argument("cuda")
test_color.test_functional_value_errors("cuda")
test_filter.test_errors("cuda")
test_augment.test_errors("cuda")
test_augment.test_empty_batch_and_empty_program("cuda")
torch.cuda.synchronize()
print("all error paths raised cleanly")
