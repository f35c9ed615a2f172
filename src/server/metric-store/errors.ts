/**
 * Bad metric input (a remote write body, an imported text, a label set): the message says what is
 * wrong and where; `status` is what the route answers (400 malformed, 413 over a size limit).
 */
export class MetricInputError extends Error {
  override name = 'MetricInputError';

  constructor(
    message: string,
    readonly status: 400 | 413 = 400,
  ) {
    super(message);
  }
}
