/** Exit status of a failed run: 1 for the service or the network, 2 for a command line error. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** An error stackctl reports as `stackctl: <message>` (plus detail lines) before exiting. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A command line the program cannot act on: exit 2, with a pointer to the usage text. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE, ["Run 'stackctl --help' for usage."]);
    this.name = 'UsageError';
  }
}
