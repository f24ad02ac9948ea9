// The part of autocannon's API the HTTP benchmarks use (the package ships no types): the
// options sent to the client thread (load-generator.cjs) and what it reports back.
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      connections?: number;
      duration?: number;
      sampleInt?: number;
      timeout?: number;
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
      statusCodeStats: Record<string, { count: number }>;
      latency: Histogram;
    }
  }
  function autocannon(options: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): unknown;
  export default autocannon;
}
