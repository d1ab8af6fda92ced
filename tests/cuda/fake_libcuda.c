/* A stand-in for the CUDA driver, libcuda.so.1, that reports one device to cuInit/cuDeviceGetCount
   and has nothing else: `quill` then loads its CUDA module, whose runtime finds no usable driver.
   tests/cuda/cuda_module_test.cpp puts it on LD_LIBRARY_PATH to run the module path without a GPU. */
int cuInit(unsigned flags) {
  (void)flags;
  return 0;
}

int cuDeviceGetCount(int* count) {
  *count = 1;
  return 0;
}
