"""What gpuleak reads of the fake JAX without importing it: the allocator names it accepts."""
ALLOCATORS = ("default", "platform", "bfc", "cuda_async", "address")
