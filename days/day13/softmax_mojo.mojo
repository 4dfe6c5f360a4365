# Day 13, route 5: the kernel in Mojo (softmax_mojo.py beside this file compiles and launches it).
#
# One block of THREADS threads per row, as day 04: each thread keeps an online (max, sum) over its columns
# (tid, tid + THREADS, ...), the block merges the pairs (butterfly shuffles within a warp, shared memory across
# warps), and a second sweep writes exp(x - max) / sum. Arithmetic in fp32 whatever the storage dtype.
#
# This file is not run on the GPU: `mojo run` executes main() on the CPU, which asks the compiler for the
# kernel's PTX (compile_info with a GPU target), one kernel per dtype, and prints them. No GPU is needed for that.

from max.gpu import WARP_SIZE, barrier, block_idx, lane_id, thread_idx
from max.gpu.host import get_gpu_target
from max.gpu.memory import AddressSpace
from max.gpu.primitives import warp
from std.compile import compile_info
from std.math import exp
from std.memory import stack_allocation
from std.sys import get_defined_int, get_defined_string
from std.utils.numerics import neg_inf

# Set by softmax_mojo.py with -D: the block size it launches with, and the GPU to compile for.
comptime THREADS = get_defined_int["SOFTMAX_THREADS", 256]()
comptime ARCH = get_defined_string["SOFTMAX_ARCH", "sm_90"]()
comptime WARPS = THREADS // WARP_SIZE


@always_inline
def merge(m_a: Float32, s_a: Float32, m_b: Float32, s_b: Float32) -> Tuple[Float32, Float32]:
    """Two online (max, sum) pairs as one. A side whose max is -inf has seen only -inf entries (masked ones,
    or none), whose exp is 0: it adds nothing, whatever its s (a single -inf entry comes as (-inf, 1))."""
    var m = max(m_a, m_b)
    # never exp(-inf - -inf), which is NaN
    var a = s_a * exp(m_a - m) if m_a > neg_inf[DType.float32]() else Float32(0.0)
    var b = s_b * exp(m_b - m) if m_b > neg_inf[DType.float32]() else Float32(0.0)
    return (m, a + b)


def softmax_rows[
    dtype: DType
](x: MutPointer[Scalar[dtype], MutAnyOrigin], y: MutPointer[Scalar[dtype], MutAnyOrigin], cols: Int):
    """One row per block: y[row, :] = softmax(x[row, :]), row = block_idx.x; x and y contiguous [rows, cols]."""
    var m_buf = stack_allocation[WARPS, Float32, address_space=AddressSpace.SHARED]()
    var s_buf = stack_allocation[WARPS, Float32, address_space=AddressSpace.SHARED]()
    var tid = thread_idx.x
    var first = block_idx.x * cols  # the row's first element
    # YOUR CODE HERE: the row's max and sum: each thread's online (m, s) over its columns, merged across the warp by shuffle_xor and across warps through m_buf/s_buf, then y[row, :] = exp(x - max) / sum


def print_ptx[dtype: DType]():
    print("// ===== kernel", dtype)
    print(compile_info[softmax_rows[dtype], emission_kind="asm", target=get_gpu_target[ARCH]()]())


def main():
    print_ptx[DType.float32]()
    print_ptx[DType.float16]()
    print_ptx[DType.bfloat16]()
