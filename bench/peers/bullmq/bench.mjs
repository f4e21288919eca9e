// BullMQ's side of leat's peers benchmark: bench/peers (Go) runs it once per
// step and reads the one JSON line it prints.
//
//   node bench.mjs MODE REDIS_URL PREFIX N PAYLOAD_BYTES CONCURRENCY
//
// MODE is one of
//   enqueue  time N Queue.add calls from CONCURRENCY concurrent producers
//   fill     add N jobs with addBulk, in chunks of 1,000 (untimed set-up)
//   work     time a Worker at CONCURRENCY running N jobs added beforehand
//            with a no-op processor that returns a result, to the last one
//            completed
// Every job's data is JSON of PAYLOAD_BYTES bytes ({"note":"xxx..."}), and
// completed jobs are kept with their result for an hour, as asynq's and
// leat's are in the benchmark. It prints {"mode","n","ms","cpuUs"}: the
// elapsed time of the timed part and the CPU (user + system) this process
// spent in it; "fill" times its adds too.
import { Queue, Worker } from "bullmq";

const queueName = "bench";
const keep = { removeOnComplete: { age: 3600 } };

function connection(url) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    username: decodeURIComponent(u.username) || undefined,
    password: decodeURIComponent(u.password) || undefined,
    db: Number(u.pathname.slice(1) || 0),
    maxRetriesPerRequest: null, // required by Worker
  };
}

// data returns a job's data whose JSON is bytes long (11 at the least).
function data(bytes) {
  return { note: "x".repeat(Math.max(bytes - '{"note":""}'.length, 0)) };
}

async function enqueue(queue, n, payload, concurrency) {
  let next = 0;
  const producer = async () => {
    while (next < n) {
      next++;
      await queue.add("noop", data(payload), keep);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, producer));
}

async function fill(queue, n, payload) {
  for (let i = 0; i < n; i += 1000) {
    const size = Math.min(1000, n - i);
    await queue.addBulk(Array.from({ length: size }, () => ({ name: "noop", data: data(payload), opts: keep })));
  }
}

async function work(conn, prefix, n, concurrency) {
  let done = 0;
  let worker;
  const finished = new Promise((resolve, reject) => {
    worker = new Worker(queueName, async (job) => job.data.note.length, { connection: conn, prefix, concurrency });
    worker.on("completed", () => {
      if (++done === n) resolve();
    });
    worker.on("failed", (job, err) => reject(err));
    worker.on("error", reject);
  });
  try {
    await finished;
  } finally {
    await worker.close();
  }
}

async function main(argv) {
  if (argv.length !== 6) {
    throw new Error("usage: node bench.mjs enqueue|fill|work REDIS_URL PREFIX N PAYLOAD_BYTES CONCURRENCY");
  }
  const [mode, url, prefix] = argv;
  const [n, payload, concurrency] = argv.slice(3).map(Number);
  if (![n, payload, concurrency].every((v) => Number.isInteger(v) && v >= 1)) {
    throw new Error("N, PAYLOAD_BYTES and CONCURRENCY must be whole numbers from 1");
  }
  const conn = connection(url);
  const queue = new Queue(queueName, { connection: conn, prefix });
  await queue.waitUntilReady();
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    if (mode === "enqueue") await enqueue(queue, n, payload, concurrency);
    else if (mode === "fill") await fill(queue, n, payload);
    else if (mode === "work") await work(conn, prefix, n, concurrency);
    else throw new Error(`unknown mode ${JSON.stringify(mode)}`);
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    console.log(JSON.stringify({ mode, n, ms, cpuUs: cpu.user + cpu.system }));
  } finally {
    await queue.close();
  }
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`bullmq: ${err.message}`);
  process.exit(1);
});
