// Reading a file the user named (a config, a rank report, a baseline): a
// regular file only, and at most a cap the caller chooses. Each reader
// states its cap (Note [File size caps]): a file over it, a directory, a
// FIFO, a device (/dev/zero) or a socket is refused before anything is
// read, so no file can make memprof block or grow without bound.
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

// Note [File size caps]
// A parsed JSON document takes 8 to 25 times its text in memory, so a cap
// on the file is a cap on the reader's memory. Each cap is far above the
// largest file memprof writes of its kind:
// - config file, 1 MiB (kMaxConfigFileBytes, cli/config_cli.h): the
//   committed configs are under 2 KiB.
// - Hugging Face config.json, 1 MiB (kMaxHfConfigFileBytes,
//   cli/hf_config.h): the published ones are about 1 KiB.
// - rank report, 64 MiB (kMaxRankReportBytes, report/rank_report.h): a
//   long run keeps the detail of a few steps only (Note [Kept steps]) but
//   every step's peak and time, 236 bytes a step: mlp-tiny wrote 79,690
//   bytes in 200 steps and 503,786 in 2,000, so 20,000 steps write about
//   4.8 MB and the cap holds about 284,000 steps (a profile runs at most
//   100,000, models/config_validation.cc). --keep-steps all keeps
//   every step's detail, 3,822 bytes more a step (828,897 bytes in 200
//   steps): the cap would hold about 16,000 mlp-tiny steps, so a run keeps
//   the detail of at most 5,000 micro-batches (Note [Kept detail bound],
//   cli/config_cli.cc). Reading a 64 MiB report
//   of 284,000 steps peaks at 523 MiB (memprof report); the worst text,
//   64 MiB of empty objects, at 1.56 GiB.
// - baseline, 128 MiB (kMaxBaselineBytes, gate/baseline.h): about 1 KiB
//   a rank (reports/baselines: mlp-tiny-ws1.json 1,796 bytes, ws2 2,746,
//   ws2-zero1 2,823), so the 65,536 ranks a baseline may hold take about
//   67 MB.

// The whole of the regular file at `path`. Throws InputError
// "cannot read KIND 'PATH': REASON; REMEDY" (KIND, say "config file", may
// be empty) when it cannot be opened, is not a regular file, or holds more
// than `max_bytes` (also when it grows past them while being read).
std::string ReadRegularFile(const std::string& path, const std::string& kind,
                            int64_t max_bytes, const std::string& remedy);

}  // namespace memprof
