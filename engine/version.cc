#include "sluice/version.h"

namespace sluice {

const char* SluiceVersion() { return SLUICE_VERSION_STRING; }

}  // namespace sluice
