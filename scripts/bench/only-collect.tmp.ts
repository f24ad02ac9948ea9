import { startBenchServer } from './env.ts';
import { collectBenchmark } from './collect.ts';
import { closeDataset } from './dataset.ts';
const server = await startBenchServer();
const figures = await collectBenchmark.run({ smoke: false, server, log: (m) => console.log(m) });
console.log(figures);
await closeDataset(); await server.stop();
