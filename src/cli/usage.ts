import { DEFAULT_SERVER } from './args.js';

/** What `stackctl --help` prints. */
export const USAGE = `Usage: stackctl [global options] <command> [options]

Commands:
  clients create --name NAME --scopes SCOPE[,SCOPE...] [--owner OWNER]
                                Create an OAuth client; prints its secret, shown only once
  clients list [--owner OWNER]  List the clients (of OWNER; yours by default)
  clients delete CLIENT_ID      Delete a client
  keys list                     List the token signing keys
  keys rotate                   Start signing with a new key; the old ones stay published
  join-tokens create [--ttl DURATION] [--pre-approved] [--label KEY=VALUE ...]
                                Create a join token for agents to enroll with; prints it, shown
                                only once. --ttl: its lifetime, e.g. 30m or 7d (the service's
                                JOIN_TOKEN_TTL by default). The workers it enrolls get its labels,
                                and need no approval with --pre-approved
  join-tokens list              List the join tokens, revoked and expired ones included
  join-tokens revoke ID         Revoke a join token; agents cannot enroll with it any more
                                (an ID starting with "-" goes after "--": revoke -- ID)
  workers list [--status STATE] List the workers (STATE: healthy, degraded, unhealthy,
                                unreachable or pending)
  workers approve WORKER_ID     Approve a pending worker; its agent then connects
  workers delete WORKER_ID      Delete a worker and revoke its certificates
  stacks validate --file PATH [READING]
                                Check a stack definition or Compose file without storing it: prints
                                "valid" and any warnings, or each error as
                                LINE:COLUMN PATH [CATEGORY] MESSAGE (exit 1)
  stacks create --file PATH [READING]
                                Create a stack from a definition or Compose file; it starts as a
                                draft
  stacks list                   List the stacks
  stacks get STACK_ID           Show a stack
  stacks update STACK_ID --file PATH [READING]
                                Store a new revision of the stack's definition (the name stays);
                                "stacks deploy" applies it
  stacks deploy STACK_ID [--wait]
                                Start a job that applies the stack's current revision; with
                                --wait, wait for it to end (exit 1 unless it succeeded)
  stacks delete STACK_ID [--wait] [--delete-volumes]
                                Start a job that removes the stack from its node, then the stack;
                                its volumes stay on the node unless --delete-volumes
  stacks export STACK_ID [--format compose|stack]
                                Print the current definition: as written, as a Compose file of
                                what runs (compose), or in our format (stack)
  stacks health STACK_ID        The health of the stack's services on its node
  stacks logs STACK_ID [--service NAME] [--since TIME] [--until TIME] [--limit N] [--follow]
                                What the stack's services wrote, one "TIME SERVICE STREAM LINE"
                                each: the newest N (default 100, at most 10000), oldest first.
                                TIME: RFC 3339 or a duration back from now (15m, 2h, 7d); --since
                                inclusive, --until exclusive. With --follow, then every new line
                                until Ctrl-C or the stack is deleted (--json: one object a line)
  jobs list [--status STATE] [--stack STACK_ID] [--type TYPE]
                                List the jobs, newest first (STATE: queued, dispatched, running,
                                cancelling, succeeded, failed or cancelled; TYPE: provision or
                                destroy)
  jobs get JOB_ID               Show a job and its services' results
  jobs logs JOB_ID [--follow]   Print a job's output; with --follow, until the job has ended
  jobs cancel JOB_ID            Cancel a job (a running one stops when its agent confirms)
  jobs cleanup JOB_ID           End an unfinished job as failed at once and revert its node to the
                                last good state
  drift get STACK_ID            The differences between the stack's definition and its node
  drift ignore STACK_ID RESOURCE [RESOURCE...]
                                Ignore drift of these services; no deploy touches them any more
  drift unignore STACK_ID RESOURCE [RESOURCE...]
                                Stop ignoring them
  drift resolve STACK_ID [--wait]
                                Start a job that brings the node back to the definition
  tunnel status                 The tunnel's state, public URL and agent endpoint
  tunnel start                  Start the tunnel (TUNNEL_PROVIDER); it reconnects by itself until
                                stopped, across restarts (exit 1 when it cannot start at all)
  tunnel stop                   Stop the tunnel
  tunnel registry-url           The URL agents and install commands use, and where it comes from
  tunnel topology               Whether agents can reach this instance directly: NAT, public
                                address, network, and the mode to use (direct or tunnel)
  tunnel subdomains             Your owner's base subdomains for published stack services
  tunnel services BASE_ID       The published services under one of your base subdomains
  tunnel validate-url URL [--no-save]
                                Check that URL is an acceptable public URL that reaches this
                                instance; if so it is stored as the custom URL (the registry URL
                                while no tunnel runs), unless --no-save. Exit 1 when it is not
                                valid or does not reach this instance
  tunnel install-command [--token-file FILE]
                                The commands that install an agent on a new node with a join
                                token: read from FILE ("-": standard input), else from
                                STACKCTL_JOIN_TOKEN; never from the command line
  debug bundle [-o FILE]        Download this replica's debug bundle (a tar.gz: its logs of the
                                last 24 hours, the configuration with secrets redacted, workers,
                                the newest jobs, metrics, system figures) to FILE, by default the
                                server's file name in the current directory; never overwrites
  mcp                           Serve the service's MCP tools, resources and prompts on standard
                                input and output, for desktop AI clients that start a local
                                program; the client secret comes from STACKCTL_CLIENT_SECRET only,
                                tokens are fetched and renewed as needed, diagnostics go to stderr

Global options:
  --server URL            Base URL of the service (env STACKCTL_SERVER, default ${DEFAULT_SERVER})
  --client-id ID          OAuth client id (env STACKCTL_CLIENT_ID)
  --client-secret SECRET  OAuth client secret (env STACKCTL_CLIENT_SECRET; prefer the environment:
                          other users of the machine can see command lines)
  --json                  Print the service's JSON instead of text
  -h, --help              Show this help

Options of the commands above:
  --file PATH             A stack definition or Compose file, at most 1 MiB
  READING (Compose files, docs/compose.md):
    --name NAME           The stack's name (else the file's name)
    --stackkit KIT        The stack kit (else x-stackkit, else the service's default)
    --variant VARIANT     The kit's variant (else x-variant, else default)
    --profiles A,B        The Compose profiles to run
    --var NAME=VALUE      A variable for interpolation (repeatable; prefer --env-file for secrets)
    --env-file FILE       Variables from a .env file, as docker compose reads it
    --format compose|stack  Read the file as this format
  --wait                  Wait for the job to end, then print it
  --follow                Keep printing new lines until the job has ended
  --token-file FILE       A file holding a join token and nothing else; "-" reads standard input
  --no-save               Only check the URL; keep the registry URL as it is
  -o, --output FILE       Where "debug bundle" writes the archive (a new file)

Environment: STACKCTL_JOIN_TOKEN holds the join token for "tunnel install-command" when no
--token-file is given.

Exit status: 0 done; 1 the service or the network failed, a definition file or URL is not valid,
a job waited for did not succeed, or the tunnel cannot start; 2 the command line is wrong.
`;
