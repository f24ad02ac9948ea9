// How the command-line tools reach the service's database: DATABASE_URL, or the embedded
// server of the data folder (the one `npm start` runs; started here if it is not running).
import type pg from 'pg';
import { loadConfig, type Config } from '../config.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { allMigrations } from '../db/schema.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ensureReadModels } from '../../projections/runner.ts';

export interface Connection {
  /** The settings read from the environment (EVENT_STORE etc., for createEventStore). */
  config: Config;
  url: string;
  pool: pg.Pool;
  close(): Promise<void>;
}

export async function connect(applicationName: string): Promise<Connection> {
  const config = loadConfig(process.env, []);
  let embedded: EmbeddedPostgres | null = null;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir });
    url = embedded.url;
  }
  const pool = createPool(url, { max: 4, applicationName });
  await migrate(pool, allMigrations);
  await ensureReadModels(pool, READ_SCHEMA, projections);
  return {
    config,
    url,
    pool,
    async close() {
      await pool.end();
      // Stops the server only if this process started it (not the one `npm start` runs).
      if (embedded?.owned) await embedded.stop();
    },
  };
}
