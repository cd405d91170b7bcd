// Preloaded into a service process by figure "hostile" (`--import`, through NODE_OPTIONS): the
// longest event-loop delay (perf_hooks' histogram) and the peak heap since the last reset, served
// as JSON on BENCH_LOOP_MONITOR_PORT. GET /reset collects garbage first, so each reading starts from the
// live heap. Its own socket shares the loop it measures: read it after the request being measured.

import { createServer } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { isMainThread } from "node:worker_threads";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
let base = process.memoryUsage();
let heapPeak = 0;
let buffersPeak = 0;
// The ArrayBuffers this thread's heap holds (arrayBuffers counts those it allocated, also once
// moved to a worker): what its collector has to deal with.
let externalBase = 0;
let externalPeak = 0;
const sample = () => {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  heapPeak = Math.max(heapPeak, heapUsed);
  buffersPeak = Math.max(buffersPeak, arrayBuffers);
  externalPeak = Math.max(externalPeak, getHeapStatistics().external_memory);
};
setInterval(sample, 10).unref();

// The longest stretch of this thread's own CPU time between two turns of a 2 ms timer: what the
// loop's work held it for, without the time the system gave other processes meanwhile (on a
// loaded machine the delay above is mostly that).
let cpuAt = process.threadCpuUsage();
let cpuMaxMs = 0;
setInterval(() => {
  const now = process.threadCpuUsage();
  cpuMaxMs = Math.max(cpuMaxMs, (now.user - cpuAt.user + now.system - cpuAt.system) / 1000);
  cpuAt = now;
}, 2).unref();

const reset = () => {
  base = process.memoryUsage();
  heapPeak = base.heapUsed;
  buffersPeak = base.arrayBuffers;
  externalBase = getHeapStatistics().external_memory;
  externalPeak = externalBase;
  cpuAt = process.threadCpuUsage();
  cpuMaxMs = 0;
  delay.reset();
};

// Preloads run in worker threads too: the main thread's loop is the one measured.
if (isMainThread) serve();

function serve() {
  const server = createServer((request, response) => {
    sample();
    if (request.url === "/reset") {
      gc();
      // The collection blocked the loop too: the histogram starts after the timers it delayed.
      setTimeout(() => {
        reset();
        response.end("{}");
      }, 50);
      return;
    }
    response.setHeader("content-type", "application/json");
    response.end(
      JSON.stringify({
        maxDelayMs: delay.max / 1e6,
        heapBaseMb: base.heapUsed / 2 ** 20,
        heapPeakAddedMb: (heapPeak - base.heapUsed) / 2 ** 20,
        buffersPeakAddedMb: (buffersPeak - base.arrayBuffers) / 2 ** 20,
        externalPeakAddedMb: (externalPeak - externalBase) / 2 ** 20,
        maxCpuStretchMs: cpuMaxMs,
      }),
    );
  });
  // Kept open however long a measured request takes: a reused socket closed meanwhile fails.
  server.keepAliveTimeout = 0;
  server.listen(Number(process.env.BENCH_LOOP_MONITOR_PORT), "127.0.0.1").unref();
}
