// A JSON value as a Python pickle (protocol 2), for readers that take
// pickle only: memory viewers older than JSON snapshot support fail on a
// JSON file ("UNKNOWN OPCODE: 123", the '{'), while pickle.load gives the
// same dict as json.load of the JSON text (profile --snapshot-format).
//
// Note [Pickle writer]
// Protocol 2, which every Python 3 reads: PROTO 2; objects as EMPTY_DICT
// + MARK + key/value pairs + SETITEMS, arrays as EMPTY_LIST + MARK + items
// + APPENDS (an empty container is just EMPTY_DICT / EMPTY_LIST); strings
// as BINUNICODE (UTF-8, 4-byte length); integers as BININT (signed 32-bit)
// or LONG1 (little-endian two's complement, as few bytes as hold the sign);
// floats as BINFLOAT (8-byte big-endian IEEE); true / false as NEWTRUE /
// NEWFALSE; null as NONE; then STOP. No memo: every object is written once,
// so nothing refers back. Object keys keep the JSON's order.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace memprof {

// Throws std::invalid_argument for a JSON value pickle cannot hold (binary).
std::string PickleOf(const nlohmann::ordered_json& value);
// The opcodes of `value` alone (no PROTO, no STOP), appended to `out`: a
// piece of a pickle written in parts (DocumentWriter).
void AppendPickled(std::string& out, const nlohmann::ordered_json& value);

}  // namespace memprof
