// Throughput of `diagnose` over a large synthetic job log (MB/s, bytes processed): the line
// stream and every per-source reader on each line, then the rules. The log mixes NCCL INFO
// set-up lines, training progress, Python warnings and a fault near the end, in the proportions
// of a long multi-node run's stdout.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "diag/diagnose.h"

namespace {

const char* kLines[] = {
    "gpu017:1379562:1379600 [3] NCCL INFO Channel 05/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA",
    "gpu017:1379562:1379600 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/IPC/read",
    "{'loss': 1.8342, 'grad_norm': 0.4721, 'learning_rate': 2.9e-05, 'epoch': 0.41}",
    " 41%|████      | 2050/5000 [1:02:11<1:29:28,  1.82s/it]",
    "/opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py:61: UserWarning: None of "
    "the inputs have requires_grad=True. Gradients will be None",
    "[2024-05-01 12:00:01,220] [INFO] [logging.py:96:log_dist] [Rank 0] step=2050, skipped=0, "
    "lr=[2.9e-05], mom=[(0.9, 0.95)]",
    "gpu017:1379562:1379562 [0] NCCL INFO comm 0x55cc8aa86c70 rank 0 nranks 16 cudaDev 0 busId "
    "1c000 - Init COMPLETE",
    "Epoch 3: 100%|##########| 781/781 [05:12<00:00, 2.50it/s, v_num=0, train_loss=0.231]",
};

std::string MakeLog(size_t bytes) {
  std::string log;
  log.reserve(bytes + 256);
  size_t i = 0;
  while (log.size() < bytes) {
    log += kLines[i++ % (sizeof(kLines) / sizeof(kLines[0]))];
    log += '\n';
  }
  log +=
      "[rank3]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 3] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=48490, OpType=ALLREDUCE, Timeout(ms)=1800000)\n";
  return log;
}

void BM_DiagnoseFile(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  const std::string path =
      (std::filesystem::temp_directory_path() / "toposched-diagnose-bench.log").string();
  const std::string log = MakeLog(bytes);
  std::ofstream(path, std::ios::binary) << log;
  for (auto _ : state) {
    auto d = toposched::diag::DiagnoseFiles({path}, nullptr);
    if (!d.ok() || d->causes.empty()) state.SkipWithError("diagnosis failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(log.size()));
  std::filesystem::remove(path);
}
BENCHMARK(BM_DiagnoseFile)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DiagnoseText(benchmark::State& state) {
  const std::string log = MakeLog(static_cast<size_t>(state.range(0)) << 20);
  for (auto _ : state) {
    auto d = toposched::diag::DiagnoseText(log, "mem.log", nullptr);
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(log.size()));
}
BENCHMARK(BM_DiagnoseText)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
