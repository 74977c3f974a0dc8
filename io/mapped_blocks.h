// MapBlocks: the mmap path of ReadBlocks (sluice/io/sequential_reader.h has the contract both paths share).
//
// Contract: ShouldMap says whether ReadBlocks maps `file` (mode kMmap, no O_DIRECT, a non-empty regular
// file whose first page the kernel agrees to map). MapBlocks then yields the file from options.start_offset
// (below the size: ReadBlocks checks) as windows of options.mmap_window bytes (page-rounded, the first
// mapped from the page holding the start and handed out from the start), each Block owning its mapping; window k+1 is mapped and
// prefaulted on the reactor's thread while the consumer holds window k. A window the kernel refuses to
// map (the first page was mapped by ShouldMap's probe; ENOMEM under an address-space limit, say) is not
// an error: from there the rest of the file is read into buffers of options.block_size bytes (logged at
// info level). Errors (a file that shrank, a failed read, cancellation) are the last element and name
// the path, the offset and the op.
// The reactor must outlive the generator; destroying it joins the one mapping task in flight, so it must
// not be destroyed on the reactor's thread (as for ReadBlocks).
#ifndef SLUICE_IO_MAPPED_BLOCKS_H_
#define SLUICE_IO_MAPPED_BLOCKS_H_

#include <string>

#include "absl/status/statusor.h"
#include "sluice/engine/async_generator.h"
#include "sluice/io/file.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/sequential_reader.h"

namespace sluice::io {

bool ShouldMap(const File& file, const SequentialReadOptions& options);

// `reactor` is not copied: it must outlive the generator.
AsyncGenerator<absl::StatusOr<Block>> MapBlocks(Reactor& reactor, File file, std::string path,
                                                SequentialReadOptions options);

}  // namespace sluice::io

#endif  // SLUICE_IO_MAPPED_BLOCKS_H_
