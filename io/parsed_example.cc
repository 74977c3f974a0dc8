// ParsedExample's lookup by feature name (sluice/io/example.h).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/io/example.h"

namespace sluice {
namespace {

// Index of `key` in `keys`, or -1.
int IndexOf(const std::vector<std::string>& keys, std::string_view key) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return static_cast<int>(i);
  }
  return -1;
}

[[noreturn]] void NoSuchFeature(const char* kind, std::string_view key, const FeatureNames* names) {
  // A crash path: straight to stderr, as Tensor::data<T>() on the wrong type.
  const std::string known = names == nullptr
                                ? std::string("(no names: the example was not parsed)")
                                : absl::StrCat("fixed: [", absl::StrJoin(names->fixed, ", "), "], var-len: [",
                                               absl::StrJoin(names->var, ", "), "]");
  std::fprintf(stderr, "sluice::ParsedExample: no %s feature '%.*s'; its features are %s\n", kind,
               static_cast<int>(key.size()), key.data(), known.c_str());
  std::abort();
}

}  // namespace

const Tensor* ParsedExample::FindFixed(std::string_view key) const {
  if (names == nullptr) return nullptr;
  const int i = IndexOf(names->fixed, key);
  return i >= 0 && static_cast<size_t>(i) < fixed.size() ? &fixed[static_cast<size_t>(i)] : nullptr;
}

Tensor* ParsedExample::FindFixed(std::string_view key) {
  return const_cast<Tensor*>(static_cast<const ParsedExample&>(*this).FindFixed(key));
}

const VarLenValues* ParsedExample::FindVar(std::string_view key) const {
  if (names == nullptr) return nullptr;
  const int i = IndexOf(names->var, key);
  return i >= 0 && static_cast<size_t>(i) < var.size() ? &var[static_cast<size_t>(i)] : nullptr;
}

const Tensor& ParsedExample::operator[](std::string_view key) const {
  const Tensor* t = FindFixed(key);
  if (t == nullptr) NoSuchFeature("fixed", key, names.get());
  return *t;
}

const VarLenValues& ParsedExample::var_len(std::string_view key) const {
  const VarLenValues* v = FindVar(key);
  if (v == nullptr) NoSuchFeature("var-len", key, names.get());
  return *v;
}

std::shared_ptr<const FeatureNames> FeatureNamesOf(const ParseSpec& spec) {
  auto names = std::make_shared<FeatureNames>();
  for (const FixedLenFeature& f : spec.fixed) names->fixed.push_back(f.key);
  for (const VarLenFeature& v : spec.var) names->var.push_back(v.key);
  return names;
}

std::shared_ptr<const FeatureNames> FeatureNamesOf(const SequenceParseSpec& spec) {
  auto names = std::make_shared<FeatureNames>();
  for (const FixedLenSequenceFeature& f : spec.fixed) names->fixed.push_back(f.key);
  for (const VarLenFeature& v : spec.var) names->var.push_back(v.key);
  return names;
}

}  // namespace sluice
