/* What librnnx exports. The library is built with hidden visibility and a version script
 * (cmake/librnnx.map), so its internals (the backends, the core, the reference) stay inside;
 * the public headers mark what they declare as exported: the C API function by function
 * (RNNX_API), the C++ API by wrapping its declarations in RNNX_EXPORT_BEGIN / _END.
 * ctest exported_symbols checks the result. Usable from C and C++. */
#ifndef RNNX_EXPORT_H
#define RNNX_EXPORT_H

#if defined(__GNUC__)
#define RNNX_API __attribute__((visibility("default")))
#define RNNX_EXPORT_BEGIN _Pragma("GCC visibility push(default)")
#define RNNX_EXPORT_END _Pragma("GCC visibility pop")
#else
#define RNNX_API
#define RNNX_EXPORT_BEGIN
#define RNNX_EXPORT_END
#endif

#endif /* RNNX_EXPORT_H */
