// ApproxElementBytes(x): about how many bytes an element holds, for the tuner's RAM budget.
//
// Contract: Tensors count their buffer, strings their characters, ParsedExamples their tensors, vectors, pairs,
// tuples, optionals and StatusOrs the sum of their parts plus their own size; any other type its
// sizeof. An estimate: shared buffers (views, ParsedExample tensors) are counted as if owned, so the
// budget errs on the safe side. Specialise ElementBytes<T> for other types that own memory.
#ifndef SLUICE_OPS_ELEMENT_BYTES_H_
#define SLUICE_OPS_ELEMENT_BYTES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace sluice {

template <class T>
struct ElementBytes {
  static int64_t Of(const T&) { return static_cast<int64_t>(sizeof(T)); }
};

template <class T>
int64_t ApproxElementBytes(const T& x) {
  return ElementBytes<T>::Of(x);
}

template <>
struct ElementBytes<Tensor> {
  static int64_t Of(const Tensor& t) { return static_cast<int64_t>(sizeof(Tensor) + t.num_bytes()); }
};

template <>
struct ElementBytes<std::string> {
  static int64_t Of(const std::string& s) { return static_cast<int64_t>(sizeof(std::string) + s.size()); }
};

template <class U>
struct ElementBytes<std::vector<U>> {
  static int64_t Of(const std::vector<U>& v) {
    int64_t total = sizeof(std::vector<U>);
    for (const U& u : v) total += ApproxElementBytes(u);
    return total;
  }
};

template <class A, class B>
struct ElementBytes<std::pair<A, B>> {
  static int64_t Of(const std::pair<A, B>& p) { return ApproxElementBytes(p.first) + ApproxElementBytes(p.second); }
};

template <class... Ts>
struct ElementBytes<std::tuple<Ts...>> {
  static int64_t Of(const std::tuple<Ts...>& t) {
    return std::apply([](const auto&... parts) { return (int64_t{0} + ... + ApproxElementBytes(parts)); }, t);
  }
};

template <class U>
struct ElementBytes<std::optional<U>> {
  static int64_t Of(const std::optional<U>& o) {
    return o.has_value() ? ApproxElementBytes(*o) : static_cast<int64_t>(sizeof(o));
  }
};

template <class U>
struct ElementBytes<absl::StatusOr<U>> {
  static int64_t Of(const absl::StatusOr<U>& s) {
    return s.ok() ? ApproxElementBytes(*s) : static_cast<int64_t>(sizeof(s));
  }
};

template <>
struct ElementBytes<VarLenValues> {
  static int64_t Of(const VarLenValues& v) {
    return ApproxElementBytes(v.values) + ApproxElementBytes(v.row_lengths);
  }
};

template <>
struct ElementBytes<ParsedExample> {
  static int64_t Of(const ParsedExample& e) { return ApproxElementBytes(e.fixed) + ApproxElementBytes(e.var); }
};

}  // namespace sluice

#endif  // SLUICE_OPS_ELEMENT_BYTES_H_
