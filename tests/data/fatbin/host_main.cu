// A host program around kernels.cu: nvcc embeds its fatbin in the executable's .nv_fatbin section.
#include "kernels.cu"

int main() { return 0; }
