// SLUICE_EXPORT marks the declarations that make up the library's binary interface. The library is
// compiled with hidden visibility, so a shared libsluice.so exports these and nothing else (no
// internals, no inlined Abseil or standard-library code); in a static build the mark changes nothing.
// SLUICE_NO_EXPORT keeps a nested class of an exported class (a pimpl, a private awaiter defined in a .cc)
// inside the library: a nested class otherwise takes the visibility of the class around it.
#ifndef SLUICE_EXPORT_H_
#define SLUICE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define SLUICE_EXPORT __attribute__((visibility("default")))
#define SLUICE_NO_EXPORT __attribute__((visibility("hidden")))
#else
#define SLUICE_EXPORT
#define SLUICE_NO_EXPORT
#endif

#endif  // SLUICE_EXPORT_H_
