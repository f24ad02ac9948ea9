import { startBenchServer, createDatabase } from './env.ts';
import { rawInsertRate } from './limits.ts';
import pg from 'pg';
const server = await startBenchServer();
const url = await createDatabase(server, 'raw');
const pool = new pg.Pool({ connectionString: url });
for (let i = 0; i < 3; i++) console.log(`raw insert: ${(await rawInsertRate(pool, 100000)).toFixed(0)} rows/s`);
await pool.end(); await server.stop();
