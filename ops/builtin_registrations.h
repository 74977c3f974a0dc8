// Internal: the library's own op builders (the built-in element types, the sources, ParseExample),
// registered on first use by the graph builder.
#ifndef SLUICE_OPS_BUILTIN_REGISTRATIONS_H_
#define SLUICE_OPS_BUILTIN_REGISTRATIONS_H_

namespace sluice {

// Once per process; safe from any thread.
void EnsureBuiltinOpBuilders();

void RegisterBuiltinInt64Types();
void RegisterBuiltinRecordTypes();
void RegisterBuiltinTensorTypes();

}  // namespace sluice

#endif  // SLUICE_OPS_BUILTIN_REGISTRATIONS_H_
