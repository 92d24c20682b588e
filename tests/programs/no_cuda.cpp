// no_cuda: never touches CUDA; the shim must stay invisible.
#include <cstdio>

int main() {
    std::printf("hello\n");
    return 0;
}
