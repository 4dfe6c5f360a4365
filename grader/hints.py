"""What to look at next, by failure category. Generic on purpose: an exercise can add its own under `hints`
in course.yaml (same keys), which take precedence."""

HINTS = {
    "not_implemented": "Fill in the `YOUR CODE HERE` parts of the day's files: the kernel body and its launch.",
    "unwritten": "Some outputs were never written: does the grid cover every row (ceil-divide), and do your loops "
                 "reach the last column? Check the tail when the width is not a multiple of your step.",
    "mismatch": "Wrong values: compare the worst element with the reference by hand; check the max and the sum "
                "reductions (every element included once?) and the final division.",
    "nonfinite": "NaN or inf where the reference is finite: subtract the row maximum before exp (the large_logits "
                 "probe overflows exp otherwise), and handle -inf entries (exp(-inf) = 0).",
    "input_modified": "The op wrote into its input: keep intermediate values in registers, shared memory or `out`.",
    "nondeterministic": "The same input gave different bits on two calls: a race. Is there a __syncthreads() "
                        "between writing shared memory and reading what other threads wrote?",
    "crash": "The kernel crashed: an out-of-bounds access is most likely. Guard every index against rows/cols, "
             "and run it under `compute-sanitizer` to find the line.",
    "timeout": "The kernel never finished: look for a loop whose bound never changes, or a __syncthreads() that "
               "not every thread of the block reaches.",
    "error": "The op raised an error before or during the launch: read the message (a failed TORCH_CHECK or an "
             "invalid launch configuration, such as too many threads per block).",
    "build_error": "Fix the first compiler error first: later ones often follow from it.",
    "slow": "Correct but not fast enough: profile it (which resource is the bottleneck?) and compare with the "
            "lesson's measured table.",
}


def hint_for(category: str, exercise_hints: dict[str, str] | None = None) -> str | None:
    return (exercise_hints or {}).get(category) or HINTS.get(category)
