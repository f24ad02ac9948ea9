// The scheduler holding every video of the data set (1,000,000 in a full run): the real
// scheduler role (`src/main.ts scheduler`, Bree and all) in a process of its own, as it runs in
// production, on a clock at wall speed started just before every video's next slot falls due
// at the same instant (the worst case). Measured: its peak resident memory, and how late the
// last of those slots is collected (the projection here catches up beside it).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HOUR_MS } from '../../src/clock.ts';
import { anySlotDue, dueSlotCount } from '../../src/collect/next-work.ts';
import { settledDataset } from './dataset.ts';
import type { Benchmark } from './types.ts';

const root = path.resolve(import.meta.dirname, '../..');

/** Peak resident set of a process, from Linux's /proc (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

export const schedulerBenchmark: Benchmark = {
  name: 'scheduler',
  async run(context) {
    const { service, videos } = await settledDataset(context);
    // The next hour boundary after what the other benchmarks collected.
    const due = Math.ceil((service.clock.now().getTime() + 1) / HOUR_MS) * HOUR_MS;
    const lead = 3_000;
    // --smoke speeds the clock up so that Bree's 10 s collection interval passes quickly.
    const timeScale = context.smoke ? 20 : 1;
    // The scheduler process reads its clock from the database, as every role does.
    const wallStart = Date.now();
    await service.pool.query(
      `INSERT INTO public.service_clock (id, scale, origin_wall, origin_service) VALUES (1, $1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET scale = excluded.scale, origin_wall = excluded.origin_wall, origin_service = excluded.origin_service`,
      [timeScale, new Date(wallStart), new Date(due - lead)],
    );
    const dueWall = wallStart + lead / timeScale;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'scheduler'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: service.url, TIME_SCALE: String(timeScale), COLLECTOR_FALLBACK: 'simulator', METRICS_PORT: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let remaining = videos;
    let doneAt = 0;
    const deadline = Date.now() + 600_000;
    let peak = 0;
    try {
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        peak = Math.max(peak, peakRssMb(child.pid!));
        if (Date.now() < dueWall) continue;
        // Whether any is left, not how many: asked every 100 ms, a count of up to a million due
        // rows took most of a core from the processes measured (14,000 slots/s collected with
        // it, against 19,000 in one process without it).
        if (!(await anySlotDue(service.pool, new Date(due)))) {
          remaining = 0;
          doneAt = Date.now();
          break;
        }
      }
      if (remaining !== 0) remaining = await dueSlotCount(service.pool, new Date(due));
      peak = Math.max(peak, peakRssMb(child.pid!));
    } finally {
      child.kill('SIGTERM');
      // The service stops within 10 s by contract; one that does not is killed, never left running.
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    }
    service.clock.set(new Date(due - lead + (Date.now() - wallStart) * timeScale));
    const lateSeconds = ((doneAt || Date.now()) - dueWall) / 1000;
    context.log(`${(videos - remaining).toLocaleString('en-US')} of ${videos.toLocaleString('en-US')} slots collected and projected; the last ${lateSeconds.toFixed(1)} s after they fell due; scheduler process peak RSS ${peak.toFixed(0)} MB`);
    return [
      {
        figure: `scheduler process holding ${videos.toLocaleString('en-US')} videos: peak RSS`,
        value: peak,
        unit: 'MB',
        limit: null,
        limitLabel: '',
        target: '< 512 MB',
        met: context.smoke ? null : peak < 512,
      },
      {
        figure: `scheduler: latest slot, all ${videos.toLocaleString('en-US')} due at once`,
        value: lateSeconds,
        unit: 's late',
        limit: null,
        limitLabel: '',
        target: '<= 60 s',
        met: context.smoke ? null : remaining === 0 && lateSeconds <= 60,
        notes: remaining === 0 ? 'collected and projected' : `${remaining} not collected`,
      },
    ];
  },
};
