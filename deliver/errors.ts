/** Thrown to BullMQ when a send should be retried; carries the delay already written to the ledger. */
export class RetryableDeliveryError extends Error {
  constructor(
    message: string,
    readonly retryDelayMs: number,
  ) {
    super(message);
    this.name = 'RetryableDeliveryError';
  }
}
