#!/usr/bin/env node
/**
 * stackctl, the operator CLI. It talks to a running service over HTTP only and imports no server
 * code. Usage: `stackctl --help`.
 */
import { ApiClient } from './api.js';
import { parseInvocation, type CliEnv } from './args.js';
import { execute } from './commands/index.js';
import { CliError, EXIT_FAILURE } from './errors.js';
import { clean } from './output.js';
import { USAGE } from './usage.js';

/** Runs one command line; resolves to the exit status. */
async function run(argv: string[], env: CliEnv): Promise<number> {
  try {
    const invocation = parseInvocation(argv, env);
    if (invocation.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    await execute(new ApiClient(invocation.connection), invocation.command, invocation.json);
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      console.error(`stackctl: ${clean(err.message)}`);
      for (const line of err.details) console.error(clean(line));
      return err.exitCode;
    }
    console.error('stackctl: unexpected error:', err);
    return EXIT_FAILURE;
  }
}

// The one place stackctl reads the environment (the service's own rule, that only src/server/config reads
// process.env, is about server code; the CLI is a separate program).
const { STACKCTL_SERVER, STACKCTL_CLIENT_ID, STACKCTL_CLIENT_SECRET, STACKCTL_JOIN_TOKEN } = process.env;
// exitCode, not exit(): output written to a pipe is flushed before the process ends.
process.exitCode = await run(process.argv.slice(2), {
  STACKCTL_SERVER,
  STACKCTL_CLIENT_ID,
  STACKCTL_CLIENT_SECRET,
  STACKCTL_JOIN_TOKEN,
});
