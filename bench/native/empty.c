/* Empty function: the ctypes call overhead, for comparison with the empty-kernel launch. */
void empty_kernel(void) {}
