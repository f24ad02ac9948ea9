// Every platform answer passes the domain's rules for what may be stored before anything else
// sees it, whichever collector (or fake, or simulator) gave it: text is cleaned, and an answer
// with a count that is not one is malformed (`invalid`: the spec's 500 at track time, a retried
// slot while tracking), so one odd datum never reaches a multi-stream append.
import { cleanAnswerTexts, cleanText, metricsProblem } from '../domain/storable.ts';
import type { Collector, FetchResult } from './collector.ts';

/** Platform error texts are quoted into messages; a longer one is cut. */
const MAX_MESSAGE_LENGTH = 2_000;

export function checkedResult(result: FetchResult, collectorName: string): FetchResult {
  if (result.status !== 'ok') return { ...result, message: cleanText(result.message, MAX_MESSAGE_LENGTH) };
  const problem = metricsProblem(result.metrics);
  if (problem) return { status: 'invalid', message: `${collectorName} answered a count that cannot be stored: ${problem}` };
  return cleanAnswerTexts(result);
}

export function checkedCollector(collector: Collector): Collector {
  return {
    name: collector.name,
    async collect(refs) {
      const results = await collector.collect(refs);
      return results.map((result) => checkedResult(result, collector.name));
    },
  };
}
