// sluice's dataset API in one include: Dataset<T> with every op (sources, transforms, parallel ops),
// Iterator<T>, Options, the element types pipelines are made of (Tensor, ParsedExample), and their names,
// codecs and registry (for elements that cross a process boundary).
// Each op's contract is in its own header under sluice/ops/.
//
//   #include "sluice/dataset.h"
//   sluice::Dataset<sluice::Tensor> ds = sluice::Range(10).Map([](int64_t x) { return x * x; }).Batch(4);  //
//   int64[4] for (auto batch : ds.MakeIterator()) { ... }
#ifndef SLUICE_DATASET_H_
#define SLUICE_DATASET_H_

#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_type_registry.h"

#endif  // SLUICE_DATASET_H_
