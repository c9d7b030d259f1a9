#pragma once

// Results files kept compressed (`run.json.xz`, `run.jsonl.gz`): told apart by their first bytes, never by
// their name, and decompressed in pieces that stop once the text passes the limit a plain results file has
// (a small file that inflates without end is refused, as a gzip snapshot is).

#include <cstdint>
#include <string>

namespace memstress {

// `data` as it was before compression where it is xz or gzip (by its magic bytes), else `data` itself. At
// most `max_bytes` of text: more throws InputError "decompresses to more than ...". A damaged stream throws
// InputError saying which format and what is wrong. Messages do not name the file (the caller does).
[[nodiscard]] std::string decompressed(std::string data, std::uint64_t max_bytes);

}  // namespace memstress
