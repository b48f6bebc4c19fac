// SPDX-License-Identifier: Apache-2.0
// What DwarfTypes answered for one debug file (member offsets, sizes, which types exist), kept on
// disk by the file's build-id so a later run answers from a few hundred bytes instead of
// decompressing and indexing megabytes of DWARF. Under $XDG_CACHE_HOME/pytstates/dwarf (else
// ~/.cache/...); off with PYTSTATES_NO_CACHE=1 or disableTypeCache() (the CLI's --no-cache).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pytstates {

using TypeAnswers = std::map<std::string, std::string>;  // question -> answer ("-" for none)

void disableTypeCache();
bool typeCacheEnabled();

// The answers stored for this build-id, when an entry exists and was written for a file of that
// build-id and size; nullopt otherwise (an entry that does not match is ignored).
std::optional<TypeAnswers> loadTypeAnswers(const std::string& buildId, uint64_t fileSize);
// Replaces the entry (written whole to a temporary name, then renamed). Failures are silent: the
// cache only saves time.
void storeTypeAnswers(const std::string& buildId, uint64_t fileSize, const TypeAnswers& answers);

// The same store for other answers about a file: `kind` names their directory and format
// ("dwarf" above, "symbols"); `identity` is what the entry must have been written for (the
// file's size, ...), checked whole.
std::optional<TypeAnswers> loadAnswers(const std::string& kind, const std::string& buildId, const std::string& identity);
void storeAnswers(const std::string& kind, const std::string& buildId, const std::string& identity, const TypeAnswers& answers);

}  // namespace pytstates
