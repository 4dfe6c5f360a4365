"""`grader profile`: Nsight Compute on the student's kernels, ptxas resources and a roofline."""
