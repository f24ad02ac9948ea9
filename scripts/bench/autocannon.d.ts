// The part of autocannon's API the HTTP benchmarks use (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      /** In workers mode: the path of a CommonJS module exporting the function. */
      setupRequest?: string;
    }
    interface Options {
      url: string;
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      duration?: number;
      sampleInt?: number;
      workers?: number;
      timeout?: number;
      requests?: Request[];
    }
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      max: number;
    }
    interface Result {
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      statusCodeStats: Record<string, { count: number }>;
      latency: Histogram;
      requests: Histogram & { sent: number };
    }
  }
  function autocannon(options: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): unknown;
  export default autocannon;
}
