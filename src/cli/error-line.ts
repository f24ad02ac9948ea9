// How the command-line tools report a failure that is no usage error: one line, not a stack.
export function errorLine(error: unknown): string {
  return `error: ${error instanceof Error ? error.message : String(error)}`;
}
