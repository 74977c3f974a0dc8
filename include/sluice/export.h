// SLUICE_EXPORT marks the declarations that make up the library's binary interface. The library is
// compiled with hidden visibility, so a shared libsluice.so exports these and nothing else (no
// internals, no inlined Abseil or standard-library code); in a static build the mark changes nothing.
#ifndef SLUICE_EXPORT_H_
#define SLUICE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define SLUICE_EXPORT __attribute__((visibility("default")))
#else
#define SLUICE_EXPORT
#endif

#endif  // SLUICE_EXPORT_H_
