/** A command refused by a decider. `code` is stable; handlers map it to HTTP answers. */
export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export type DomainErrorCode =
  | 'not_found'
  | 'already_exists'
  | 'not_monitoring'
  | 'invalid_state'
  /** A per-organization limit (alerts, webhook endpoints) is reached. */
  | 'limit_reached'
  | 'insufficient_balance'
  | 'invalid_argument';
