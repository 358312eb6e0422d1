#include <cstdio>
#include "rnnx/rnnx.hpp"
int main() { std::printf("rnnx %s\n", rnnx::build_info().version); }
